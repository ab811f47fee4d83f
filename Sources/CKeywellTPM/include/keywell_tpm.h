/*
 * Sealing and unsealing a small secret in a TPM 2.0, through TSS2's ESAPI: the TPM part of the
 * login unlock without a typed password (docs/login-unlock.md). Plain C, so that the TSS2
 * structures stay on this side; keywelld calls these two functions and nothing else.
 *
 * The secret is sealed in a data object under the owner hierarchy's storage primary key, which
 * is created again, deterministically, for every call (an ECC P-256 key from the common storage
 * template), so nothing has to be made persistent in the TPM. The object needs an authorization
 * value to unseal; every command runs in a session salted with the primary key, so neither the
 * authorization value nor the secret crosses the bus to the TPM in clear.
 *
 * Optionally the object is also bound to the boot state: its policy then needs the SHA-256 PCRs
 * chosen at sealing to hold the values they held then (TPM2_PolicyPCR) *and* the authorization
 * value (TPM2_PolicyAuthValue), and the authorization value alone no longer unseals it.
 */
#ifndef KEYWELL_TPM_H
#define KEYWELL_TPM_H

#include <stddef.h>
#include <stdint.h>

enum {
    /* The largest authorization value and secret: one SHA-256 digest. */
    KW_TPM_MAX_SECRET = 32,
    /* Room for the marshalled public and private areas of the sealed object. */
    KW_TPM_MAX_BLOB = 1024,
    /* Room for an error message, NUL included. */
    KW_TPM_MAX_ERROR = 256,
    /* PCR indices a binding may name: 0-23, the PC Client platform's PCRs (a 3-byte selection). */
    KW_TPM_PCR_COUNT = 24,
    /* PCRs one binding may name at most: what one TPM2_PCR_Read returns (a TPML_DIGEST). */
    KW_TPM_MAX_PCRS = 8,
};

enum kw_tpm_result {
    KW_TPM_OK = 0,
    KW_TPM_UNREACHABLE = 1, /* no TPM: the TCTI could not be loaded or connected */
    KW_TPM_REFUSED = 2,     /* the TPM said no: wrong authorization value, another TPM, a bad blob */
    KW_TPM_FAILED = 3,      /* anything else */
    KW_TPM_BOOT_STATE_CHANGED = 4, /* a bound PCR no longer holds the value it held at sealing */
};

/*
 * The sealed object as stored on disk: the marshalled TPM2B_PUBLIC and TPM2B_PRIVATE, and for
 * an object bound to the boot state the SHA-256 PCRs it is bound to (bit i for PCR i; 0: not
 * bound) and the SHA-256 digest of their values at sealing, which the policy was made from.
 */
struct kw_tpm_blob {
    size_t public_length;
    uint8_t public_area[KW_TPM_MAX_BLOB];
    size_t private_length;
    uint8_t private_area[KW_TPM_MAX_BLOB];
    uint32_t pcr_mask;
    size_t pcr_digest_length;
    uint8_t pcr_digest[KW_TPM_MAX_SECRET];
};

/*
 * Seals `secret` under `auth` in the TPM named by `tcti` (a TCTI configuration string; NULL or
 * "" for TSS2's default), bound to the current values of the SHA-256 PCRs in `pcr_mask` (0: not
 * bound; at most KW_TPM_MAX_PCRS bits below KW_TPM_PCR_COUNT). On KW_TPM_OK, `blob` holds the
 * object; otherwise `error` says why.
 */
enum kw_tpm_result kw_tpm_seal(const char *tcti, const uint8_t *auth, size_t auth_length,
                               const uint8_t *secret, size_t secret_length, uint32_t pcr_mask,
                               struct kw_tpm_blob *blob, char *error);

/* Whether `pcr_mask` is a binding kw_tpm_seal takes: within the PCRs and the cap above. */
int kw_tpm_pcr_mask_valid(uint32_t pcr_mask);

/*
 * Unseals the object in `blob` with `auth`: on KW_TPM_OK the secret is in `secret` (room for
 * KW_TPM_MAX_SECRET bytes) and its length in `secret_length`. Every copy the call made is wiped.
 * A bound object whose PCRs changed since sealing gives KW_TPM_BOOT_STATE_CHANGED.
 */
enum kw_tpm_result kw_tpm_unseal(const char *tcti, const uint8_t *auth, size_t auth_length,
                                 const struct kw_tpm_blob *blob, uint8_t *secret,
                                 size_t *secret_length, char *error);

#endif
