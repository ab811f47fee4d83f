/*
 * The wire client of the control protocol (docs/control-protocol.md): reaching the user's
 * daemon safely, one request, one answer. Codes and sizes come from keywell-control.h.
 */
#ifndef PAM_KEYWELL_CONTROL_CLIENT_H
#define PAM_KEYWELL_CONTROL_CLIENT_H

#include <pwd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <security/pam_modules.h>

#include "keywell-control.h"
#include "options.h"
#include "secret.h"

enum {
    KW_MAX_MESSAGE = 512, /* the longest daemon message the module reads and logs, NUL included */
};

/* Outcome of trying to reach the daemon. */
enum reach {
    REACH_OK,      /* connected, peer is the user */
    REACH_ABSENT,  /* no socket, or nobody listening: starting the daemon may help */
    REACH_REFUSED, /* something is wrong with ownership or the peer: send nothing, start nothing */
    REACH_TIMEOUT, /* the budget ran out */
};

/*
 * Connects to <rtdir>/keywell/control and makes sure the folder and socket are the user's and
 * the listener is the user's own process (SO_PEERCRED). Nothing is sent before that check
 * passes. `quiet` leaves out the debug line for nobody listening (the wait after a spawn).
 */
enum reach connect_daemon(pam_handle_t *pamh, const struct options *o, const struct passwd *pw,
                          const char *rtdir, int64_t deadline, bool quiet, int *fd_out);

/*
 * Sends one request and reads the answer: the status and the message (at most msgsize - 1
 * bytes, NUL-terminated, as printable ASCII). The request, which may hold passwords, is built
 * in secret memory and wiped before returning. Returns false when no answer came.
 */
bool exchange(pam_handle_t *pamh, const char *phase, int fd, char op,
              const struct secret *const *fields, int nfields, int64_t deadline,
              int32_t *status, char *msg, size_t msgsize);

#endif
