/*
 * The TPM side of the login unlock (docs/login-unlock.md, "In the TPM"). One connection per
 * call: load the TCTI, create the storage primary key, start a salted session, seal or unseal,
 * flush everything, close. Nothing is left in the TPM between calls.
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

/* A sealed data object: no sign or decrypt use, loadable only under this parent in this TPM. */
static TPM2B_PUBLIC sealed_template(void)
{
    TPM2B_PUBLIC t;
    memset(&t, 0, sizeof t);
    t.publicArea.type = TPM2_ALG_KEYEDHASH;
    t.publicArea.nameAlg = TPM2_ALG_SHA256;
    /* noDA: the authorization value is 32 random bytes, not a guessable password, so a failed
     * try need not count towards the TPM's dictionary-attack lockout (which would also lock out
     * every other user of the TPM). */
    t.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
                                    TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA;
    t.publicArea.parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL;
    return t;
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
                               const uint8_t *secret, size_t secret_length,
                               struct kw_tpm_blob *blob, char *error)
{
    error[0] = '\0';
    if (auth_length > KW_TPM_MAX_SECRET || secret_length > KW_TPM_MAX_SECRET) {
        say(error, "authorization value or secret too long");
        return KW_TPM_FAILED;
    }
    struct connection c;
    enum kw_tpm_result result = connect_tpm(&c, tcti, error);
    TPM2B_SENSITIVE_CREATE sensitive;
    memset(&sensitive, 0, sizeof sensitive);
    TPM2B_PRIVATE *out_private = NULL;
    TPM2B_PUBLIC *out_public = NULL;
    if (result == KW_TPM_OK) {
        sensitive.sensitive.userAuth.size = (UINT16)auth_length;
        memcpy(sensitive.sensitive.userAuth.buffer, auth, auth_length);
        sensitive.sensitive.data.size = (UINT16)secret_length;
        memcpy(sensitive.sensitive.data.buffer, secret, secret_length);
        TPM2B_PUBLIC in_public = sealed_template();
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
    }
    explicit_bzero(&sensitive, sizeof sensitive);
    Esys_Free(out_private);
    Esys_Free(out_public);
    disconnect(&c);
    return result;
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
        pub_offset != blob->public_length || priv_offset != blob->private_length) {
        say(error, "the sealed object is malformed");
        return KW_TPM_REFUSED;
    }
    struct connection c;
    enum kw_tpm_result result = connect_tpm(&c, tcti, error);
    ESYS_TR object = ESYS_TR_NONE;
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
    if (result == KW_TPM_OK) {
        TPM2B_AUTH value;
        memset(&value, 0, sizeof value);
        value.size = (UINT16)auth_length;
        memcpy(value.buffer, auth, auth_length);
        TSS2_RC rc = Esys_TR_SetAuth(c.esys, object, &value);
        explicit_bzero(&value, sizeof value);
        if (rc == TSS2_RC_SUCCESS)
            rc = Esys_Unseal(c.esys, object, c.session, ESYS_TR_NONE, ESYS_TR_NONE, &out);
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
    if (object != ESYS_TR_NONE)
        (void)Esys_FlushContext(c.esys, object);
    disconnect(&c);
    return result;
}
