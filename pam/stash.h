/*
 * The password kept from auth until open_session hands it over, bound to the account pam_unix
 * checked it for. PAM_USER may be changed between auth and the session (sudo authenticates the
 * caller, then opens the session of the target user): the password then belongs to someone
 * else and must never be sent.
 */
#ifndef PAM_KEYWELL_STASH_H
#define PAM_KEYWELL_STASH_H

#include <pwd.h>
#include <stdbool.h>
#include <security/pam_modules.h>

#include "secret.h"

/* Keeps a copy of the password of `pw` in PAM's private data. */
void stash_token(pam_handle_t *pamh, const struct passwd *pw, const char *tok);
/* Wipes the kept password, if any. */
void drop_token(pam_handle_t *pamh);
/*
 * The kept password, if it was checked for `pw` (same uid and same name). One kept for anybody
 * else is wiped here and NULL returned: the caller goes on as for a login without a password.
 */
const struct secret *kept_token(pam_handle_t *pamh, const struct passwd *pw, const char *phase);

/*
 * A login whose auth phase reached the module without a password (a fingerprint, a security
 * key, autologin): remembered for `pw`, so that open_session may unlock through the TPM for the
 * same account only (docs/login-unlock.md, "At login"). Nothing secret is kept.
 */
void stash_passwordless(pam_handle_t *pamh, const struct passwd *pw);
/* Whether auth ran without a password for `pw` (same uid and same name) in this PAM handle. */
bool passwordless_auth(pam_handle_t *pamh, const struct passwd *pw);

#endif
