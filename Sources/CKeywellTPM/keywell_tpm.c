/*
 * The TPM side of the login unlock (docs/login-unlock.md, "In the TPM"). One connection per
 * call: load the TCTI, create the storage primary key, start a salted session, seal or unseal,
 * flush everything, close. Nothing is left in the TPM between calls. An object bound to the boot
 * state ("Binding to the boot state" there) is unsealed through a policy session instead.
 */
#define _GNU_SOURCE
#include "keywell_tpm.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

struct connection {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    ESYS_TR primary;
    ESYS_TR session;
};

static void say(char *error, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(error, KW_TPM_MAX_ERROR, format, args);
    va_end(args);
}

/* A TPM response code that means "not this object, not this value", as opposed to a broken TPM. */
static enum kw_tpm_result refusal_or_failure(TSS2_RC rc)
{
    TSS2_RC layer = rc & TSS2_RC_LAYER_MASK;
    if (layer == TSS2_TPM_RC_LAYER || layer == TSS2_RESMGR_TPM_RC_LAYER)
        return KW_TPM_REFUSED;
    return KW_TPM_FAILED;
}

/*
 * The storage primary key of the owner hierarchy, from the common ECC P-256 storage template:
 * the same template gives the same key for as long as the TPM keeps its owner seed (a TPM
 * clear changes it, and with it every object sealed under it).
 */
static TPM2B_PUBLIC primary_template(void)
{
    TPM2B_PUBLIC t;
    memset(&t, 0, sizeof t);
    t.publicArea.type = TPM2_ALG_ECC;
    t.publicArea.nameAlg = TPM2_ALG_SHA256;
    t.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
                                    TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH |
                                    TPMA_OBJECT_NODA | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT;
    TPMS_ECC_PARMS *ecc = &t.publicArea.parameters.eccDetail;
    ecc->symmetric.algorithm = TPM2_ALG_AES;
    ecc->symmetric.keyBits.aes = 128;
    ecc->symmetric.mode.aes = TPM2_ALG_CFB;
    ecc->scheme.scheme = TPM2_ALG_NULL;
    ecc->curveID = TPM2_ECC_NIST_P256;
    ecc->kdf.scheme = TPM2_ALG_NULL;
    t.publicArea.unique.ecc.x.size = 32;
    t.publicArea.unique.ecc.y.size = 32;
    return t;
}

/*
 * A sealed data object: no sign or decrypt use, loadable only under this parent in this TPM.
 * With a policy (boot-state binding) `userWithAuth` is clear, so that the authorization value
 * alone no longer unseals it: only a session that satisfied the policy does.
 */
static TPM2B_PUBLIC sealed_template(const TPM2B_DIGEST *policy)
{
    TPM2B_PUBLIC t;
    memset(&t, 0, sizeof t);
    t.publicArea.type = TPM2_ALG_KEYEDHASH;
    t.publicArea.nameAlg = TPM2_ALG_SHA256;
    /* noDA: the authorization value is 32 random bytes, not a guessable password, so a failed
     * try need not count towards the TPM's dictionary-attack lockout (which would also lock out
     * every other user of the TPM). */
    t.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
                                    TPMA_OBJECT_NODA;
    if (policy == NULL)
        t.publicArea.objectAttributes |= TPMA_OBJECT_USERWITHAUTH;
    else
        t.publicArea.authPolicy = *policy;
    t.publicArea.parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL;
    return t;
}

int kw_tpm_pcr_mask_valid(uint32_t pcr_mask)
{
    return (pcr_mask >> KW_TPM_PCR_COUNT) == 0 && __builtin_popcount(pcr_mask) <= KW_TPM_MAX_PCRS;
}

/* The SHA-256 bank's PCRs in `mask`, as TPM2_PCR_Read and TPM2_PolicyPCR take them. */
static TPML_PCR_SELECTION pcr_selection(uint32_t mask)
{
    TPML_PCR_SELECTION s;
    memset(&s, 0, sizeof s);
    s.count = 1;
    s.pcrSelections[0].hash = TPM2_ALG_SHA256;
    s.pcrSelections[0].sizeofSelect = KW_TPM_PCR_COUNT / 8;
    for (int i = 0; i < KW_TPM_PCR_COUNT / 8; i++)
        s.pcrSelections[0].pcrSelect[i] = (BYTE)(mask >> (8 * i));
    return s;
}

/*
 * The digest TPM2_PolicyPCR compares with: SHA-256 over the selected PCRs' current values in
 * index order (hashed by the TPM, so this file needs no hash of its own).
 */
static enum kw_tpm_result pcr_digest(ESYS_CONTEXT *esys, uint32_t mask, TPM2B_DIGEST *digest,
                                     char *error)
{
    TPML_PCR_SELECTION in = pcr_selection(mask);
    UINT32 counter = 0;
    TPML_PCR_SELECTION *out = NULL;
    TPML_DIGEST *values = NULL;
    TSS2_RC rc = Esys_PCR_Read(esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &in, &counter, &out,
                               &values);
    enum kw_tpm_result result = KW_TPM_OK;
    TPM2B_MAX_BUFFER all;
    memset(&all, 0, sizeof all);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, "cannot read the TPM's PCRs: %s", Tss2_RC_Decode(rc));
        result = refusal_or_failure(rc);
    } else if (out->count != 1 || out->pcrSelections[0].hash != TPM2_ALG_SHA256 ||
               values->count != (UINT32)__builtin_popcount(mask) ||
               memcmp(out->pcrSelections[0].pcrSelect, in.pcrSelections[0].pcrSelect,
                      KW_TPM_PCR_COUNT / 8) != 0) {
        say(error, "the TPM has no SHA-256 value for every PCR asked for");
        result = KW_TPM_FAILED;
    } else {
        for (UINT32 i = 0; i < values->count; i++) {
            if (values->digests[i].size != 32 || all.size + 32 > sizeof all.buffer) {
                say(error, "the TPM gave a PCR value of the wrong size");
                result = KW_TPM_FAILED;
                break;
            }
            memcpy(all.buffer + all.size, values->digests[i].buffer, 32);
            all.size += 32;
        }
    }
    if (result == KW_TPM_OK) {
        TPM2B_DIGEST *hash = NULL;
        TPMT_TK_HASHCHECK *ticket = NULL;
        rc = Esys_Hash(esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &all, TPM2_ALG_SHA256,
                       ESYS_TR_RH_NULL, &hash, &ticket);
        if (rc != TSS2_RC_SUCCESS) {
            say(error, "cannot hash the PCR values: %s", Tss2_RC_Decode(rc));
            result = KW_TPM_FAILED;
        } else if (hash->size != KW_TPM_MAX_SECRET) {
            say(error, "the TPM gave a PCR digest of the wrong size");
            result = KW_TPM_FAILED;
        } else {
            *digest = *hash;
        }
        Esys_Free(hash);
        Esys_Free(ticket);
    }
    Esys_Free(out);
    Esys_Free(values);
    return result;
}

/* True for TPM_RC_VALUE, whatever parameter it names: what TPM2_PolicyPCR answers when the
 * PCRs' digest is not the one given. */
static int is_value_error(TSS2_RC rc)
{
    TSS2_RC layer = rc & TSS2_RC_LAYER_MASK;
    TSS2_RC code = rc & ~TSS2_RC_LAYER_MASK;
    return (layer == TSS2_TPM_RC_LAYER || layer == TSS2_RESMGR_TPM_RC_LAYER) &&
           (code & TPM2_RC_FMT1) != 0 && (code & 0x3f) == (TPM2_RC_VALUE & 0x3f);
}

/*
 * The boot-state policy, in a trial session (to compute its digest) or a real one (to satisfy
 * it): the PCRs must hold the values `digest` was made from, and the caller must prove the
 * authorization value in the command's HMAC (PolicyAuthValue, not PolicyPassword, so that the
 * value is never sent). Both must hold.
 */
static enum kw_tpm_result apply_policy(ESYS_CONTEXT *esys, ESYS_TR session, uint32_t mask,
                                       const TPM2B_DIGEST *digest, char *error)
{
    TPML_PCR_SELECTION pcrs = pcr_selection(mask);
    TSS2_RC rc = Esys_PolicyPCR(esys, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, digest,
                                &pcrs);
    if (rc != TSS2_RC_SUCCESS) {
        if (is_value_error(rc)) {
            say(error, "the boot state changed: a bound PCR no longer holds its value at enrolment");
            return KW_TPM_BOOT_STATE_CHANGED;
        }
        say(error, "the TPM refuses the PCR policy: %s", Tss2_RC_Decode(rc));
        return refusal_or_failure(rc);
    }
    rc = Esys_PolicyAuthValue(esys, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, "the TPM refuses the authorization policy: %s", Tss2_RC_Decode(rc));
        return refusal_or_failure(rc);
    }
    return KW_TPM_OK;
}

/* The policy digest of a binding to the PCRs in `mask` holding the values behind `digest`. */
static enum kw_tpm_result policy_digest(ESYS_CONTEXT *esys, uint32_t mask,
                                        const TPM2B_DIGEST *digest, TPM2B_DIGEST *policy,
                                        char *error)
{
    TPMT_SYM_DEF none;
    memset(&none, 0, sizeof none);
    none.algorithm = TPM2_ALG_NULL;
    ESYS_TR trial = ESYS_TR_NONE;
    TSS2_RC rc = Esys_StartAuthSession(esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                       ESYS_TR_NONE, NULL, TPM2_SE_TRIAL, &none, TPM2_ALG_SHA256,
                                       &trial);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, "cannot start a TPM trial session: %s", Tss2_RC_Decode(rc));
        return KW_TPM_FAILED;
    }
    enum kw_tpm_result result = apply_policy(esys, trial, mask, digest, error);
    if (result == KW_TPM_OK) {
        TPM2B_DIGEST *out = NULL;
        rc = Esys_PolicyGetDigest(esys, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &out);
        if (rc != TSS2_RC_SUCCESS) {
            say(error, "cannot compute the PCR policy: %s", Tss2_RC_Decode(rc));
            result = KW_TPM_FAILED;
        } else {
            *policy = *out;
        }
        Esys_Free(out);
    }
    (void)Esys_FlushContext(esys, trial);
    return result;
}

static void disconnect(struct connection *c)
{
    if (c->esys != NULL) {
        if (c->session != ESYS_TR_NONE)
            (void)Esys_FlushContext(c->esys, c->session);
        if (c->primary != ESYS_TR_NONE)
            (void)Esys_FlushContext(c->esys, c->primary);
        Esys_Finalize(&c->esys);
    }
    if (c->tcti != NULL)
        Tss2_TctiLdr_Finalize(&c->tcti);
}

/* Reaches the TPM, creates the primary key and a session salted with it, encrypting parameters. */
static enum kw_tpm_result connect_tpm(struct connection *c, const char *tcti, char *error)
{
    memset(c, 0, sizeof *c);
    c->primary = ESYS_TR_NONE;
    c->session = ESYS_TR_NONE;
    const char *conf = (tcti != NULL && tcti[0] != '\0') ? tcti : NULL;
    TSS2_RC rc = Tss2_TctiLdr_Initialize(conf, &c->tcti);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, "no TPM found (%s): %s", conf ? conf : "default TCTI", Tss2_RC_Decode(rc));
        return KW_TPM_UNREACHABLE;
    }
    rc = Esys_Initialize(&c->esys, c->tcti, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, "cannot talk to the TPM: %s", Tss2_RC_Decode(rc));
        return KW_TPM_UNREACHABLE;
    }
    TPM2B_SENSITIVE_CREATE no_sensitive;
    memset(&no_sensitive, 0, sizeof no_sensitive);
    TPM2B_PUBLIC in_public = primary_template();
    TPM2B_DATA outside;
    memset(&outside, 0, sizeof outside);
    TPML_PCR_SELECTION no_pcrs;
    memset(&no_pcrs, 0, sizeof no_pcrs);
    rc = Esys_CreatePrimary(c->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                            &no_sensitive, &in_public, &outside, &no_pcrs, &c->primary, NULL,
                            NULL, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        c->primary = ESYS_TR_NONE;
        /* A TPM that does not answer at all fails here first: the TCTI loads lazily. */
        say(error, "cannot create the TPM's storage key: %s", Tss2_RC_Decode(rc));
        return (rc & TSS2_RC_LAYER_MASK) == TSS2_TCTI_RC_LAYER ? KW_TPM_UNREACHABLE : KW_TPM_FAILED;
    }
    TPMT_SYM_DEF aes;
    memset(&aes, 0, sizeof aes);
    aes.algorithm = TPM2_ALG_AES;
    aes.keyBits.aes = 128;
    aes.mode.aes = TPM2_ALG_CFB;
    rc = Esys_StartAuthSession(c->esys, c->primary, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                               ESYS_TR_NONE, NULL, TPM2_SE_HMAC, &aes, TPM2_ALG_SHA256,
                               &c->session);
    if (rc != TSS2_RC_SUCCESS) {
        c->session = ESYS_TR_NONE;
        say(error, "cannot start a TPM session: %s", Tss2_RC_Decode(rc));
        return KW_TPM_FAILED;
    }
    TPMA_SESSION attributes = TPMA_SESSION_DECRYPT | TPMA_SESSION_ENCRYPT |
                              TPMA_SESSION_CONTINUESESSION;
    rc = Esys_TRSess_SetAttributes(c->esys, c->session, attributes, 0xff);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, "cannot set up the TPM session: %s", Tss2_RC_Decode(rc));
        return KW_TPM_FAILED;
    }
    return KW_TPM_OK;
}

enum kw_tpm_result kw_tpm_seal(const char *tcti, const uint8_t *auth, size_t auth_length,
                               const uint8_t *secret, size_t secret_length, uint32_t pcr_mask,
                               struct kw_tpm_blob *blob, char *error)
{
    error[0] = '\0';
    if (auth_length > KW_TPM_MAX_SECRET || secret_length > KW_TPM_MAX_SECRET) {
        say(error, "authorization value or secret too long");
        return KW_TPM_FAILED;
    }
    if (!kw_tpm_pcr_mask_valid(pcr_mask)) {
        say(error, "at most %d PCRs, each 0-%d", KW_TPM_MAX_PCRS, KW_TPM_PCR_COUNT - 1);
        return KW_TPM_FAILED;
    }
    memset(blob, 0, sizeof *blob);
    struct connection c;
    enum kw_tpm_result result = connect_tpm(&c, tcti, error);
    TPM2B_DIGEST pcrs, policy;
    memset(&pcrs, 0, sizeof pcrs);
    memset(&policy, 0, sizeof policy);
    if (result == KW_TPM_OK && pcr_mask != 0) {
        result = pcr_digest(c.esys, pcr_mask, &pcrs, error);
        if (result == KW_TPM_OK)
            result = policy_digest(c.esys, pcr_mask, &pcrs, &policy, error);
    }
    TPM2B_SENSITIVE_CREATE sensitive;
    memset(&sensitive, 0, sizeof sensitive);
    TPM2B_PRIVATE *out_private = NULL;
    TPM2B_PUBLIC *out_public = NULL;
    if (result == KW_TPM_OK) {
        sensitive.sensitive.userAuth.size = (UINT16)auth_length;
        memcpy(sensitive.sensitive.userAuth.buffer, auth, auth_length);
        sensitive.sensitive.data.size = (UINT16)secret_length;
        memcpy(sensitive.sensitive.data.buffer, secret, secret_length);
        TPM2B_PUBLIC in_public = sealed_template(pcr_mask != 0 ? &policy : NULL);
        TPM2B_DATA outside;
        memset(&outside, 0, sizeof outside);
        TPML_PCR_SELECTION no_pcrs;
        memset(&no_pcrs, 0, sizeof no_pcrs);
        TSS2_RC rc = Esys_Create(c.esys, c.primary, c.session, ESYS_TR_NONE, ESYS_TR_NONE,
                                 &sensitive, &in_public, &outside, &no_pcrs, &out_private,
                                 &out_public, NULL, NULL, NULL);
        if (rc != TSS2_RC_SUCCESS) {
            say(error, "cannot seal in the TPM: %s", Tss2_RC_Decode(rc));
            result = refusal_or_failure(rc);
        }
    }
    if (result == KW_TPM_OK) {
        size_t pub_offset = 0, priv_offset = 0;
        TSS2_RC rc = Tss2_MU_TPM2B_PUBLIC_Marshal(out_public, blob->public_area,
                                                  sizeof blob->public_area, &pub_offset);
        if (rc == TSS2_RC_SUCCESS)
            rc = Tss2_MU_TPM2B_PRIVATE_Marshal(out_private, blob->private_area,
                                               sizeof blob->private_area, &priv_offset);
        if (rc != TSS2_RC_SUCCESS) {
            say(error, "cannot store the sealed object: %s", Tss2_RC_Decode(rc));
            result = KW_TPM_FAILED;
        }
        blob->public_length = pub_offset;
        blob->private_length = priv_offset;
        blob->pcr_mask = pcr_mask;
        blob->pcr_digest_length = pcr_mask != 0 ? pcrs.size : 0;
        memcpy(blob->pcr_digest, pcrs.buffer, blob->pcr_digest_length);
    }
    explicit_bzero(&sensitive, sizeof sensitive);
    Esys_Free(out_private);
    Esys_Free(out_public);
    disconnect(&c);
    return result;
}

/*
 * A policy session for unsealing a bound object, salted with the primary key like the HMAC
 * session (the secret comes back encrypted), with the boot-state policy satisfied in it.
 */
static enum kw_tpm_result start_policy_session(struct connection *c, const struct kw_tpm_blob *blob,
                                               ESYS_TR *session, char *error)
{
    TPMT_SYM_DEF aes;
    memset(&aes, 0, sizeof aes);
    aes.algorithm = TPM2_ALG_AES;
    aes.keyBits.aes = 128;
    aes.mode.aes = TPM2_ALG_CFB;
    TSS2_RC rc = Esys_StartAuthSession(c->esys, c->primary, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                       ESYS_TR_NONE, NULL, TPM2_SE_POLICY, &aes, TPM2_ALG_SHA256,
                                       session);
    if (rc != TSS2_RC_SUCCESS) {
        *session = ESYS_TR_NONE;
        say(error, "cannot start a TPM policy session: %s", Tss2_RC_Decode(rc));
        return KW_TPM_FAILED;
    }
    rc = Esys_TRSess_SetAttributes(c->esys, *session, TPMA_SESSION_ENCRYPT, 0xff);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, "cannot set up the TPM policy session: %s", Tss2_RC_Decode(rc));
        return KW_TPM_FAILED;
    }
    TPM2B_DIGEST digest;
    memset(&digest, 0, sizeof digest);
    digest.size = (UINT16)blob->pcr_digest_length;
    memcpy(digest.buffer, blob->pcr_digest, blob->pcr_digest_length);
    return apply_policy(c->esys, *session, blob->pcr_mask, &digest, error);
}

enum kw_tpm_result kw_tpm_unseal(const char *tcti, const uint8_t *auth, size_t auth_length,
                                 const struct kw_tpm_blob *blob, uint8_t *secret,
                                 size_t *secret_length, char *error)
{
    error[0] = '\0';
    *secret_length = 0;
    TPM2B_PUBLIC in_public;
    TPM2B_PRIVATE in_private;
    memset(&in_public, 0, sizeof in_public);
    memset(&in_private, 0, sizeof in_private);
    size_t pub_offset = 0, priv_offset = 0;
    if (auth_length > KW_TPM_MAX_SECRET ||
        blob->public_length > sizeof blob->public_area ||
        blob->private_length > sizeof blob->private_area ||
        Tss2_MU_TPM2B_PUBLIC_Unmarshal(blob->public_area, blob->public_length, &pub_offset,
                                       &in_public) != TSS2_RC_SUCCESS ||
        Tss2_MU_TPM2B_PRIVATE_Unmarshal(blob->private_area, blob->private_length, &priv_offset,
                                        &in_private) != TSS2_RC_SUCCESS ||
        pub_offset != blob->public_length || priv_offset != blob->private_length ||
        !kw_tpm_pcr_mask_valid(blob->pcr_mask) ||
        blob->pcr_digest_length != (blob->pcr_mask != 0 ? 32u : 0u)) {
        say(error, "the sealed object is malformed");
        return KW_TPM_REFUSED;
    }
    struct connection c;
    enum kw_tpm_result result = connect_tpm(&c, tcti, error);
    ESYS_TR object = ESYS_TR_NONE;
    ESYS_TR policy = ESYS_TR_NONE;
    TPM2B_SENSITIVE_DATA *out = NULL;
    if (result == KW_TPM_OK) {
        TSS2_RC rc = Esys_Load(c.esys, c.primary, c.session, ESYS_TR_NONE, ESYS_TR_NONE,
                               &in_private, &in_public, &object);
        if (rc != TSS2_RC_SUCCESS) {
            object = ESYS_TR_NONE;
            say(error, "the TPM does not take the sealed object (another TPM?): %s",
                Tss2_RC_Decode(rc));
            result = refusal_or_failure(rc);
        }
    }
    if (result == KW_TPM_OK && blob->pcr_mask != 0)
        result = start_policy_session(&c, blob, &policy, error);
    if (result == KW_TPM_OK) {
        TPM2B_AUTH value;
        memset(&value, 0, sizeof value);
        value.size = (UINT16)auth_length;
        memcpy(value.buffer, auth, auth_length);
        TSS2_RC rc = Esys_TR_SetAuth(c.esys, object, &value);
        explicit_bzero(&value, sizeof value);
        if (rc == TSS2_RC_SUCCESS)
            rc = Esys_Unseal(c.esys, object, policy != ESYS_TR_NONE ? policy : c.session,
                             ESYS_TR_NONE, ESYS_TR_NONE, &out);
        if (rc != TSS2_RC_SUCCESS) {
            say(error, "the TPM refuses to unseal: %s", Tss2_RC_Decode(rc));
            result = refusal_or_failure(rc);
        } else if (out->size > KW_TPM_MAX_SECRET) {
            say(error, "the sealed secret has the wrong size");
            result = KW_TPM_REFUSED;
        } else {
            memcpy(secret, out->buffer, out->size);
            *secret_length = out->size;
        }
    }
    if (out != NULL) {
        explicit_bzero(out, sizeof *out);
        Esys_Free(out);
    }
    if (policy != ESYS_TR_NONE)
        (void)Esys_FlushContext(c.esys, policy);
    if (object != ESYS_TR_NONE)
        (void)Esys_FlushContext(c.esys, object);
    disconnect(&c);
    return result;
}
