"""`keywell access list|add|remove` with the real keywell and keywelld (docs/access-control.md,
"Grants a person can manage"): a program an item does not trust is asked and, denied, refused;
once `access add` names it, it reads without a question; once `access remove` takes it out, it
is asked again. Changing the list of an item keywell itself is not trusted by is asked about
too, and a Deny changes nothing. The dialogs are the scripted pinentry's (access_control_helpers).

Needs KEYWELL and KEYWELLD (scripts/test.sh sets them) and dbus-send.
"""

from __future__ import annotations

from access_control_helpers import acl  # noqa: F401 (fixture)


def test_add_lets_a_program_read_and_remove_makes_it_asked_again(acl):
    creator, other = acl.program("creator"), acl.program("other")
    acl.add(creator, "mail", "s3cret")

    acl.answer(["deny"])
    denied = acl.read(other, "mail")
    assert denied.returncode != 0 and "s3cret" not in denied.stdout
    assert acl.questions == 1

    # keywell is not on the item's list either: changing it is asked about (here: Allow).
    acl.answer(["allow"])
    added = acl.run([acl.keywell, "access", "add", "-T", other, "-s", "mail"])
    assert added.stdout.startswith('login: generic password "mail" (service "mail", account "acct"): added exe:')
    assert f"exe:{other};sha256=" in added.stdout
    assert acl.questions == 2

    acl.answer([])
    assert acl.read(other, "mail").stdout == "s3cret\n"
    assert acl.questions == 2

    # Every item the program was granted, without a question; dump-keychain -a agrees.
    listed = acl.run([acl.keywell, "access", "list", "-T", other]).stdout
    assert listed.splitlines()[0] == 'login: generic password "mail" (service "mail", account "acct")'
    assert f"    exe:{creator};sha256=" in listed and f"    exe:{other};sha256=" in listed
    assert f"exe:{other};sha256=" in acl.access_lists()
    assert acl.questions == 2

    acl.answer(["allow"])
    removed = acl.run([acl.keywell, "access", "remove", "-T", other, "-s", "mail"])
    assert f"removed exe:{other};sha256=" in removed.stdout
    assert f"exe:{other};" not in acl.access_lists()

    before = acl.questions
    acl.answer(["deny"])
    again = acl.read(other, "mail")
    assert again.returncode != 0 and "s3cret" not in again.stdout
    assert acl.questions == before + 1

    # Nothing names it now: nothing to list or remove (exit 44, nothing changed).
    none = acl.run([acl.keywell, "access", "remove", "-T", other], check=False)
    assert none.returncode == 44 and "no item" in none.stderr


def test_a_denied_change_changes_nothing(acl):
    creator, other = acl.program("creator"), acl.program("other")
    acl.add(creator, "mail", "s3cret")
    acl.answer(["deny"])
    refused = acl.run([acl.keywell, "access", "add", "-T", other, "-s", "mail"], check=False)
    assert refused.returncode == 51 and "added" not in refused.stdout, refused
    assert acl.questions == 1
    assert f"exe:{other};" not in acl.access_lists()


def test_zero_matches_is_refused(acl):
    other = acl.program("other")
    none = acl.run([acl.keywell, "access", "add", "-T", other, "-s", "nothing-here"], check=False)
    assert none.returncode == 44
    assert "no item matching the -s/-a/-l given was found (nothing changed)" in none.stderr
    assert acl.questions == 0
