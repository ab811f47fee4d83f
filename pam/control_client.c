#define _GNU_SOURCE
#include "control_client.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>

#include "deadline.h"
#include "runtime_dir.h"

/* Bounds the next socket call by what is left of the phase's budget. */
static bool set_timeouts(int fd, int64_t deadline)
{
    int64_t left = deadline - now_ms();
    if (left <= 0) {
        errno = ETIMEDOUT;
        return false;
    }
    struct timeval tv = {.tv_sec = left / 1000, .tv_usec = (left % 1000) * 1000};
    return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
           setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0;
}

enum reach connect_daemon(pam_handle_t *pamh, const struct options *o, const struct passwd *pw,
                          const char *rtdir, int64_t deadline, bool quiet, int *fd_out)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    char dir[sizeof addr.sun_path];
    if ((size_t)snprintf(dir, sizeof dir, "%s/" KW_CONTROL_FOLDER, rtdir) >= sizeof dir ||
        (size_t)snprintf(addr.sun_path, sizeof addr.sun_path, "%s/" KW_CONTROL_SOCKET, dir) >=
            sizeof addr.sun_path) {
        pam_syslog(pamh, LOG_WARNING, "socket path under %s is too long", rtdir);
        return REACH_REFUSED;
    }

    int err = check_private_dir(dir, pw->pw_uid, 077);
    if (err == ENOENT)
        return REACH_ABSENT;
    if (err != 0) {
        pam_syslog(pamh, LOG_WARNING, "refusing %s: %s", dir, strerror(err));
        return REACH_REFUSED;
    }
    struct stat st;
    if (lstat(addr.sun_path, &st) != 0)
        return errno == ENOENT ? REACH_ABSENT : REACH_REFUSED;
    if (!S_ISSOCK(st.st_mode) || st.st_uid != pw->pw_uid) {
        pam_syslog(pamh, LOG_WARNING, "refusing %s: not a socket owned by %s", addr.sun_path,
                   pw->pw_name);
        return REACH_REFUSED;
    }

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        pam_syslog(pamh, LOG_ERR, "socket: %m");
        return REACH_REFUSED;
    }
    /* SO_SNDTIMEO also bounds connect() when the listener's backlog is full. */
    if (!set_timeouts(fd, deadline)) {
        close(fd);
        return REACH_TIMEOUT;
    }
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        err = errno;
        close(fd);
        if (err == ECONNREFUSED || err == ENOENT) {
            if (o->debug && !quiet)
                pam_syslog(pamh, LOG_DEBUG, "nobody listens on %s", addr.sun_path);
            return REACH_ABSENT;
        }
        if (err == EAGAIN || err == EINPROGRESS || err == ETIMEDOUT) {
            pam_syslog(pamh, LOG_WARNING, "connecting to keywelld timed out");
            return REACH_TIMEOUT;
        }
        pam_syslog(pamh, LOG_WARNING, "connect %s: %s", addr.sun_path, strerror(err));
        return REACH_REFUSED;
    }

    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) {
        pam_syslog(pamh, LOG_WARNING, "SO_PEERCRED: %m");
        close(fd);
        return REACH_REFUSED;
    }
    if (cred.uid != pw->pw_uid) {
        pam_syslog(pamh, LOG_WARNING,
                   "refusing %s: listener runs as uid %lu, not %s; nothing sent",
                   addr.sun_path, (unsigned long)cred.uid, pw->pw_name);
        close(fd);
        return REACH_REFUSED;
    }
    *fd_out = fd;
    return REACH_OK;
}

static bool send_all(int fd, const unsigned char *p, size_t n, int64_t deadline)
{
    while (n > 0) {
        if (!set_timeouts(fd, deadline))
            return false;
        ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static bool recv_all(int fd, void *buf, size_t n, int64_t deadline)
{
    unsigned char *p = buf;
    while (n > 0) {
        if (!set_timeouts(fd, deadline))
            return false;
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = ECONNRESET;
            return false;
        }
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static const char *io_error(int err)
{
    return err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT ? "timed out" : strerror(err);
}

static void put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/*
 * The daemon's message is logged, so keep it to one line of printable ASCII: bytes from 0x80 up
 * could carry terminal controls (C1, 0x9b is CSI) or bidi overrides to whoever reads the log.
 */
static void sanitize(char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            *s = '?';
}

bool exchange(pam_handle_t *pamh, const char *phase, int fd, char op,
              const struct secret *const *fields, int nfields, int64_t deadline,
              int32_t *status, char *msg, size_t msgsize)
{
    size_t total = KW_REQUEST_HEAD_LENGTH;
    for (int i = 0; i < nfields; i++)
        total += KW_FIELD_LENGTH_SIZE + fields[i]->len;
    struct secret *req = secret_new(total);
    if (req == NULL) {
        pam_syslog(pamh, LOG_ERR, "cannot allocate the request");
        return false;
    }
    unsigned char *p = req->data;
    memcpy(p, KW_CONTROL_MAGIC, KW_CONTROL_MAGIC_LENGTH);
    p[4] = (unsigned char)op;
    p[5] = (unsigned char)nfields;
    p += KW_REQUEST_HEAD_LENGTH;
    for (int i = 0; i < nfields; i++) {
        put_u32(p, (uint32_t)fields[i]->len);
        memcpy(p + KW_FIELD_LENGTH_SIZE, fields[i]->data, fields[i]->len);
        p += KW_FIELD_LENGTH_SIZE + fields[i]->len;
    }
    bool sent = send_all(fd, req->data, total, deadline);
    int send_err = errno;
    secret_free(req);
    if (!sent) {
        pam_syslog(pamh, LOG_WARNING, "%s: sending to keywelld failed: %s", phase,
                   io_error(send_err));
        return false;
    }

    unsigned char head[KW_RESPONSE_HEAD_LENGTH];
    if (!recv_all(fd, head, sizeof head, deadline)) {
        pam_syslog(pamh, LOG_WARNING, "%s: no answer from keywelld: %s", phase, io_error(errno));
        return false;
    }
    if (memcmp(head, KW_CONTROL_MAGIC, KW_CONTROL_MAGIC_LENGTH) != 0) {
        pam_syslog(pamh, LOG_WARNING, "%s: keywelld answered with a bad magic", phase);
        return false;
    }
    *status = (int32_t)get_u32(head + 4);
    uint32_t len = get_u32(head + 8);
    size_t take = len < msgsize - 1 ? len : msgsize - 1;
    msg[0] = '\0';
    if (take > 0 && recv_all(fd, msg, take, deadline))
        msg[take] = '\0';
    else
        msg[0] = '\0';
    sanitize(msg);
    return true;
}
