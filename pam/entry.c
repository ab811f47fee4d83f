/*
 * pam_keywell — hands the login password to the user's keywelld, so that the `login` keychain
 * is unlocked at login, locked when the last session closes and re-wrapped when the password
 * changes. The wire format is in docs/control-protocol.md; pam/README.md lists the files.
 *
 * This module is glue only: it never decides authentication, does no cryptography and never
 * turns a good login into a failed one. Every wait is bounded so that a broken or hung daemon
 * costs a login at most a few seconds, and every failure goes to syslog without secrets.
 *
 * This file holds the PAM entry points, the only symbols the module exports.
 */
#define _GNU_SOURCE
#include <pwd.h>
#include <stdbool.h>
#include <syslog.h>

#define PAM_SM_AUTH
#define PAM_SM_SESSION
#define PAM_SM_PASSWORD
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "keywell-control.h"
#include "login_unlock.h"
#include "options.h"
#include "secret.h"
#include "stash.h"
#include "talk.h"

/* Built with -fvisibility=hidden: only the PAM entry points leave the module. */
#define KW_EXPORT __attribute__((visibility("default")))

KW_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)flags;
    struct options o;
    const struct passwd *pw = prologue(pamh, argc, argv, &o, "auth");
    if (pw == NULL)
        return PAM_IGNORE;
    /* The module sits after pam_unix: take the token it read, never prompt for one. */
    const void *tok = NULL;
    if (pam_get_item(pamh, PAM_AUTHTOK, &tok) != PAM_SUCCESS || tok == NULL ||
        *(const char *)tok == '\0') {
        /* A fingerprint, a security key, autologin: the session may unlock through the TPM. */
        stash_passwordless(pamh, pw);
        if (o.debug)
            pam_syslog(pamh, LOG_DEBUG, "auth: no password to keep for %s", pw->pw_name);
        return PAM_IGNORE;
    }
    stash_token(pamh, pw, tok);
    if (o.debug)
        pam_syslog(pamh, LOG_DEBUG, "auth: kept the password of %s for the session", pw->pw_name);
    return PAM_IGNORE;
}

KW_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_IGNORE;
}

KW_EXPORT int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)flags;
    struct options o;
    const struct passwd *pw = prologue(pamh, argc, argv, &o, "open_session");
    if (pw == NULL) {
        drop_token(pamh);
        return PAM_IGNORE;
    }

    const struct secret *tok = kept_token(pamh, pw, "open_session");
    if (tok != NULL && tok->len > KW_MAX_FIELD) {
        pam_syslog(pamh, LOG_NOTICE, "open_session: password too long to hand over");
        tok = NULL;
    }
    /* Auth ran for this user and left no password: the TPM may unlock, if root keeps a value. */
    struct secret *value = NULL;
    if (tok == NULL && passwordless_auth(pamh, pw))
        value = read_login_unlock_value(pamh, &o, pw);
    /* Without a password (ssh keys, su from root, sudo) the session is counted all the same. */
    const struct secret *fields[1] = {value != NULL ? value : tok};
    char op = value != NULL ? KW_OP_OPEN_SESSION_TPM : KW_OP_OPEN_SESSION;
    bool ok = talk(pamh, &o, pw, o.auto_start, op, fields, fields[0] ? 1 : 0, "open_session");
    /* Handed over or not, the login process has no further use for the password or the value. */
    secret_free(value);
    drop_token(pamh);
    return ok ? PAM_SUCCESS : PAM_IGNORE;
}

KW_EXPORT int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)flags;
    struct options o;
    const struct passwd *pw = prologue(pamh, argc, argv, &o, "close_session");
    if (pw == NULL)
        return PAM_IGNORE;
    /* No daemon, nothing unlocked: never start one just to lock. */
    bool ok = talk(pamh, &o, pw, false, KW_OP_CLOSE_SESSION, NULL, 0, "close_session");
    return ok ? PAM_SUCCESS : PAM_IGNORE;
}

KW_EXPORT int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    if (flags & PAM_PRELIM_CHECK)
        return PAM_IGNORE;
    if (!(flags & PAM_UPDATE_AUTHTOK))
        return PAM_IGNORE;
    struct options o;
    const struct passwd *pw = prologue(pamh, argc, argv, &o, "chauthtok");
    if (pw == NULL)
        return PAM_IGNORE;

    const void *old = NULL, *new = NULL;
    (void)pam_get_item(pamh, PAM_OLDAUTHTOK, &old);
    (void)pam_get_item(pamh, PAM_AUTHTOK, &new);
    if (old == NULL || new == NULL) {
        /* e.g. root set the password: without the old one the keychain cannot follow. */
        pam_syslog(pamh, LOG_NOTICE,
                   "chauthtok: old or new password not available for %s; "
                   "the login keychain keeps its password",
                   pw->pw_name);
        return PAM_IGNORE;
    }
    struct secret *s_old = secret_from_string(old);
    struct secret *s_new = secret_from_string(new);
    bool ok = false;
    if (s_old == NULL || s_new == NULL) {
        pam_syslog(pamh, LOG_ERR, "chauthtok: cannot allocate memory");
    } else if (s_old->len > KW_MAX_FIELD || s_new->len > KW_MAX_FIELD) {
        pam_syslog(pamh, LOG_NOTICE, "chauthtok: password too long to hand over");
    } else {
        const struct secret *fields[2] = {s_old, s_new};
        ok = talk(pamh, &o, pw, o.auto_start, KW_OP_CHANGE_PASSWORD, fields, 2, "chauthtok");
    }
    secret_free(s_old);
    secret_free(s_new);

    /* An expired password changed during login: the session must unlock with the new one. */
    if (kept_token(pamh, pw, "chauthtok") != NULL && ok)
        stash_token(pamh, pw, new);
    return ok ? PAM_SUCCESS : PAM_IGNORE;
}
