"""Access control through the native API with real programs (docs/access-control.md): the
creator reads silently, another program is asked through the real dialog protocol (a scripted
pinentry choosing each answer), Deny denies, Allow holds for one connection, Always Allow is
written into the keychain file and survives a restart, a replaced binary is asked again, a
burst of requests is one question, and with interaction off nobody is asked.

Needs KEYWELL and KEYWELLD (scripts/test.sh sets them), dbus-send and python3-jeepney.
"""

from __future__ import annotations

from access_control_helpers import PYTHON, acl  # noqa: F401 (fixture)

ALLOWED = "the program read the secret"


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
    assert description.startswith("“other” wants to use your confidential information stored in “mail” in your keychain.")
    assert f"exe:{other};sha256=" in description and "Identity: weak" in description
    # Deny stores nothing: the next request (a new run) is asked again.
    acl.answer(["deny"])
    assert acl.read(other, "mail").returncode != 0
    assert acl.questions == 2
    assert acl.read(creator, "mail").stdout == "s3cret\n"
    assert acl.questions == 2


def test_allow_holds_for_that_run_only(acl):
    creator, other = acl.program("creator"), acl.program("other")
    acl.add(creator, "mail", "s3cret")
    acl.answer(["allow"])
    assert acl.read(other, "mail").stdout == "s3cret\n", ALLOWED
    assert acl.questions == 1
    assert f"exe:{other}" not in acl.access_list("mail")
    # A new run is a new connection: asked again.
    acl.answer(["deny"])
    assert acl.read(other, "mail").returncode != 0
    assert acl.questions == 2


def test_always_allow_is_written_survives_a_restart_and_a_replaced_binary_is_asked_again(acl):
    creator, other = acl.program("creator"), acl.program("other")
    acl.add(creator, "mail", "s3cret")
    acl.answer(["always"])
    assert acl.read(other, "mail").stdout == "s3cret\n", ALLOWED
    assert acl.questions == 1
    dump = acl.access_list("mail")
    assert f"exe:{creator};sha256=" in dump and f"exe:{other};sha256=" in dump

    acl.restart_daemon()
    assert acl.read(other, "mail").stdout == "s3cret\n"
    assert acl.read(other, "mail").stdout == "s3cret\n"
    assert acl.questions == 1

    # The same path with other contents is another program.
    acl.program("other", extra_bytes=b"\0replaced")
    acl.answer(["deny"])
    assert acl.read(other, "mail").returncode != 0
    assert acl.questions == 2


def test_a_burst_of_100_reads_by_one_program_is_one_question(acl):
    writer, reader = acl.script("writer.py"), acl.script("reader.py")
    acl.run([PYTHON, writer, "add", "burst", "100"])
    acl.answer(["allow"])
    lines = acl.run([PYTHON, reader, "read", "burst", "100"]).stdout.splitlines()
    assert lines == [f"DATA secret-{n}" for n in range(100)] * 2
    assert acl.questions == 1

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
    assert "stored in “many0” and 11 more items in your keychain." in acl.descriptions()[-1]


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
