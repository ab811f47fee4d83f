/* The module's arguments (pam/README.md, "Options") and the checks every phase starts with. */
#ifndef PAM_KEYWELL_OPTIONS_H
#define PAM_KEYWELL_OPTIONS_H

#include <pwd.h>
#include <stdbool.h>
#include <security/pam_modules.h>

struct options {
    bool debug;
    bool auto_start;
    const char *only_if; /* comma-separated services, or NULL for all */
    const char *daemon;  /* path of keywelld; spawn.c checks it before starting it */
};

/* Fills `o` from the arguments; unknown ones are logged and skipped. Returns how many there were. */
int parse_options(pam_handle_t *pamh, int argc, const char **argv, struct options *o);

/* Whether `service` is one of the comma-separated names in `list` (exact match). */
bool service_listed(const char *list, const char *service);

/*
 * Everything a phase checks before doing anything: options, only_if, the target user.
 * Returns the user's passwd entry (owned by PAM), or NULL when the module has nothing to do.
 */
const struct passwd *prologue(pam_handle_t *pamh, int argc, const char **argv,
                              struct options *o, const char *phase);

#endif
