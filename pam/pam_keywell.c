/*
 * pam_keywell — hands the login password to the user's keywelld, so that the `login` keychain
 * is unlocked at login, locked when the last session closes and re-wrapped when the password
 * changes. The wire format is in docs/control-protocol.md.
 *
 * This module is glue only: it never decides authentication, does no cryptography and never
 * turns a good login into a failed one. Every wait is bounded so that a broken or hung daemon
 * costs a login at most a few seconds, and every failure goes to syslog without secrets.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define PAM_SM_AUTH
#define PAM_SM_SESSION
#define PAM_SM_PASSWORD
#include <security/pam_ext.h>
#include <security/pam_modules.h>
#include <security/pam_modutil.h>

#ifndef KEYWELLD_PATH
#define KEYWELLD_PATH "/usr/local/bin/keywelld"
#endif

/* Built with -fvisibility=hidden: only the PAM entry points leave the module. */
#define KW_EXPORT __attribute__((visibility("default")))

enum {
    KW_MAX_FIELD = 8192,      /* protocol limit for one field */
    KW_PHASE_MS = 3000,       /* everything one PAM phase may spend on the daemon */
    KW_SPAWN_WAIT_MS = 2000,  /* how long a freshly started daemon gets to open its socket */
    KW_POLL_STEP_MS = 20,     /* pause between connection attempts while it starts */
    KW_MAX_MESSAGE = 512,     /* longest daemon message we log */
};

static const char KW_MAGIC[4] = {'K', 'W', 'C', '1'};
static const char KW_TOKEN_DATA[] = "pam_keywell_authtok";
#define KW_ERR_AUTH_FAILED (-25293) /* errSecAuthFailed: keychain password != login password */

struct options {
    bool debug;
    bool auto_start;
    const char *only_if; /* comma-separated services, or NULL for all */
    const char *daemon;  /* absolute path of keywelld */
};

/* Outcome of trying to reach the daemon. */
enum reach {
    REACH_OK,      /* connected, peer is the user */
    REACH_ABSENT,  /* no socket, or nobody listening: starting the daemon may help */
    REACH_REFUSED, /* something is wrong with ownership or the peer: send nothing, start nothing */
    REACH_TIMEOUT, /* the budget ran out */
};

/* ---------------------------------------------------------------- time */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------- secret memory */

/*
 * Secrets live in their own anonymous mapping: locked out of swap when the limit allows,
 * left out of core dumps, and wiped in forked children (the daemon spawn forks this process).
 * All best effort; explicit_bzero on release is the part that always happens.
 */
struct secret {
    size_t cap; /* size of the whole mapping, this header included */
    size_t len;
    unsigned char data[];
};

static struct secret *secret_new(size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    size_t need = sizeof(struct secret) + len;
    size_t cap = (need + (size_t)page - 1) / (size_t)page * (size_t)page;
    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)mlock(p, cap);
#ifdef MADV_DONTDUMP
    (void)madvise(p, cap, MADV_DONTDUMP);
#endif
#ifdef MADV_WIPEONFORK
    (void)madvise(p, cap, MADV_WIPEONFORK);
#endif
    struct secret *s = p;
    s->cap = cap;
    s->len = len;
    return s;
}

static void secret_free(struct secret *s)
{
    if (s == NULL)
        return;
    size_t cap = s->cap;
    explicit_bzero(s, cap);
    (void)munlock(s, cap);
    (void)munmap(s, cap);
}

static struct secret *secret_from_string(const char *str)
{
    size_t len = strlen(str);
    struct secret *s = secret_new(len);
    if (s != NULL)
        memcpy(s->data, str, len);
    return s;
}

/*
 * The password kept from auth, bound to the account pam_unix checked it for. PAM_USER may be
 * changed between auth and the session (sudo authenticates the caller, then opens the session
 * of the target user): the password then belongs to someone else and must never be sent.
 */
struct stash {
    uid_t uid;
    char *user;          /* the passwd name PAM_USER resolved to at auth */
    struct secret *tok;
};

static void stash_cleanup(pam_handle_t *pamh, void *data, int error_status)
{
    (void)pamh;
    (void)error_status;
    struct stash *k = data;
    if (k == NULL)
        return;
    secret_free(k->tok);
    free(k->user);
    free(k);
}

/* Keeps a copy of the password of `pw` in PAM's private data until open_session hands it over. */
static void stash_token(pam_handle_t *pamh, const struct passwd *pw, const char *tok)
{
    struct stash *k = calloc(1, sizeof *k);
    if (k != NULL) {
        k->uid = pw->pw_uid;
        k->user = strdup(pw->pw_name);
        k->tok = secret_from_string(tok);
    }
    if (k == NULL || k->user == NULL || k->tok == NULL) {
        stash_cleanup(pamh, k, 0);
        pam_syslog(pamh, LOG_ERR, "cannot allocate memory for the password");
        return;
    }
    if (pam_set_data(pamh, KW_TOKEN_DATA, k, stash_cleanup) != PAM_SUCCESS) {
        stash_cleanup(pamh, k, 0);
        pam_syslog(pamh, LOG_ERR, "cannot keep the password in PAM data");
    }
}

/* Replacing the data runs the old cleanup, which wipes it. */
static void drop_token(pam_handle_t *pamh)
{
    (void)pam_set_data(pamh, KW_TOKEN_DATA, NULL, NULL);
}

/*
 * The kept password, if it was checked for `pw` (same uid and same name). One kept for anybody
 * else is wiped here and NULL returned: the caller goes on as for a login without a password.
 */
static const struct secret *kept_token(pam_handle_t *pamh, const struct passwd *pw,
                                       const char *phase)
{
    const void *data = NULL;
    if (pam_get_data(pamh, KW_TOKEN_DATA, &data) != PAM_SUCCESS || data == NULL)
        return NULL;
    const struct stash *k = data;
    if (k->uid == pw->pw_uid && strcmp(k->user, pw->pw_name) == 0)
        return k->tok;
    pam_syslog(pamh, LOG_NOTICE,
               "%s: the password was checked for %s (uid %lu), but the user is now %s "
               "(uid %lu); it is dropped, not sent",
               phase, k->user, (unsigned long)k->uid, pw->pw_name, (unsigned long)pw->pw_uid);
    drop_token(pamh);
    return NULL;
}

/* ---------------------------------------------------------------- options and user */

static void parse_options(pam_handle_t *pamh, int argc, const char **argv, struct options *o)
{
    o->debug = false;
    o->auto_start = false;
    o->only_if = NULL;
    o->daemon = KEYWELLD_PATH;
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
        else
            pam_syslog(pamh, LOG_WARNING, "unknown option: %s", a);
    }
}

static bool service_listed(const char *list, const char *service)
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

/*
 * Everything a phase checks before doing anything: options, only_if, the target user.
 * Returns the user's passwd entry (owned by PAM), or NULL when the module has nothing to do.
 */
static const struct passwd *prologue(pam_handle_t *pamh, int argc, const char **argv,
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

/* ---------------------------------------------------------------- runtime folder */

/*
 * A folder we trust to hold the user's socket: a real directory (lstat: no symlink), owned by
 * the user, that nobody else can write to. Returns 0, or an errno value.
 */
static int check_private_dir(const char *path, uid_t uid, mode_t forbidden)
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

/*
 * Finds the user's runtime folder: the PAM environment (pam_systemd puts it there), else our
 * own environment, else /run/user/<uid>. A candidate that is not the user's own (su and sudo
 * carry the caller's XDG_RUNTIME_DIR) is passed over. Returns 0 with the path in buf.
 */
static int find_runtime_dir(pam_handle_t *pamh, const struct options *o, const struct passwd *pw,
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

/* ---------------------------------------------------------------- socket */

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

/*
 * Connects to <runtime>/keywell/control and makes sure the listener is the user's own process
 * (SO_PEERCRED). Nothing is sent before that check passes.
 */
static enum reach connect_daemon(pam_handle_t *pamh, const struct options *o,
                                 const struct passwd *pw, const char *rtdir, int64_t deadline,
                                 bool quiet, int *fd_out)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    char dir[sizeof addr.sun_path];
    if ((size_t)snprintf(dir, sizeof dir, "%s/keywell", rtdir) >= sizeof dir ||
        (size_t)snprintf(addr.sun_path, sizeof addr.sun_path, "%s/control", dir) >=
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

/*
 * Sends one request and reads the answer. The request, which may hold passwords, is built in
 * secret memory and wiped before returning. Returns false when no answer came.
 */
static bool exchange(pam_handle_t *pamh, const char *phase, int fd, char op,
                     const struct secret *const *fields, int nfields, int64_t deadline,
                     int32_t *status, char *msg, size_t msgsize)
{
    size_t total = 6;
    for (int i = 0; i < nfields; i++)
        total += 4 + fields[i]->len;
    struct secret *req = secret_new(total);
    if (req == NULL) {
        pam_syslog(pamh, LOG_ERR, "cannot allocate the request");
        return false;
    }
    unsigned char *p = req->data;
    memcpy(p, KW_MAGIC, 4);
    p[4] = (unsigned char)op;
    p[5] = (unsigned char)nfields;
    p += 6;
    for (int i = 0; i < nfields; i++) {
        put_u32(p, (uint32_t)fields[i]->len);
        memcpy(p + 4, fields[i]->data, fields[i]->len);
        p += 4 + fields[i]->len;
    }
    bool sent = send_all(fd, req->data, total, deadline);
    int send_err = errno;
    secret_free(req);
    if (!sent) {
        pam_syslog(pamh, LOG_WARNING, "%s: sending to keywelld failed: %s", phase,
                   io_error(send_err));
        return false;
    }

    unsigned char head[12];
    if (!recv_all(fd, head, sizeof head, deadline)) {
        pam_syslog(pamh, LOG_WARNING, "%s: no answer from keywelld: %s", phase, io_error(errno));
        return false;
    }
    if (memcmp(head, KW_MAGIC, 4) != 0) {
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

/* ---------------------------------------------------------------- starting the daemon */

/* What a spawned grandchild reports through the status pipe when it cannot exec. */
enum spawn_stage { STAGE_SETSID = 1, STAGE_GROUPS, STAGE_GID, STAGE_UID, STAGE_VERIFY, STAGE_EXEC };
static const char *const stage_names[] = {
    "?", "setsid", "setgroups", "setgid", "setuid", "dropping root", "exec",
};

struct spawn_plan {
    const char *path;
    char *argv[2];
    char *envp[8];
    gid_t *groups;
    int ngroups;
    uid_t uid;
    gid_t gid;
    bool switch_identity; /* false when we already run as the user */
    const char *home;
    bool home_ok;
};

/* Async-signal-safe from here on: only system calls between fork and exec. */
static void report_and_exit(int fd, int stage)
{
    int msg[2] = {stage, errno};
    ssize_t r = write(fd, msg, sizeof msg);
    (void)r;
    _exit(127);
}

/* Closes every descriptor from `lowest` up, except `keep` (which is >= lowest). */
static void close_from(int lowest, int keep)
{
    /* close_range exists since Linux 5.9; fall back to a loop on older kernels. */
    if ((keep == lowest || close_range((unsigned)lowest, (unsigned)keep - 1, 0) == 0) &&
        close_range((unsigned)keep + 1, ~0U, 0) == 0)
        return;
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = lowest; fd < max; fd++)
        if (fd != keep)
            close(fd);
}

static void grandchild(const struct spawn_plan *s, int status_fd)
{
    /* Keep the status pipe above stdio; it closes by itself on a successful exec. */
    int st = fcntl(status_fd, F_DUPFD_CLOEXEC, 3);
    if (st < 0)
        _exit(127);

    /* A session of its own: the login's terminal hangup must not reach the daemon. */
    if (setsid() < 0)
        report_and_exit(st, STAGE_SETSID);

    if (s->switch_identity) {
        if (setgroups((size_t)s->ngroups, s->groups) != 0)
            report_and_exit(st, STAGE_GROUPS);
        if (setresgid(s->gid, s->gid, s->gid) != 0)
            report_and_exit(st, STAGE_GID);
        if (setresuid(s->uid, s->uid, s->uid) != 0)
            report_and_exit(st, STAGE_UID);
    }
    uid_t ru, eu, su;
    gid_t rg, eg, sg;
    if (getresuid(&ru, &eu, &su) != 0 || ru != s->uid || eu != s->uid || su != s->uid ||
        getresgid(&rg, &eg, &sg) != 0 || rg != s->gid || eg != s->gid || sg != s->gid)
        report_and_exit(st, STAGE_VERIFY);
    if (s->uid != 0 && setuid(0) == 0) {
        errno = EPERM;
        report_and_exit(st, STAGE_VERIFY);
    }

    /* After dropping root, so a root-squashed network home behaves as for the user. */
    if ((!s->home_ok || chdir(s->home) != 0) && chdir("/") != 0)
        report_and_exit(st, STAGE_VERIFY);
    umask(077);

    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
    } else {
        /* Closed stdio rather than the login's terminal, pipes or log. */
        close(0);
        close(1);
        close(2);
    }
    close_from(3, st);

    /* Handlers vanish at exec but ignored signals and the mask would be inherited. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        (void)sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);

    execve(s->path, s->argv, s->envp);
    report_and_exit(st, STAGE_EXEC);
}

/*
 * The daemon binary gets the user's password, so only a file that root or the user controls
 * may be started: absolute path, regular, executable, nobody else can write it.
 */
static bool daemon_usable(pam_handle_t *pamh, const char *path, uid_t uid)
{
    struct stat st;
    if (path[0] != '/') {
        pam_syslog(pamh, LOG_WARNING, "daemon path %s is not absolute", path);
        return false;
    }
    if (stat(path, &st) != 0) {
        pam_syslog(pamh, LOG_WARNING, "cannot start keywelld %s: %m", path);
        return false;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0) {
        pam_syslog(pamh, LOG_WARNING, "cannot start keywelld %s: not an executable file", path);
        return false;
    }
    if ((st.st_mode & 022) != 0 || (st.st_uid != 0 && st.st_uid != uid)) {
        pam_syslog(pamh, LOG_WARNING, "refusing to start %s: others can write it", path);
        return false;
    }
    return true;
}

static char *env_entry(const char *name, const char *value)
{
    char *e = NULL;
    if (asprintf(&e, "%s=%s", name, value) < 0)
        return NULL;
    return e;
}

/* Everything the child needs is prepared here: after fork only system calls are safe. */
static bool plan_spawn(pam_handle_t *pamh, const struct options *o, const struct passwd *pw,
                       const char *rtdir, struct spawn_plan *s)
{
    memset(s, 0, sizeof *s);
    s->path = o->daemon;
    s->argv[0] = (char *)o->daemon;
    s->uid = pw->pw_uid;
    s->gid = pw->pw_gid;
    s->home = pw->pw_dir;
    struct stat st;
    s->home_ok = pw->pw_dir != NULL && pw->pw_dir[0] == '/' && stat(pw->pw_dir, &st) == 0 &&
                 S_ISDIR(st.st_mode);

    uid_t me = geteuid();
    if (me == pw->pw_uid && getuid() == pw->pw_uid) {
        s->switch_identity = false;
    } else if (me == 0) {
        s->switch_identity = true;
        int n = 32;
        for (;;) {
            gid_t *g = realloc(s->groups, (size_t)n * sizeof *g);
            if (g == NULL)
                return false;
            s->groups = g;
            int want = n;
            if (getgrouplist(pw->pw_name, pw->pw_gid, s->groups, &want) >= 0) {
                s->ngroups = want;
                break;
            }
            if (want <= n || want > 65536)
                return false;
            n = want;
        }
    } else {
        pam_syslog(pamh, LOG_NOTICE, "not privileged to start keywelld for %s", pw->pw_name);
        return false;
    }

    const char *bus = pam_getenv(pamh, "DBUS_SESSION_BUS_ADDRESS");
    int i = 0;
    s->envp[i++] = env_entry("HOME", pw->pw_dir ? pw->pw_dir : "/");
    s->envp[i++] = env_entry("USER", pw->pw_name);
    s->envp[i++] = env_entry("LOGNAME", pw->pw_name);
    s->envp[i++] = env_entry("SHELL", pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh");
    s->envp[i++] = env_entry("PATH", "/usr/local/bin:/usr/bin:/bin");
    s->envp[i++] = env_entry("XDG_RUNTIME_DIR", rtdir);
    if (bus != NULL && *bus != '\0')
        s->envp[i++] = env_entry("DBUS_SESSION_BUS_ADDRESS", bus);
    for (int j = 0; j < i; j++)
        if (s->envp[j] == NULL)
            return false;
    return true;
}

static void free_plan(struct spawn_plan *s)
{
    for (size_t j = 0; j < sizeof s->envp / sizeof s->envp[0]; j++)
        free(s->envp[j]);
    free(s->groups);
}

/*
 * Starts keywelld as the user, detached: fork, the child forks the daemon and exits at once,
 * and we reap the child ourselves. The login process is left with no child of ours to reap.
 * SIGCHLD is blocked meanwhile so that a host handler cannot reap our child first; the
 * host sees one SIGCHLD with nothing of its own to collect once the mask is restored.
 * Returns true when the daemon was exec'd.
 */
static bool start_daemon(pam_handle_t *pamh, const struct options *o, const struct passwd *pw,
                         const char *rtdir, int64_t deadline)
{
    if (!daemon_usable(pamh, o->daemon, pw->pw_uid))
        return false;
    struct spawn_plan plan;
    if (!plan_spawn(pamh, o, pw, rtdir, &plan)) {
        pam_syslog(pamh, LOG_ERR, "cannot prepare to start keywelld");
        free_plan(&plan);
        return false;
    }

    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        pam_syslog(pamh, LOG_ERR, "pipe: %m");
        free_plan(&plan);
        return false;
    }

    sigset_t chld, saved;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &saved);

    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        pid_t gc = fork();
        if (gc == 0)
            grandchild(&plan, pipefd[1]);
        _exit(gc < 0 ? 1 : 0);
    }
    int fork_err = errno;
    close(pipefd[1]);
    int wstatus = 0;
    bool intermediate_ok = false;
    if (pid > 0) {
        pid_t r;
        while ((r = waitpid(pid, &wstatus, 0)) < 0 && errno == EINTR) {
        }
        /* ECHILD: the host ignores SIGCHLD and the kernel reaped it; assume it forked. */
        intermediate_ok = r < 0 || (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    }
    sigprocmask(SIG_SETMASK, &saved, NULL);
    free_plan(&plan);

    if (pid < 0) {
        close(pipefd[0]);
        pam_syslog(pamh, LOG_ERR, "fork: %s", strerror(fork_err));
        return false;
    }
    if (!intermediate_ok) {
        close(pipefd[0]);
        pam_syslog(pamh, LOG_ERR, "cannot start keywelld: second fork failed");
        return false;
    }

    /* EOF means exec succeeded (the pipe is close-on-exec); a report means it did not. */
    int report[2] = {0, 0};
    ssize_t got = 0;
    int64_t left = deadline - now_ms();
    struct pollfd pfd = {.fd = pipefd[0], .events = POLLIN};
    if (left > 0 && poll(&pfd, 1, (int)(left < 1000 ? left : 1000)) > 0) {
        while ((got = read(pipefd[0], report, sizeof report)) < 0 && errno == EINTR) {
        }
    }
    close(pipefd[0]);
    if (got == (ssize_t)sizeof report) {
        int stage = report[0] >= STAGE_SETSID && report[0] <= STAGE_EXEC ? report[0] : 0;
        pam_syslog(pamh, LOG_WARNING, "cannot start keywelld %s for %s: %s failed: %s",
                   o->daemon, pw->pw_name, stage_names[stage], strerror(report[1]));
        return false;
    }
    if (o->debug)
        pam_syslog(pamh, LOG_DEBUG, "started %s for %s", o->daemon, pw->pw_name);
    return true;
}

/* ---------------------------------------------------------------- one conversation */

/*
 * Reaches the daemon (starting it when allowed and needed), sends one request and logs the
 * answer. Returns true when the daemon answered 0.
 */
static bool talk(pam_handle_t *pamh, const struct options *o, const struct passwd *pw,
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
    if (status == 0) {
        if (o->debug)
            pam_syslog(pamh, LOG_DEBUG, "%s: keywelld: ok%s%s", phase, *msg ? ": " : "", msg);
        return true;
    }
    if (status == KW_ERR_AUTH_FAILED)
        pam_syslog(pamh, LOG_NOTICE,
                   "%s: the login keychain of %s has a different password than the login; "
                   "it stays locked (%d: %s)",
                   phase, pw->pw_name, (int)status, msg);
    else
        pam_syslog(pamh, LOG_WARNING, "%s: keywelld answered %d: %s", phase, (int)status, msg);
    return false;
}

/* ---------------------------------------------------------------- PAM entry points */

KW_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)flags;
    struct options o;
    const struct passwd *pw = prologue(pamh, argc, argv, &o, "auth");
    if (pw == NULL)
        return PAM_IGNORE;
    /* The module sits after pam_unix: take the token it read, never prompt for one. */
    const void *tok = NULL;
    if (pam_get_item(pamh, PAM_AUTHTOK, &tok) != PAM_SUCCESS || tok == NULL ||
        *(const char *)tok == '\0') {
        if (o.debug)
            pam_syslog(pamh, LOG_DEBUG, "auth: no password to keep for %s", pw->pw_name);
        return PAM_IGNORE;
    }
    stash_token(pamh, pw, tok);
    if (o.debug)
        pam_syslog(pamh, LOG_DEBUG, "auth: kept the password of %s for the session", pw->pw_name);
    return PAM_IGNORE;
}

KW_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_IGNORE;
}

KW_EXPORT int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)flags;
    struct options o;
    const struct passwd *pw = prologue(pamh, argc, argv, &o, "open_session");
    if (pw == NULL) {
        drop_token(pamh);
        return PAM_IGNORE;
    }

    const struct secret *tok = kept_token(pamh, pw, "open_session");
    if (tok != NULL && tok->len > KW_MAX_FIELD) {
        pam_syslog(pamh, LOG_NOTICE, "open_session: password too long to hand over");
        tok = NULL;
    }
    /* Without a password (ssh keys, su from root, sudo) the session is counted all the same. */
    const struct secret *fields[1] = {tok};
    bool ok = talk(pamh, &o, pw, o.auto_start, 'O', fields, tok ? 1 : 0, "open_session");
    /* Handed over or not, the login process has no further use for the password. */
    drop_token(pamh);
    return ok ? PAM_SUCCESS : PAM_IGNORE;
}

KW_EXPORT int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)flags;
    struct options o;
    const struct passwd *pw = prologue(pamh, argc, argv, &o, "close_session");
    if (pw == NULL)
        return PAM_IGNORE;
    /* No daemon, nothing unlocked: never start one just to lock. */
    bool ok = talk(pamh, &o, pw, false, 'C', NULL, 0, "close_session");
    return ok ? PAM_SUCCESS : PAM_IGNORE;
}

KW_EXPORT int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    if (flags & PAM_PRELIM_CHECK)
        return PAM_IGNORE;
    if (!(flags & PAM_UPDATE_AUTHTOK))
        return PAM_IGNORE;
    struct options o;
    const struct passwd *pw = prologue(pamh, argc, argv, &o, "chauthtok");
    if (pw == NULL)
        return PAM_IGNORE;

    const void *old = NULL, *new = NULL;
    (void)pam_get_item(pamh, PAM_OLDAUTHTOK, &old);
    (void)pam_get_item(pamh, PAM_AUTHTOK, &new);
    if (old == NULL || new == NULL) {
        /* e.g. root set the password: without the old one the keychain cannot follow. */
        pam_syslog(pamh, LOG_NOTICE,
                   "chauthtok: old or new password not available for %s; "
                   "the login keychain keeps its password",
                   pw->pw_name);
        return PAM_IGNORE;
    }
    struct secret *s_old = secret_from_string(old);
    struct secret *s_new = secret_from_string(new);
    bool ok = false;
    if (s_old == NULL || s_new == NULL) {
        pam_syslog(pamh, LOG_ERR, "chauthtok: cannot allocate memory");
    } else if (s_old->len > KW_MAX_FIELD || s_new->len > KW_MAX_FIELD) {
        pam_syslog(pamh, LOG_NOTICE, "chauthtok: password too long to hand over");
    } else {
        const struct secret *fields[2] = {s_old, s_new};
        ok = talk(pamh, &o, pw, o.auto_start, 'P', fields, 2, "chauthtok");
    }
    secret_free(s_old);
    secret_free(s_new);

    /* An expired password changed during login: the session must unlock with the new one. */
    if (kept_token(pamh, pw, "chauthtok") != NULL && ok)
        stash_token(pamh, pw, new);
    return ok ? PAM_SUCCESS : PAM_IGNORE;
}
