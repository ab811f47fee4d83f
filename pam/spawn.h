/* Starting keywelld as the user, detached from the login process (docs/control-protocol.md §5). */
#ifndef PAM_KEYWELL_SPAWN_H
#define PAM_KEYWELL_SPAWN_H

#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <security/pam_modules.h>

#include "options.h"

/* Whether `path` may be started for `uid`: absolute, a regular executable only root or the user can write. */
bool daemon_usable(pam_handle_t *pamh, const char *path, uid_t uid);

/* Starts o->daemon for `pw` with `rtdir` as its runtime folder. True when it was exec'd. */
bool start_daemon(pam_handle_t *pamh, const struct options *o, const struct passwd *pw,
                  const char *rtdir, int64_t deadline);

#endif
