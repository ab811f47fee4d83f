#define _GNU_SOURCE
#include "login_unlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>

#include "keywell-control.h"

/* Root's and nobody else's: owned by uid 0, no group or other permission bits. */
static bool root_only(const struct stat *st)
{
    return st->st_uid == 0 && (st->st_mode & 077) == 0;
}

struct secret *read_login_unlock_value(pam_handle_t *pamh, const struct options *o,
                                       const struct passwd *pw)
{
    struct stat st;
    if (lstat(KW_LOGIN_UNLOCK_FOLDER, &st) != 0) {
        if (o->debug)
            pam_syslog(pamh, LOG_DEBUG, "open_session: no login unlock on this machine");
        return NULL;
    }
    if (!S_ISDIR(st.st_mode) || !root_only(&st)) {
        pam_syslog(pamh, LOG_NOTICE, "open_session: %s is not root's alone; not used",
                   KW_LOGIN_UNLOCK_FOLDER);
        return NULL;
    }
    char path[sizeof KW_LOGIN_UNLOCK_FOLDER + 24];
    snprintf(path, sizeof path, "%s/%lu", KW_LOGIN_UNLOCK_FOLDER, (unsigned long)pw->pw_uid);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            pam_syslog(pamh, LOG_NOTICE, "open_session: cannot open the login unlock value of %s: %m",
                       pw->pw_name);
        else if (o->debug)
            pam_syslog(pamh, LOG_DEBUG, "open_session: no login unlock for %s", pw->pw_name);
        return NULL;
    }
    struct secret *value = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !root_only(&st) ||
        st.st_size != KW_LOGIN_UNLOCK_VALUE_LENGTH) {
        pam_syslog(pamh, LOG_NOTICE,
                   "open_session: the login unlock value of %s is not a root-only file of %d bytes; "
                   "not used",
                   pw->pw_name, KW_LOGIN_UNLOCK_VALUE_LENGTH);
    } else if ((value = secret_new(KW_LOGIN_UNLOCK_VALUE_LENGTH)) == NULL) {
        pam_syslog(pamh, LOG_ERR, "open_session: cannot allocate memory");
    } else {
        size_t got = 0;
        while (got < KW_LOGIN_UNLOCK_VALUE_LENGTH) {
            ssize_t n = read(fd, value->data + got, KW_LOGIN_UNLOCK_VALUE_LENGTH - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got != KW_LOGIN_UNLOCK_VALUE_LENGTH) {
            pam_syslog(pamh, LOG_NOTICE, "open_session: cannot read the login unlock value of %s",
                       pw->pw_name);
            secret_free(value);
            value = NULL;
        }
    }
    close(fd);
    return value;
}
