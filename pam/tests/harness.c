#define _GNU_SOURCE
#include "harness.h"

#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int kw_failures = 0;
static int ran = 0, skipped = 0;
static bool skipping = false;

void run_test(const char *name, void (*test)(void))
{
    int before = kw_failures;
    skipping = false;
    test();
    ran++;
    if (skipping)
        skipped++;
    printf("%s %s\n", kw_failures > before ? "FAIL" : skipping ? "skip" : "ok  ", name);
}

int finish(void)
{
    printf("%d tests, %d skipped, %d failed checks\n", ran, skipped, kw_failures);
    return kw_failures == 0 ? 0 : 1;
}

/* CI set to anything but empty, 0, false or no (.ci/run sets CI=true). */
static bool in_ci(void)
{
    const char *ci = getenv("CI");
    return ci != NULL && *ci != '\0' && strcmp(ci, "0") != 0 && strcasecmp(ci, "false") != 0 &&
           strcasecmp(ci, "no") != 0;
}

bool need_root(const char *why)
{
    if (geteuid() == 0)
        return true;
    /* CI runs as root: there a root-only check that did not run is a failure, not a pass. */
    if (in_ci()) {
        fprintf(stderr, "  check failed: needs root to %s, and CI must run it\n", why);
        kw_failures++;
        return false;
    }
    fprintf(stderr, "  (skipped: needs root to %s)\n", why);
    skipping = true;
    return false;
}

static int no_conversation(int n, const struct pam_message **msg, struct pam_response **resp,
                           void *data)
{
    (void)n;
    (void)msg;
    (void)resp;
    (void)data;
    return PAM_CONV_ERR;
}

pam_handle_t *test_pam(const char *service, const char *user)
{
    static const struct pam_conv conv = {no_conversation, NULL};
    pam_handle_t *pamh = NULL;
    if (pam_start(service, user, &conv, &pamh) != PAM_SUCCESS) {
        fprintf(stderr, "pam_start failed\n");
        exit(2);
    }
    return pamh;
}

char *temp_dir(void)
{
    char *path = strdup("/tmp/pam-keywell-test.XXXXXX");
    if (path == NULL || mkdtemp(path) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
    return path;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void remove_tree(const char *path)
{
    (void)nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

struct passwd me(void)
{
    return someone(geteuid(), "tester");
}

struct passwd someone(uid_t uid, const char *name)
{
    struct passwd pw = {0};
    pw.pw_name = (char *)name;
    pw.pw_uid = uid;
    pw.pw_gid = getegid();
    pw.pw_dir = (char *)"/";
    pw.pw_shell = (char *)"/bin/sh";
    return pw;
}
