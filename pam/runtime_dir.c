#define _GNU_SOURCE
#include "runtime_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>

int check_private_dir(const char *path, uid_t uid, mode_t forbidden)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno;
    if (!S_ISDIR(st.st_mode))
        return ENOTDIR;
    if (st.st_uid != uid)
        return EPERM;
    if ((st.st_mode & forbidden) != 0)
        return EACCES;
    return 0;
}

/* Without logind nobody makes /run/user/<uid>; root makes it the way logind would. */
static int make_runtime_dir(const char *path, const struct passwd *pw)
{
    if (geteuid() != 0)
        return EPERM;
    /* chmod as well: the login process's umask must not make /run/user root-only. */
    if (mkdir("/run/user", 0755) == 0)
        (void)chmod("/run/user", 0755);
    else if (errno != EEXIST)
        return errno;
    if (mkdir(path, 0700) != 0)
        return errno;
    /* /run/user is root's, so nobody can swap what we just made; O_NOFOLLOW all the same. */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int err = 0;
    if (fchown(fd, pw->pw_uid, pw->pw_gid) != 0 || fchmod(fd, 0700) != 0)
        err = errno;
    close(fd);
    return err;
}

int find_runtime_dir(pam_handle_t *pamh, const struct options *o, const struct passwd *pw,
                     bool create, char *buf, size_t size)
{
    const char *candidates[2] = {pam_getenv(pamh, "XDG_RUNTIME_DIR"), getenv("XDG_RUNTIME_DIR")};
    static const char *const origin[2] = {"PAM environment", "process environment"};
    for (int i = 0; i < 2; i++) {
        const char *c = candidates[i];
        if (c == NULL || c[0] != '/')
            continue;
        int err = check_private_dir(c, pw->pw_uid, 022);
        if (err == 0 && strlen(c) < size) {
            strcpy(buf, c);
            return 0;
        }
        if (o->debug)
            pam_syslog(pamh, LOG_DEBUG, "XDG_RUNTIME_DIR from the %s (%s) is not usable: %s",
                       origin[i], c, strerror(err ? err : ENAMETOOLONG));
    }

    snprintf(buf, size, "/run/user/%lu", (unsigned long)pw->pw_uid);
    int err = check_private_dir(buf, pw->pw_uid, 022);
    if (err == ENOENT && create) {
        err = make_runtime_dir(buf, pw);
        if (err == 0 && o->debug)
            pam_syslog(pamh, LOG_DEBUG, "created %s", buf);
    }
    if (err != 0) {
        if (err != ENOENT || create)
            pam_syslog(pamh, LOG_WARNING, "runtime folder %s is not usable: %s", buf,
                       strerror(err));
        return -1;
    }
    return 0;
}
