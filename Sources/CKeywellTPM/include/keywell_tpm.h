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
};

enum kw_tpm_result {
    KW_TPM_OK = 0,
    KW_TPM_UNREACHABLE = 1, /* no TPM: the TCTI could not be loaded or connected */
    KW_TPM_REFUSED = 2,     /* the TPM said no: wrong authorization value, another TPM, a bad blob */
    KW_TPM_FAILED = 3,      /* anything else */
};

/* The sealed object as stored on disk: the marshalled TPM2B_PUBLIC and TPM2B_PRIVATE. */
struct kw_tpm_blob {
    size_t public_length;
    uint8_t public_area[KW_TPM_MAX_BLOB];
    size_t private_length;
    uint8_t private_area[KW_TPM_MAX_BLOB];
};

/*
 * Seals `secret` under `auth` in the TPM named by `tcti` (a TCTI configuration string; NULL or
 * "" for TSS2's default). On KW_TPM_OK, `blob` holds the object; otherwise `error` says why.
 */
enum kw_tpm_result kw_tpm_seal(const char *tcti, const uint8_t *auth, size_t auth_length,
                               const uint8_t *secret, size_t secret_length,
                               struct kw_tpm_blob *blob, char *error);

/*
 * Unseals the object in `blob` with `auth`: on KW_TPM_OK the secret is in `secret` (room for
 * KW_TPM_MAX_SECRET bytes) and its length in `secret_length`. Every copy the call made is wiped.
 */
enum kw_tpm_result kw_tpm_unseal(const char *tcti, const uint8_t *auth, size_t auth_length,
                                 const struct kw_tpm_blob *blob, uint8_t *secret,
                                 size_t *secret_length, char *error);

#endif
