/*
 * The wire client (control_client.c) against a server in the test: a thread on the other end of
 * a socketpair for the frames, and real sockets in throwaway folders for connect_daemon's checks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control_client.h"
#include "deadline.h"
#include "harness.h"

/* What the fake daemon does with one connection. */
struct server {
    int fd;
    size_t expect;              /* request bytes to read before answering */
    const unsigned char *reply; /* sent in pieces of `chunk` bytes (0: all at once) */
    size_t reply_len;
    size_t chunk;
    bool close_first;          /* close before reading anything */
    unsigned char got[16384];  /* the request as received */
    size_t got_len;
};

static bool read_exactly(int fd, unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static void *serve(void *arg)
{
    struct server *s = arg;
    if (s->close_first) {
        close(s->fd);
        return NULL;
    }
    if (read_exactly(s->fd, s->got, s->expect))
        s->got_len = s->expect;
    size_t step = s->chunk ? s->chunk : s->reply_len;
    for (size_t off = 0; off < s->reply_len; off += step) {
        size_t n = s->reply_len - off < step ? s->reply_len - off : step;
        if (send(s->fd, s->reply + off, n, MSG_NOSIGNAL) != (ssize_t)n)
            break;
    }
    /* Wait for the client to hang up, then close: the client decides how much it reads. */
    unsigned char sink[256];
    while (recv(s->fd, sink, sizeof sink, 0) > 0) {
    }
    close(s->fd);
    return NULL;
}

struct answer {
    bool answered;
    int32_t status;
    char msg[KW_MAX_MESSAGE];
};

/* One exchange against `s` over a socketpair, with `budget_ms` for the whole of it. */
static struct answer run(struct server *s, char op, const char *const *fields, int nfields,
                         int budget_ms)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        exit(2);
    s->fd = pair[1];
    pthread_t thread;
    if (pthread_create(&thread, NULL, serve, s) != 0)
        exit(2);

    struct secret *secrets[4] = {0};
    const struct secret *list[4] = {0};
    for (int i = 0; i < nfields; i++)
        list[i] = secrets[i] = secret_from_string(fields[i]);
    pam_handle_t *pamh = test_pam("keywell-unit", NULL);
    struct answer a = {0};
    a.answered = exchange(pamh, "test", pair[0], op, list, nfields, now_ms() + budget_ms,
                          &a.status, a.msg, sizeof a.msg);
    close(pair[0]);
    pthread_join(thread, NULL);
    pam_end(pamh, PAM_SUCCESS);
    for (int i = 0; i < nfields; i++)
        secret_free(secrets[i]);
    return a;
}

static const unsigned char OK_EMPTY[] = {'K', 'W', 'C', '1', 0, 0, 0, 0, 0, 0, 0, 0};

/* The example of docs/control-protocol.md §2, byte for byte. */
static void open_session_frame(void)
{
    static const unsigned char expected[] = {0x4B, 0x57, 0x43, 0x31, 0x4F, 0x01,
                                             0x00, 0x00, 0x00, 0x02, 0x70, 0x77};
    struct server s = {.expect = sizeof expected, .reply = OK_EMPTY, .reply_len = sizeof OK_EMPTY};
    const char *fields[] = {"pw"};
    struct answer a = run(&s, KW_OP_OPEN_SESSION, fields, 1, 5000);
    CHECK(s.got_len == sizeof expected && memcmp(s.got, expected, sizeof expected) == 0);
    CHECK(a.answered);
    CHECK(a.status == KW_STATUS_OK);
    CHECK(a.msg[0] == '\0');
}

static void change_password_and_fieldless_frames(void)
{
    static const unsigned char password[] = {'K', 'W', 'C', '1', 'P', 2,  0,   0,   0,   3,
                                             'o', 'l', 'd', 0,   0,   0, 4, 'n', 'e', 'w', '!'};
    struct server s = {.expect = sizeof password, .reply = OK_EMPTY, .reply_len = sizeof OK_EMPTY};
    const char *fields[] = {"old", "new!"};
    struct answer a = run(&s, KW_OP_CHANGE_PASSWORD, fields, 2, 5000);
    CHECK(s.got_len == sizeof password && memcmp(s.got, password, sizeof password) == 0);
    CHECK(a.answered && a.status == 0);

    static const unsigned char close_session[] = {'K', 'W', 'C', '1', 'C', 0};
    struct server c = {.expect = sizeof close_session, .reply = OK_EMPTY,
                       .reply_len = sizeof OK_EMPTY};
    a = run(&c, KW_OP_CLOSE_SESSION, NULL, 0, 5000);
    CHECK(c.got_len == sizeof close_session &&
          memcmp(c.got, close_session, sizeof close_session) == 0);
    CHECK(a.answered && a.status == 0);
}

/* A field of the largest size the protocol allows goes out whole, its length in big-endian. */
static void largest_field(void)
{
    char *big = malloc(KW_MAX_FIELD + 1);
    memset(big, 'a', KW_MAX_FIELD);
    big[KW_MAX_FIELD] = '\0';
    struct server s = {.expect = 6 + 4 + KW_MAX_FIELD, .reply = OK_EMPTY,
                       .reply_len = sizeof OK_EMPTY};
    const char *fields[] = {big};
    struct answer a = run(&s, KW_OP_OPEN_SESSION, fields, 1, 5000);
    CHECK(a.answered);
    CHECK(s.got_len == s.expect);
    CHECK(s.got[6] == 0 && s.got[7] == 0 && s.got[8] == 0x20 && s.got[9] == 0x00);
    CHECK(s.got[10] == 'a' && s.got[s.expect - 1] == 'a');
    free(big);
}

/* An answer that arrives a byte at a time is read whole; the status is a signed i32. */
static void answer_in_single_bytes(void)
{
    static const unsigned char reply[] = {'K', 'W', 'C', '1', 0xFF, 0xFF, 0x9D, 0x33,
                                          0,   0,   0,   5,   'd',  'r',  'i',  'f', 't'};
    struct server s = {.expect = 6, .reply = reply, .reply_len = sizeof reply, .chunk = 1};
    struct answer a = run(&s, KW_OP_PING, NULL, 0, 5000);
    CHECK(a.answered);
    CHECK(a.status == KW_STATUS_AUTH_FAILED);
    CHECK(strcmp(a.msg, "drift") == 0);
}

static void bad_magic_is_no_answer(void)
{
    static const unsigned char reply[] = {'K', 'W', 'C', '2', 0, 0, 0, 0, 0, 0, 0, 0};
    struct server s = {.expect = 6, .reply = reply, .reply_len = sizeof reply};
    struct answer a = run(&s, KW_OP_PING, NULL, 0, 5000);
    CHECK(!a.answered);
}

static void short_answers_are_no_answer(void)
{
    struct server s = {.expect = 6, .reply = OK_EMPTY, .reply_len = 7}; /* head cut short */
    CHECK(!run(&s, KW_OP_PING, NULL, 0, 5000).answered);
    struct server none = {.expect = 6, .reply = OK_EMPTY, .reply_len = 0}; /* hangs up */
    CHECK(!run(&none, KW_OP_PING, NULL, 0, 5000).answered);
}

/* The daemon gone before the request: a failed send, no SIGPIPE, no answer. */
static void peer_gone_before_the_request(void)
{
    struct server s = {.close_first = true};
    const char *fields[] = {"pw"};
    CHECK(!run(&s, KW_OP_OPEN_SESSION, fields, 1, 5000).answered);
}

/* A daemon that never answers costs the phase its budget, no more. */
static void silent_daemon_runs_out_the_budget(void)
{
    struct server s = {.expect = 6, .reply_len = 0};
    int64_t deadline = now_ms() + 300;
    pthread_t thread;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        exit(2);
    s.fd = pair[1];
    pthread_create(&thread, NULL, serve, &s);
    pam_handle_t *pamh = test_pam("keywell-unit", NULL);
    int32_t status = 1;
    char msg[KW_MAX_MESSAGE];
    CHECK(!exchange(pamh, "test", pair[0], KW_OP_PING, NULL, 0, deadline, &status, msg,
                    sizeof msg));
    CHECK(now_ms() >= deadline - 10); /* gave up because the budget ran out, not earlier */
    close(pair[0]);
    pthread_join(thread, NULL);
    pam_end(pamh, PAM_SUCCESS);
}

/* A message longer than the module logs: the first 511 bytes, the rest left unread. */
static void oversize_message_is_cut(void)
{
    size_t body = 100000;
    unsigned char *reply = malloc(12 + body);
    memcpy(reply, "KWC1", 4);
    memset(reply + 4, 0, 4);
    reply[8] = 0x00, reply[9] = 0x01, reply[10] = 0x86, reply[11] = 0xA0; /* 100000 */
    memset(reply + 12, 'm', body);
    struct server s = {.expect = 6, .reply = reply, .reply_len = 12 + body};
    struct answer a = run(&s, KW_OP_PING, NULL, 0, 5000);
    CHECK(a.answered && a.status == 0);
    CHECK(strlen(a.msg) == KW_MAX_MESSAGE - 1);
    CHECK(a.msg[0] == 'm' && a.msg[KW_MAX_MESSAGE - 2] == 'm');
    free(reply);

    /* A length far beyond what comes: the status stands, the missing message is empty. */
    static const unsigned char lying[] = {'K', 'W', 'C', '1', 0, 0, 0, 0,
                                          0xFF, 0xFF, 0xFF, 0xFF, 'h', 'i'};
    struct server l = {.expect = 6, .reply = lying, .reply_len = sizeof lying};
    a = run(&l, KW_OP_PING, NULL, 0, 5000);
    CHECK(a.answered && a.status == 0);
    CHECK(a.msg[0] == '\0');
}

/* The message goes to syslog: controls and bytes from 0x7f up become '?'. */
static void message_is_made_printable(void)
{
    static const unsigned char reply[] = {'K', 'W', 'C', '1', 0, 0, 0, 0, 0, 0, 0, 9,
                                          'a', '\n', 0x1b, '[', 0x7f, 0x9b, 0xc3, 0xa9, 'z'};
    struct server s = {.expect = 6, .reply = reply, .reply_len = sizeof reply};
    struct answer a = run(&s, KW_OP_PING, NULL, 0, 5000);
    CHECK(a.answered);
    CHECK(strcmp(a.msg, "a??[????z") == 0);
}

/* ------------------------------------------------------------ connect_daemon */

struct folder {
    char *rt;     /* the runtime folder */
    char dir[256]; /* rt/keywell */
    char sock[300];
};

static struct folder make_folder(bool with_dir)
{
    struct folder f = {.rt = temp_dir()};
    snprintf(f.dir, sizeof f.dir, "%s/" KW_CONTROL_FOLDER, f.rt);
    snprintf(f.sock, sizeof f.sock, "%s/" KW_CONTROL_SOCKET, f.dir);
    if (with_dir && mkdir(f.dir, 0700) != 0)
        exit(2);
    return f;
}

static int listen_on(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 4) != 0)
        exit(2);
    return fd;
}

static enum reach reach(const struct folder *f, const struct passwd *pw, int *fd)
{
    pam_handle_t *pamh = test_pam("keywell-unit", NULL);
    struct options o = {.debug = true};
    *fd = -1;
    enum reach r = connect_daemon(pamh, &o, pw, f->rt, now_ms() + 5000, false, fd);
    pam_end(pamh, PAM_SUCCESS);
    return r;
}

static void absent_daemon(void)
{
    struct passwd pw = me();
    int fd;
    struct folder f = make_folder(false);
    CHECK(reach(&f, &pw, &fd) == REACH_ABSENT); /* no keywell/ folder */
    CHECK(mkdir(f.dir, 0700) == 0);
    CHECK(reach(&f, &pw, &fd) == REACH_ABSENT); /* no socket */
    int l = listen_on(f.sock);
    close(l);
    CHECK(reach(&f, &pw, &fd) == REACH_ABSENT); /* a stale socket nobody listens on */
    remove_tree(f.rt);
    free(f.rt);
}

static void unsafe_places_are_refused(void)
{
    struct passwd pw = me();
    int fd;
    struct folder f = make_folder(true);
    CHECK(chmod(f.dir, 0750) == 0);
    CHECK(reach(&f, &pw, &fd) == REACH_REFUSED); /* others may look in */
    CHECK(chmod(f.dir, 0700) == 0);

    FILE *file = fopen(f.sock, "w"); /* not a socket */
    fclose(file);
    CHECK(reach(&f, &pw, &fd) == REACH_REFUSED);
    remove_tree(f.rt);
    free(f.rt);

    /* keywell/ a symlink to a folder that would pass: refused all the same. */
    struct folder real = make_folder(true);
    struct folder g = make_folder(false);
    CHECK(symlink(real.dir, g.dir) == 0);
    int l = listen_on(real.sock);
    CHECK(reach(&g, &pw, &fd) == REACH_REFUSED);
    close(l);
    remove_tree(g.rt);
    remove_tree(real.rt);
    free(g.rt);
    free(real.rt);

    /* A runtime path so long that the socket's would not fit sun_path. */
    struct folder deep = make_folder(false);
    char longer[200];
    snprintf(longer, sizeof longer, "%s/%0100d", deep.rt, 0);
    CHECK(mkdir(longer, 0700) == 0);
    free(deep.rt);
    deep.rt = longer;
    CHECK(reach(&deep, &pw, &fd) == REACH_REFUSED);
    remove_tree(longer);
}

static void reaches_the_users_listener(void)
{
    struct passwd pw = me();
    int fd;
    struct folder f = make_folder(true);
    int l = listen_on(f.sock);
    CHECK(reach(&f, &pw, &fd) == REACH_OK);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);

    if (need_root("hand the folder to another user")) {
        /* Folder and socket owned by someone else: refused before connecting. */
        struct passwd other = someone(54321, "other");
        CHECK(reach(&f, &other, &fd) == REACH_REFUSED);
    }
    close(l);
    remove_tree(f.rt);
    free(f.rt);
}

/*
 * A listener that is not the user's (the folder and socket are, but the process is not):
 * refused after connect, with not one byte sent. The listener, in a child that gives up root
 * before listen(), counts what it receives.
 */
static void foreign_listener_gets_nothing(void)
{
    if (!need_root("run a listener as another uid"))
        return;
    struct passwd pw = me(); /* root */
    struct folder f = make_folder(true);
    int report[2];
    if (pipe(report) != 0)
        exit(2);
    pid_t child = fork();
    if (child == 0) {
        close(report[0]);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        strcpy(addr.sun_path, f.sock);
        if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
            _exit(2);
        /* The socket file stays root's; the credentials the peer sees are taken at listen(). */
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0 ||
            listen(fd, 4) != 0)
            _exit(2);
        char ready = 'r';
        if (write(report[1], &ready, 1) != 1)
            _exit(2);
        int c = accept(fd, NULL, NULL);
        long total = 0;
        char buf[256];
        ssize_t n;
        while (c >= 0 && (n = read(c, buf, sizeof buf)) > 0)
            total += n;
        if (write(report[1], &total, sizeof total) != (ssize_t)sizeof total)
            _exit(2);
        _exit(0);
    }
    close(report[1]);
    char ready = 0;
    CHECK(read(report[0], &ready, 1) == 1 && ready == 'r');
    int fd;
    CHECK(reach(&f, &pw, &fd) == REACH_REFUSED);
    if (fd >= 0) /* reached after all: hang up so the listener can report */
        close(fd);
    long received = -1;
    CHECK(read(report[0], &received, sizeof received) == (ssize_t)sizeof received);
    CHECK(received == 0);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(report[0]);
    remove_tree(f.rt);
    free(f.rt);
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* a send without MSG_NOSIGNAL would kill the test */
    RUN(open_session_frame);
    RUN(change_password_and_fieldless_frames);
    RUN(largest_field);
    RUN(answer_in_single_bytes);
    RUN(bad_magic_is_no_answer);
    RUN(short_answers_are_no_answer);
    RUN(peer_gone_before_the_request);
    RUN(silent_daemon_runs_out_the_budget);
    RUN(oversize_message_is_cut);
    RUN(message_is_made_printable);
    RUN(absent_daemon);
    RUN(unsafe_places_are_refused);
    RUN(reaches_the_users_listener);
    RUN(foreign_listener_gets_nothing);
    return finish();
}
