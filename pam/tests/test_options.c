/* Module arguments (options.c), the per-phase checks (prologue) and the daemon= path check (spawn.c). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "options.h"
#include "spawn.h"

static int parse(int argc, const char **argv, struct options *o)
{
    pam_handle_t *pamh = test_pam("keywell-unit", NULL);
    int unknown = parse_options(pamh, argc, argv, o);
    pam_end(pamh, PAM_SUCCESS);
    return unknown;
}

static void defaults_without_arguments(void)
{
    struct options o;
    memset(&o, 0xff, sizeof o); /* whatever was there before must not leak through */
    CHECK(parse(0, NULL, &o) == 0);
    CHECK(!o.debug);
    CHECK(!o.auto_start);
    CHECK(o.only_if == NULL);
    CHECK(strcmp(o.daemon, KEYWELLD_PATH) == 0);
}

static void every_option(void)
{
    const char *argv[] = {"debug", "auto_start", "only_if=login,gdm-password",
                          "daemon=/opt/keywell/bin/keywelld"};
    struct options o;
    CHECK(parse(4, argv, &o) == 0);
    CHECK(o.debug);
    CHECK(o.auto_start);
    CHECK(o.only_if != NULL && strcmp(o.only_if, "login,gdm-password") == 0);
    CHECK(strcmp(o.daemon, "/opt/keywell/bin/keywelld") == 0);
}

static void a_later_value_wins(void)
{
    const char *argv[] = {"daemon=/a", "only_if=login", "daemon=/b", "only_if=su"};
    struct options o;
    CHECK(parse(4, argv, &o) == 0);
    CHECK(strcmp(o.daemon, "/b") == 0);
    CHECK(strcmp(o.only_if, "su") == 0);
}

/* Near misses are unknown options: counted (and logged), and they change nothing. */
static void unknown_options_are_skipped(void)
{
    const char *argv[] = {"debug=1", "Debug", "auto_start=yes", "autostart", "only_if",
                          "daemon", "", "--debug", "debug ", "use_first_pass"};
    struct options o;
    CHECK(parse(10, argv, &o) == 10);
    CHECK(!o.debug);
    CHECK(!o.auto_start);
    CHECK(o.only_if == NULL);
    CHECK(strcmp(o.daemon, KEYWELLD_PATH) == 0);

    const char *mixed[] = {"bogus", "debug", "also=bogus"};
    CHECK(parse(3, mixed, &o) == 2);
    CHECK(o.debug);
}

static void service_lists(void)
{
    CHECK(service_listed("login", "login"));
    CHECK(service_listed("login,gdm-password,lightdm", "login"));
    CHECK(service_listed("login,gdm-password,lightdm", "gdm-password"));
    CHECK(service_listed("login,gdm-password,lightdm", "lightdm"));
    CHECK(!service_listed("login,gdm-password", "gdm"));     /* a prefix is not the service */
    CHECK(!service_listed("login,gdm-password", "password")); /* nor a suffix */
    CHECK(!service_listed("login", "log"));
    CHECK(!service_listed("log", "login"));
    CHECK(!service_listed("Login", "login")); /* case matters, as in PAM service names */
    CHECK(!service_listed("", "login"));      /* only_if= with nothing: no service at all */
    CHECK(service_listed("login,", "login"));
    CHECK(service_listed(",,login,,", "login"));
    CHECK(service_listed("login,,su", "")); /* an empty entry matches only an empty name */
}

/*
 * The reasons a phase stops before looking the user up. The lookup itself (unknown user, root)
 * goes through pam_modutil_getpwnam, which keeps its result in module data: libpam allows that
 * only inside a module call, so those cases are left to the pamtester suite (test_pam.py).
 */
static void prologue_skips_early(void)
{
    struct options o;
    const char *only_login[] = {"only_if=login"};
    const char *only_nothing[] = {"only_if="};

    pam_handle_t *pamh = test_pam("sshd", "nobody");
    CHECK(prologue(pamh, 1, only_login, &o, "test") == NULL); /* service not listed */
    CHECK(prologue(pamh, 1, only_nothing, &o, "test") == NULL);
    pam_end(pamh, PAM_SUCCESS);

    pamh = test_pam("login", NULL);
    CHECK(prologue(pamh, 1, only_login, &o, "test") == NULL); /* no user: never prompts */
    CHECK(pam_set_item(pamh, PAM_USER, "") == PAM_SUCCESS);
    CHECK(prologue(pamh, 0, NULL, &o, "test") == NULL);
    pam_end(pamh, PAM_SUCCESS);
}

static char *file_in(const char *dir, const char *name, mode_t mode)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir, name) < 0)
        exit(2);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        exit(2);
    fputs("#!/bin/sh\n", f);
    fclose(f);
    CHECK(chmod(path, mode) == 0);
    return path;
}

/* daemon= is only checked when the daemon is to be started: what start_daemon refuses. */
static void daemon_values(void)
{
    pam_handle_t *pamh = test_pam("keywell-unit", NULL);
    char *dir = temp_dir();
    uid_t uid = geteuid();

    char *good = file_in(dir, "keywelld", 0755);
    CHECK(daemon_usable(pamh, good, uid));
    CHECK(!daemon_usable(pamh, "", uid));                  /* daemon= with no value */
    CHECK(!daemon_usable(pamh, "keywelld", uid));          /* relative */
    CHECK(!daemon_usable(pamh, "./keywelld", uid));
    CHECK(!daemon_usable(pamh, "/nonexistent/keywelld", uid));
    CHECK(!daemon_usable(pamh, dir, uid));                 /* a folder */
    char *plain = file_in(dir, "not-executable", 0644);
    CHECK(!daemon_usable(pamh, plain, uid));
    char *group_writable = file_in(dir, "group-writable", 0775);
    CHECK(!daemon_usable(pamh, group_writable, uid));
    char *world_writable = file_in(dir, "world-writable", 0757);
    CHECK(!daemon_usable(pamh, world_writable, uid));
    if (need_root("give a file to another user")) {
        /* Owned by a third user: neither root nor the user controls what runs. */
        char *theirs = file_in(dir, "theirs", 0755);
        CHECK(chown(theirs, 54321, 54321) == 0);
        CHECK(!daemon_usable(pamh, theirs, 12345));
        CHECK(daemon_usable(pamh, theirs, 54321)); /* the user's own file is fine */
        CHECK(daemon_usable(pamh, good, 12345));   /* and so is root's */
        free(theirs);
    }
    free(good);
    free(plain);
    free(group_writable);
    free(world_writable);
    remove_tree(dir);
    free(dir);
    pam_end(pamh, PAM_SUCCESS);
}

int main(void)
{
    RUN(defaults_without_arguments);
    RUN(every_option);
    RUN(a_later_value_wins);
    RUN(unknown_options_are_skipped);
    RUN(service_lists);
    RUN(prologue_skips_early);
    RUN(daemon_values);
    return finish();
}
