/* Finding the user's runtime folder, which holds the daemon's socket (docs/control-protocol.md §1). */
#ifndef PAM_KEYWELL_RUNTIME_DIR_H
#define PAM_KEYWELL_RUNTIME_DIR_H

#include <pwd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <security/pam_modules.h>

#include "options.h"

/*
 * A folder we trust to hold the user's socket: a real directory (lstat: no symlink), owned by
 * `uid`, with none of the `forbidden` mode bits. Returns 0, or an errno value.
 */
int check_private_dir(const char *path, uid_t uid, mode_t forbidden);

/*
 * The PAM environment's XDG_RUNTIME_DIR (pam_systemd puts it there), else the process's, else
 * /run/user/<uid> (made by root when `create` and it is missing). A candidate that is not the
 * user's own (su and sudo carry the caller's) is passed over. Returns 0 with the path in buf.
 */
int find_runtime_dir(pam_handle_t *pamh, const struct options *o, const struct passwd *pw,
                     bool create, char *buf, size_t size);

#endif
