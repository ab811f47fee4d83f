/*
 * A few helpers for the module's unit tests: checks that count failures, a real PAM handle
 * (libpam's pam_start), throwaway folders. No stand-ins for libc or libpam.
 */
#ifndef PAM_KEYWELL_TEST_HARNESS_H
#define PAM_KEYWELL_TEST_HARNESS_H

#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <security/pam_appl.h>

extern int kw_failures;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            kw_failures++;                                                             \
        }                                                                              \
    } while (0)

#define RUN(test) run_test(#test, test)

void run_test(const char *name, void (*test)(void));
/* Prints the summary; the exit status for main. */
int finish(void);

/* Tests that need root (chown, another uid) say so and are skipped when not root; under CI
 * (CI=true) they fail instead. */
bool need_root(const char *why);

/* A PAM handle from libpam for `service` and `user` (NULL: no PAM_USER); pam_end it after. */
pam_handle_t *test_pam(const char *service, const char *user);

/* A new private folder (0700) under /tmp; the caller removes it with remove_tree. */
char *temp_dir(void);
void remove_tree(const char *path);

/* A passwd entry for the current effective user, or for `uid` with a made-up name. */
struct passwd me(void);
struct passwd someone(uid_t uid, const char *name);

#endif
