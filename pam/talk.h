/* One conversation with the user's daemon: find its folder, reach or start it, one request. */
#ifndef PAM_KEYWELL_TALK_H
#define PAM_KEYWELL_TALK_H

#include <pwd.h>
#include <stdbool.h>
#include <security/pam_modules.h>

#include "options.h"
#include "secret.h"

/*
 * Reaches the daemon (starting it when `may_start` and needed), sends `op` with the fields and
 * logs the answer. Returns true when the daemon answered KW_STATUS_OK.
 */
bool talk(pam_handle_t *pamh, const struct options *o, const struct passwd *pw, bool may_start,
          char op, const struct secret *const *fields, int nfields, const char *phase);

#endif
