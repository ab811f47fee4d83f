#define _GNU_SOURCE
#include "talk.h"

#include <limits.h>
#include <stdint.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>

#include "control_client.h"
#include "deadline.h"
#include "runtime_dir.h"
#include "spawn.h"

bool talk(pam_handle_t *pamh, const struct options *o, const struct passwd *pw,
          bool may_start, char op, const struct secret *const *fields, int nfields,
          const char *phase)
{
    int64_t deadline = now_ms() + KW_PHASE_MS;
    char rtdir[PATH_MAX];
    if (find_runtime_dir(pamh, o, pw, may_start, rtdir, sizeof rtdir) != 0) {
        if (o->debug)
            pam_syslog(pamh, LOG_DEBUG, "%s: no runtime folder for %s", phase, pw->pw_name);
        return false;
    }

    int fd = -1;
    enum reach r = connect_daemon(pamh, o, pw, rtdir, deadline, false, &fd);
    if (r == REACH_ABSENT && may_start) {
        if (start_daemon(pamh, o, pw, rtdir, deadline)) {
            /* Leave the rest of the budget for the request itself (Argon2id takes a while). */
            int64_t until = now_ms() + KW_SPAWN_WAIT_MS;
            if (until > deadline)
                until = deadline;
            do {
                sleep_ms(KW_POLL_STEP_MS);
                r = connect_daemon(pamh, o, pw, rtdir, deadline, true, &fd);
            } while (r == REACH_ABSENT && now_ms() < until);
            if (r == REACH_ABSENT)
                pam_syslog(pamh, LOG_WARNING, "%s: keywelld did not open its socket in time",
                           phase);
        }
    }
    if (r != REACH_OK) {
        if (r == REACH_ABSENT && !may_start) {
            if (o->debug)
                pam_syslog(pamh, LOG_DEBUG, "%s: keywelld is not running for %s", phase,
                           pw->pw_name);
        } else if (r == REACH_ABSENT) {
            pam_syslog(pamh, LOG_NOTICE, "%s: keywelld not reachable for %s", phase,
                       pw->pw_name);
        }
        return false;
    }

    int32_t status = 0;
    char msg[KW_MAX_MESSAGE];
    bool answered =
        exchange(pamh, phase, fd, op, fields, nfields, deadline, &status, msg, sizeof msg);
    close(fd);
    if (!answered)
        return false;
    if (status == KW_STATUS_OK) {
        if (o->debug)
            pam_syslog(pamh, LOG_DEBUG, "%s: keywelld: ok%s%s", phase, *msg ? ": " : "", msg);
        return true;
    }
    if (status == KW_STATUS_AUTH_FAILED)
        pam_syslog(pamh, LOG_NOTICE,
                   "%s: the login keychain of %s has a different password than the login; "
                   "it stays locked (%d: %s)",
                   phase, pw->pw_name, (int)status, msg);
    else
        pam_syslog(pamh, LOG_WARNING, "%s: keywelld answered %d: %s", phase, (int)status, msg);
    return false;
}

