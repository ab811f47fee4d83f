#define _GNU_SOURCE
#include "options.h"

#include <string.h>
#include <syslog.h>

#include <security/pam_ext.h>
#include <security/pam_modutil.h>

#ifndef KEYWELLD_PATH
#define KEYWELLD_PATH "/usr/local/bin/keywelld"
#endif

int parse_options(pam_handle_t *pamh, int argc, const char **argv, struct options *o)
{
    o->debug = false;
    o->auto_start = false;
    o->only_if = NULL;
    o->daemon = KEYWELLD_PATH;
    int unknown = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "debug") == 0)
            o->debug = true;
        else if (strcmp(a, "auto_start") == 0)
            o->auto_start = true;
        else if (strncmp(a, "only_if=", 8) == 0)
            o->only_if = a + 8;
        else if (strncmp(a, "daemon=", 7) == 0)
            o->daemon = a + 7;
        else {
            pam_syslog(pamh, LOG_WARNING, "unknown option: %s", a);
            unknown++;
        }
    }
    return unknown;
}

bool service_listed(const char *list, const char *service)
{
    size_t n = strlen(service);
    const char *p = list;
    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, service, n) == 0)
            return true;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return false;
}

const struct passwd *prologue(pam_handle_t *pamh, int argc, const char **argv,
                              struct options *o, const char *phase)
{
    parse_options(pamh, argc, argv, o);

    const void *item = NULL;
    if (o->only_if != NULL) {
        const char *service = NULL;
        if (pam_get_item(pamh, PAM_SERVICE, &item) == PAM_SUCCESS)
            service = item;
        if (service == NULL || !service_listed(o->only_if, service)) {
            if (o->debug)
                pam_syslog(pamh, LOG_DEBUG, "%s: service %s not in only_if, skipping", phase,
                           service ? service : "(none)");
            return NULL;
        }
    }

    /* PAM_USER, not pam_get_user: this module must never prompt. */
    item = NULL;
    if (pam_get_item(pamh, PAM_USER, &item) != PAM_SUCCESS || item == NULL ||
        *(const char *)item == '\0') {
        if (o->debug)
            pam_syslog(pamh, LOG_DEBUG, "%s: no user, skipping", phase);
        return NULL;
    }
    const char *user = item;
    const struct passwd *pw = pam_modutil_getpwnam(pamh, user);
    if (pw == NULL) {
        pam_syslog(pamh, LOG_NOTICE, "%s: unknown user %s", phase, user);
        return NULL;
    }
    if (pw->pw_uid == 0) {
        /* root has no login keychain: no daemon runs as root on its behalf. */
        if (o->debug)
            pam_syslog(pamh, LOG_DEBUG, "%s: target is root, skipping", phase);
        return NULL;
    }
    return pw;
}
