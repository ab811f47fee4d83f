/*
 * pam_keywell's reader of the daemon's answers (pam/control_client.c, `exchange`), under
 * libFuzzer and AddressSanitizer: the module runs inside every login process, and whatever
 * listens on the user's control socket writes these bytes (docs/control-protocol.md §2).
 *
 * Input: the first byte sizes the caller's message buffer (1..KW_MAX_MESSAGE); the rest is what
 * the daemon's end of a socket pair answers before it stops writing. `exchange` must answer true
 * exactly when a whole head with the right magic came, with the head's status; the message is
 * NUL-terminated inside the buffer, printable ASCII only, and is the answer's message cut to the
 * buffer (and at its first NUL), or empty when the answer ends early. Never a read or write
 * outside a buffer (ASan), no undefined behaviour (UBSan).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <security/pam_appl.h>

#include "control_client.h"
#include "deadline.h"
#include "keywell-control.h"
#include "secret.h"

/* The module logs every failed exchange through pam_syslog; millions of runs must not reach the
 * machine's log. These take the place of libc's for this program and libpam. */
void vsyslog(int priority, const char *format, va_list ap) { (void)priority; (void)format; (void)ap; }
void __vsyslog_chk(int priority, int flag, const char *format, va_list ap) { (void)priority; (void)flag; (void)format; (void)ap; }
void syslog(int priority, const char *format, ...) { (void)priority; (void)format; }
void __syslog_chk(int priority, int flag, const char *format, ...) { (void)priority; (void)flag; (void)format; }

static pam_handle_t *pamh;

static int no_conversation(int n, const struct pam_message **msg, struct pam_response **resp, void *data)
{
    (void)n; (void)msg; (void)resp; (void)data;
    return PAM_CONV_ERR;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    static const struct pam_conv conv = {no_conversation, NULL};
    if (pam_start("keywell-fuzz", "nobody", &conv, &pamh) != PAM_SUCCESS) {
        fprintf(stderr, "pam_start failed\n");
        abort();
    }
    return 0;
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A socket pair's buffer takes this much before anything is read. */
    if (size < 1 || size > 60000)
        return 0;
    size_t msgsize = 1 + data[0] % KW_MAX_MESSAGE;
    const uint8_t *answer = data + 1;
    size_t len = size - 1;

    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        abort();
    if (len > 0 && send(pair[1], answer, len, MSG_NOSIGNAL) != (ssize_t)len)
        abort();
    /* The daemon's end stops writing but stays open: the request still has somewhere to go. */
    shutdown(pair[1], SHUT_WR);

    struct secret *field = secret_from_string("fuzz password");
    if (field == NULL)
        abort();
    const struct secret *fields[] = {field};
    int32_t status = 0x5a5a5a5a;
    char *msg = malloc(msgsize); /* exactly msgsize: ASan sees a byte past it */
    if (msg == NULL)
        abort();
    memset(msg, 'x', msgsize);
    bool answered = exchange(pamh, "fuzz", pair[0], KW_OP_OPEN_SESSION, fields, 1, now_ms() + KW_PHASE_MS,
                             &status, msg, msgsize);
    secret_free(field);
    close(pair[0]);
    close(pair[1]);

    bool whole_head = len >= KW_RESPONSE_HEAD_LENGTH && memcmp(answer, KW_CONTROL_MAGIC, KW_CONTROL_MAGIC_LENGTH) == 0;
    if (answered != whole_head) {
        fprintf(stderr, "answered %d for %zu bytes\n", answered, len);
        abort();
    }
    if (answered) {
        if (status != (int32_t)get_u32(answer + 4))
            abort();
        uint32_t told = get_u32(answer + 8);
        size_t take = told < msgsize - 1 ? told : msgsize - 1;
        char expected[KW_MAX_MESSAGE];
        size_t n = 0;
        if (take > 0 && len - KW_RESPONSE_HEAD_LENGTH >= take) {
            for (; n < take && answer[KW_RESPONSE_HEAD_LENGTH + n] != 0; n++) {
                uint8_t c = answer[KW_RESPONSE_HEAD_LENGTH + n];
                expected[n] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
            }
        }
        expected[n] = '\0';
        if (strnlen(msg, msgsize) >= msgsize || strcmp(msg, expected) != 0) {
            fprintf(stderr, "message %s, expected %s\n", msg, expected);
            abort();
        }
    }
    free(msg);
    return 0;
}
