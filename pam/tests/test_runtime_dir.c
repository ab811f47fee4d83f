/* Choosing the runtime folder (runtime_dir.c): which candidate wins, which are passed over. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "runtime_dir.h"

/* A uid nobody has: its /run/user folder is ours to make and remove. */
#define NOBODYS_UID 3987001u

static int choose(pam_handle_t *pamh, const struct passwd *pw, bool create, char *buf)
{
    struct options o = {.debug = true};
    return find_runtime_dir(pamh, &o, pw, create, buf, PATH_MAX);
}

static void set_pam_env(pam_handle_t *pamh, const char *value)
{
    char *entry = NULL;
    if (asprintf(&entry, "XDG_RUNTIME_DIR=%s", value) < 0)
        exit(2);
    CHECK(pam_putenv(pamh, entry) == PAM_SUCCESS);
    free(entry);
}

static void private_dir_checks(void)
{
    char *dir = temp_dir();
    uid_t uid = geteuid();
    CHECK(check_private_dir(dir, uid, 022) == 0);
    CHECK(chmod(dir, 0750) == 0);
    CHECK(check_private_dir(dir, uid, 022) == 0);
    CHECK(check_private_dir(dir, uid, 077) == EACCES);
    CHECK(chmod(dir, 0770) == 0);
    CHECK(check_private_dir(dir, uid, 022) == EACCES);
    CHECK(check_private_dir(dir, uid + 1, 022) == EPERM);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/missing", dir);
    CHECK(check_private_dir(path, uid, 022) == ENOENT);
    snprintf(path, sizeof path, "%s/file", dir);
    fclose(fopen(path, "w"));
    CHECK(check_private_dir(path, uid, 022) == ENOTDIR);
    char link[PATH_MAX];
    snprintf(link, sizeof link, "%s/link", dir);
    CHECK(chmod(dir, 0700) == 0);
    CHECK(symlink(dir, link) == 0);
    CHECK(check_private_dir(link, uid, 022) == ENOTDIR); /* lstat: the link, not its target */
    remove_tree(dir);
    free(dir);
}

/* The PAM environment first, then the process's; the user's own folder either way. */
static void pam_environment_then_process_environment(void)
{
    struct passwd pw = me();
    char *from_pam = temp_dir(), *from_process = temp_dir();
    char buf[PATH_MAX];
    pam_handle_t *pamh = test_pam("keywell-unit", NULL);
    CHECK(setenv("XDG_RUNTIME_DIR", from_process, 1) == 0);

    CHECK(choose(pamh, &pw, false, buf) == 0);
    CHECK(strcmp(buf, from_process) == 0);

    set_pam_env(pamh, from_pam);
    CHECK(choose(pamh, &pw, false, buf) == 0);
    CHECK(strcmp(buf, from_pam) == 0);

    /* Writable by others, relative, a symlink: passed over for the next candidate. */
    CHECK(chmod(from_pam, 0777) == 0);
    CHECK(choose(pamh, &pw, false, buf) == 0 && strcmp(buf, from_process) == 0);
    CHECK(chmod(from_pam, 0700) == 0);
    set_pam_env(pamh, "relative/run");
    CHECK(choose(pamh, &pw, false, buf) == 0 && strcmp(buf, from_process) == 0);
    char link[PATH_MAX];
    snprintf(link, sizeof link, "%s.link", from_pam);
    CHECK(symlink(from_pam, link) == 0);
    set_pam_env(pamh, link);
    CHECK(choose(pamh, &pw, false, buf) == 0 && strcmp(buf, from_process) == 0);
    unlink(link);

    if (need_root("give the folder to another user")) {
        /* su and sudo carry the caller's folder: not the target's, so passed over. */
        set_pam_env(pamh, from_pam);
        CHECK(chown(from_pam, 54321, 54321) == 0);
        CHECK(choose(pamh, &pw, false, buf) == 0 && strcmp(buf, from_process) == 0);
    }
    unsetenv("XDG_RUNTIME_DIR");
    pam_end(pamh, PAM_SUCCESS);
    remove_tree(from_pam);
    remove_tree(from_process);
    free(from_pam);
    free(from_process);
}

/* Neither environment has one: /run/user/<uid>, made by root only when asked to. */
static void run_user_fallback(void)
{
    if (!need_root("create /run/user/<uid> for another user"))
        return;
    struct passwd pw = someone(NOBODYS_UID, "nobodys");
    char expected[64], buf[PATH_MAX];
    snprintf(expected, sizeof expected, "/run/user/%u", NOBODYS_UID);
    rmdir(expected);
    unsetenv("XDG_RUNTIME_DIR");
    pam_handle_t *pamh = test_pam("keywell-unit", NULL);
    char *mine = temp_dir(); /* a folder of someone else (root) in the PAM environment */
    set_pam_env(pamh, mine);

    struct stat st;
    CHECK(choose(pamh, &pw, false, buf) == -1); /* close_session never creates it */
    CHECK(lstat(expected, &st) != 0 && errno == ENOENT);

    CHECK(choose(pamh, &pw, true, buf) == 0);
    CHECK(strcmp(buf, expected) == 0);
    CHECK(lstat(expected, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == NOBODYS_UID &&
          (st.st_mode & 07777) == 0700);
    CHECK(choose(pamh, &pw, false, buf) == 0 && strcmp(buf, expected) == 0);

    /* Something of another owner sits there: refused, and left as it is. */
    CHECK(chown(expected, 0, 0) == 0);
    CHECK(choose(pamh, &pw, true, buf) == -1);
    CHECK(lstat(expected, &st) == 0 && st.st_uid == 0);
    rmdir(expected);
    pam_end(pamh, PAM_SUCCESS);
    remove_tree(mine);
    free(mine);
}

int main(void)
{
    RUN(private_dir_checks);
    RUN(pam_environment_then_process_environment);
    RUN(run_user_fallback);
    return finish();
}
