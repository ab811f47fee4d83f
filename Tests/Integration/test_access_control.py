"""Access control through the native API with real programs (docs/access-control.md): the
creator reads silently, another program is asked through the real dialog protocol (a scripted
pinentry choosing each answer), Deny denies, Allow holds for one connection, Always Allow is
written into the keychain file and survives a restart, a replaced binary is asked again, a
burst of requests is one question, with interaction off nobody is asked, the question names the
program by its desktop entry and says when it changed, and every denial is logged (to the state
folder when keywelld has no stderr).

Needs KEYWELL and KEYWELLD (scripts/test.sh sets them), dbus-send, python3-jeepney and bwrap.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess

from access_control_helpers import PASSWORD, PY_CLIENT, PYTHON, _zombie, acl  # noqa: F401 (fixture)
from identity_helpers import account, flatpak_info  # noqa: F401 (fixture)
from keywell_helpers import built, wait_for

ALLOWED = "the program read the secret"
HEX_RUN = re.compile(r"[0-9a-fA-F]{16,}")


def assert_no_identity_text(description: str) -> None:
    """docs/access-control.md, "The words": no identity or hash in the dialog."""
    for marker in ("exe:", "sha256=", "script="):
        assert marker not in description, description
    assert not HEX_RUN.search(description), description


def denial_lines(acl) -> list[str]:
    """keywelld's denial lines (its stderr is the account's bus log), without the line's prefix."""
    text = acl.log.read_text(errors="replace") if acl.log.exists() else ""
    return [line.split(" notice: ", 1)[1] for line in text.splitlines() if " notice: access denied: " in line]


def test_the_creator_reads_silently_and_another_program_is_asked(acl):
    creator, other = acl.program("creator"), acl.program("other")
    acl.add(creator, "mail", "s3cret")
    assert acl.read(creator, "mail").stdout == "s3cret\n"
    assert acl.questions == 0

    acl.answer(["deny"])
    denied = acl.read(other, "mail")
    assert denied.returncode != 0 and "s3cret" not in denied.stdout
    assert acl.questions == 1
    description = acl.descriptions()[-1]
    assert description.startswith(f"“other” wants to use “mail” from your keychain “{acl.keychains}/login.keychain-db”.")
    assert_no_identity_text(description)
    # The denial is logged: the program by identity, the item by label, and why.
    lines = denial_lines(acl)
    assert len(lines) == 1 and lines[0].startswith(f"access denied: “other” (exe:{other};sha256="), lines
    assert "may not use 1 item (“mail”)" in lines[0] and lines[0].endswith(": answered Deny")
    # Deny stores nothing: the next request (a new run) is asked again.
    acl.answer(["deny"])
    assert acl.read(other, "mail").returncode != 0
    assert acl.questions == 2
    assert acl.read(creator, "mail").stdout == "s3cret\n"
    assert acl.questions == 2


def test_allow_covers_later_runs_of_the_program_until_the_keychain_locks(acl):
    creator, other = acl.program("creator"), acl.program("other")
    acl.add(creator, "mail", "s3cret")
    acl.answer(["allow"])
    # Five runs, five connections: one question, nothing written into the file.
    for _ in range(5):
        assert acl.read(other, "mail").stdout == "s3cret\n", ALLOWED
    assert acl.questions == 1
    assert f"exe:{other}" not in acl.access_lists()
    # Locking the keychain ends it: after the unlock, the program is asked again.
    acl.run([acl.keywell, "lock-keychain", "login"])
    acl.run([acl.keywell, "unlock-keychain", "-p", PASSWORD, "login"])
    acl.answer(["deny"])
    assert acl.read(other, "mail").returncode != 0
    assert acl.questions == 2


def test_always_allow_is_written_survives_a_restart_and_a_replaced_binary_is_asked_again(acl):
    creator, other = acl.program("creator"), acl.program("other")
    acl.add(creator, "mail", "s3cret")
    acl.answer(["always"])
    assert acl.read(other, "mail").stdout == "s3cret\n", ALLOWED
    assert acl.questions == 1
    dump = acl.access_lists()
    assert f"exe:{creator};sha256=" in dump and f"exe:{other};sha256=" in dump

    acl.restart_daemon()
    assert acl.read(other, "mail").stdout == "s3cret\n"
    assert acl.read(other, "mail").stdout == "s3cret\n"
    assert acl.questions == 1

    # The same path with other contents is another program, and the question says it changed.
    acl.program("other", extra_bytes=b"\0replaced")
    acl.answer(["deny"])
    assert acl.read(other, "mail").returncode != 0
    assert acl.questions == 2
    assert "“other” has changed since this item trusted it" in acl.descriptions()[-1]
    assert_no_identity_text(acl.descriptions()[-1])


def test_the_question_names_the_program_by_its_desktop_entry(acl):
    creator, other = acl.program("creator"), acl.program("other")
    applications = acl.keychains.parent.parent / "applications"
    applications.mkdir(parents=True, exist_ok=True)
    (applications / "org.example.Other.desktop").write_text(
        f"[Desktop Entry]\nType=Application\nName=Other Mail\nExec={other} %u\n")
    acl.add(creator, "mail", "s3cret")
    acl.answer(["deny"])
    assert acl.read(other, "mail").returncode != 0
    assert acl.descriptions()[-1].startswith("“Other Mail” wants to use “mail”"), acl.descriptions()
    assert denial_lines(acl)[-1].startswith("access denied: “Other Mail” (exe:")


def test_a_burst_of_100_reads_by_one_program_is_one_question(acl):
    writer, reader = acl.script("writer.py"), acl.script("reader.py")
    acl.run([PYTHON, writer, "add", "burst", "100"])
    acl.answer(["allow"])
    lines = acl.run([PYTHON, reader, "read", "burst", "100"]).stdout.splitlines()
    assert lines == [f"DATA secret-{n}" for n in range(100)] * 2
    assert acl.questions == 1
    # The next run of the same script is covered by that Allow too.
    lines = acl.run([PYTHON, reader, "read", "burst", "100"]).stdout.splitlines()
    assert lines == [f"DATA secret-{n}" for n in range(100)] * 2
    assert acl.questions == 1

    # After a lock, a new burst is one new question: Deny refuses all 200 reads.
    acl.run([acl.keywell, "lock-keychain", "login"])
    acl.run([acl.keywell, "unlock-keychain", "-p", PASSWORD, "login"])
    acl.answer(["deny"])
    lines = acl.run([PYTHON, reader, "read", "burst", "100"]).stdout.splitlines()
    assert lines == ["ERROR org.keywell.Keychain1.Error.AuthFailed"] * 200
    assert acl.questions == 2


def test_one_call_for_many_items_is_one_question_naming_the_count(acl):
    writer, reader = acl.script("writer.py"), acl.script("reader.py")
    acl.run([PYTHON, writer, "add", "many", "12"])
    acl.answer(["allow"])
    assert acl.run([PYTHON, reader, "readall", "-", "0"]).stdout == "ITEMS 12\n"
    assert acl.questions == 1
    assert "wants to use “many0” and 11 more items from your keychain “" in acl.descriptions()[-1]


def test_with_interaction_off_nobody_is_asked(acl):
    writer, reader = acl.script("writer.py"), acl.script("reader.py")
    acl.run([PYTHON, writer, "add", "quiet", "3"])
    acl.answer(["allow"])
    lines = acl.run([PYTHON, reader, "read", "quiet", "3", "u_AuthUIF"]).stdout.splitlines()
    assert lines == ["ERROR org.keywell.Keychain1.Error.InteractionNotAllowed"] * 6
    lines = acl.run([PYTHON, reader, "read", "quiet", "3", "u_AuthUIS"]).stdout.splitlines()
    assert lines == ["ERROR org.keywell.Keychain1.Error.ItemNotFound"] * 6
    assert acl.questions == 0
    # The writer itself is trusted: no question, interaction off or not.
    assert acl.run([PYTHON, writer, "read", "quiet", "3", "u_AuthUIF"]).stdout.splitlines() == [
        f"DATA secret-{n}" for n in range(3)] * 2


def test_update_and_delete_by_another_program_are_asked_and_deny_changes_nothing(acl):
    creator, other = acl.program("creator"), acl.program("other")
    acl.add(creator, "mail", "s3cret")
    acl.answer(["deny"])
    changed = acl.run([other, "add-generic-password", "-U", "-s", "mail", "-a", "acct", "-w", "stolen"], check=False)
    assert changed.returncode != 0
    deleted = acl.run([other, "delete-generic-password", "-s", "mail"], check=False)
    assert deleted.returncode != 0
    assert acl.questions == 2
    assert acl.read(creator, "mail").stdout == "s3cret\n"
    acl.answer(["allow"])
    acl.run([other, "delete-generic-password", "-s", "mail"])
    assert acl.read(creator, "mail").returncode != 0


def test_items_open_to_any_application_and_the_trust_option(acl):
    creator, other, trusted = acl.program("creator"), acl.program("other"), acl.program("trusted")
    acl.add(creator, "open", "o", "-A")
    acl.add(creator, "named", "n", "-T", str(trusted))
    assert acl.read(other, "open").stdout == "o\n"
    assert acl.read(trusted, "named").stdout == "n\n"
    assert acl.questions == 0
    # -T names only that program: not even the creator is trusted then.
    acl.answer(["deny"])
    assert acl.read(creator, "named").returncode != 0
    assert acl.questions == 1


def test_a_sandboxed_app_sees_only_its_own_items_and_is_never_asked(account):
    """A Flatpak-style sandbox (identity_helpers): what it adds trusts it alone and it reads
    that silently; items of programs outside do not exist for it (not asked about: absent)."""
    account.run([built("KEYWELL"), "create-keychain", "-p", "pw", "login"])
    script = account.scratch / "client.py"
    script.write_text(PY_CLIENT)
    account.run([PYTHON, str(script), "add", "host", "2"])

    def sandboxed(*arguments: str) -> list[str]:
        result = account.run_sandboxed(account.sandbox([PYTHON, str(script), *arguments], flatpak_info("org.example.App")))
        assert result.returncode == 0, result
        return result.stdout.splitlines()

    assert sandboxed("add", "app", "1") == ["ADDED 1"]
    assert sandboxed("read", "app", "1") == ["DATA secret-0"] * 2
    assert sandboxed("readall", "-", "0") == ["ITEMS 1"]
    assert sandboxed("read", "host", "2") == ["ERROR org.keywell.Keychain1.Error.ItemNotFound"] * 4
    dump = account.run([built("KEYWELL"), "dump-keychain", "-a"])
    assert "            0: flatpak:org.example.App\n" in dump
    # From outside, the app's item is another program's: asked (no dialog here: denied).
    assert account.run([PYTHON, str(script), "read", "app", "1"]).splitlines() == [
        "ERROR org.keywell.Keychain1.Error.AuthFailed"] * 2


def test_a_keywelld_without_stderr_logs_its_denials_to_the_state_folder(acl):
    """As pam_keywell starts it (stderr on /dev/null): the denial line goes to
    $XDG_STATE_HOME/keywell/keywelld.log (docs/access-control.md, "A denial is never silent")."""
    creator, other = acl.program("creator"), acl.program("other")
    acl.add(creator, "mail", "s3cret")
    pid = acl.daemon_pid()
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), "keywelld to stop")
    wait_for(lambda: acl.daemon_pid() is None, "org.keywell.Keychain to be released")
    daemon = subprocess.Popen([built("KEYWELLD")], env=acl.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True, **acl.owner.spawn)
    try:
        wait_for(lambda: acl.daemon_pid() == daemon.pid, "the keywelld started without stderr to own its name")
        acl.run([acl.keywell, "unlock-keychain", "-p", PASSWORD, "login"])
        acl.answer(["deny"])
        assert acl.read(other, "mail").returncode != 0
        log = acl.root / "home/.local/state/keywell/keywelld.log"
        wait_for(lambda: log.exists() and "access denied: “other”" in log.read_text(), "the denial line in keywelld.log")
        assert (log.stat().st_mode & 0o777) == 0o600 and (log.parent.stat().st_mode & 0o777) == 0o700
        assert "may not use 1 item (“mail”)" in log.read_text() and "s3cret" not in log.read_text()
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
