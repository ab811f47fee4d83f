#define _GNU_SOURCE
#include "stash.h"

#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <security/pam_ext.h>

static const char KW_TOKEN_DATA[] = "pam_keywell_authtok";
static const char KW_PASSWORDLESS_DATA[] = "pam_keywell_passwordless";

struct stash {
    uid_t uid;
    char *user; /* the passwd name PAM_USER resolved to at auth */
    struct secret *tok;
};

static void stash_cleanup(pam_handle_t *pamh, void *data, int error_status)
{
    (void)pamh;
    (void)error_status;
    struct stash *k = data;
    if (k == NULL)
        return;
    secret_free(k->tok);
    free(k->user);
    free(k);
}

void stash_token(pam_handle_t *pamh, const struct passwd *pw, const char *tok)
{
    struct stash *k = calloc(1, sizeof *k);
    if (k != NULL) {
        k->uid = pw->pw_uid;
        k->user = strdup(pw->pw_name);
        k->tok = secret_from_string(tok);
    }
    if (k == NULL || k->user == NULL || k->tok == NULL) {
        stash_cleanup(pamh, k, 0);
        pam_syslog(pamh, LOG_ERR, "cannot allocate memory for the password");
        return;
    }
    if (pam_set_data(pamh, KW_TOKEN_DATA, k, stash_cleanup) != PAM_SUCCESS) {
        stash_cleanup(pamh, k, 0);
        pam_syslog(pamh, LOG_ERR, "cannot keep the password in PAM data");
    }
}

/* Replacing the data runs the old cleanup, which wipes it. */
void drop_token(pam_handle_t *pamh)
{
    (void)pam_set_data(pamh, KW_TOKEN_DATA, NULL, NULL);
}

const struct secret *kept_token(pam_handle_t *pamh, const struct passwd *pw, const char *phase)
{
    const void *data = NULL;
    if (pam_get_data(pamh, KW_TOKEN_DATA, &data) != PAM_SUCCESS || data == NULL)
        return NULL;
    const struct stash *k = data;
    if (k->uid == pw->pw_uid && strcmp(k->user, pw->pw_name) == 0)
        return k->tok;
    pam_syslog(pamh, LOG_NOTICE,
               "%s: the password was checked for %s (uid %lu), but the user is now %s "
               "(uid %lu); it is dropped, not sent",
               phase, k->user, (unsigned long)k->uid, pw->pw_name, (unsigned long)pw->pw_uid);
    drop_token(pamh);
    return NULL;
}

void stash_passwordless(pam_handle_t *pamh, const struct passwd *pw)
{
    struct stash *k = calloc(1, sizeof *k);
    if (k != NULL) {
        k->uid = pw->pw_uid;
        k->user = strdup(pw->pw_name);
    }
    if (k == NULL || k->user == NULL ||
        pam_set_data(pamh, KW_PASSWORDLESS_DATA, k, stash_cleanup) != PAM_SUCCESS) {
        stash_cleanup(pamh, k, 0);
        pam_syslog(pamh, LOG_ERR, "cannot note a login without a password");
    }
}

bool passwordless_auth(pam_handle_t *pamh, const struct passwd *pw)
{
    const void *data = NULL;
    if (pam_get_data(pamh, KW_PASSWORDLESS_DATA, &data) != PAM_SUCCESS || data == NULL)
        return false;
    const struct stash *k = data;
    return k->uid == pw->pw_uid && strcmp(k->user, pw->pw_name) == 0;
}
