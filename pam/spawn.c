#define _GNU_SOURCE
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>

#include "deadline.h"

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
bool daemon_usable(pam_handle_t *pamh, const char *path, uid_t uid)
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
bool start_daemon(pam_handle_t *pamh, const struct options *o, const struct passwd *pw,
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

