/*
 * The login unlock through the TPM (docs/login-unlock.md): the authorization value root keeps
 * for a user, read at a login whose auth phase left no password.
 */
#ifndef PAM_KEYWELL_LOGIN_UNLOCK_H
#define PAM_KEYWELL_LOGIN_UNLOCK_H

#include <pwd.h>
#include <security/pam_modules.h>

#include "options.h"
#include "secret.h"

/*
 * The value in KW_LOGIN_UNLOCK_FOLDER/<uid>, in secret memory (the caller frees it), or NULL
 * when the user has none or the file or its folder is not root's alone (then syslog says so).
 */
struct secret *read_login_unlock_value(pam_handle_t *pamh, const struct options *o,
                                       const struct passwd *pw);

#endif
