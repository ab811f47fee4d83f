"""One answer per program and list (docs/access-control.md): a program reading three items
another program saved is asked once, and the answer covers the other two, which share the
first one's list; Deny covers nothing; an item with another list is asked about on its own.
Real keywelld, real session bus, python Secret Service clients (each script file a program of
its own, each run a new connection, so no burst joins the reads), the scripted pinentry."""

from __future__ import annotations

import os
import signal

from keywell_helpers import bodies_as_test_user, wait_for
from secret_service_helpers import LOGIN_PASSWORD, built, session  # noqa: F401
from ss_access_helpers import Client, confirms, descriptions, scratch  # noqa: F401

ATTRS = {"service": "same-list"}
LOCKED = "ERROR org.freedesktop.Secret.Error.IsLocked"


def saved(session, scratch) -> tuple[list[str], str]:
    """Three items the maker saved (one list: the maker), and one another program saved."""
    session.create_login()
    maker = Client(session, scratch / "maker.py")
    paths = [maker.store(f"Site {n}", {**ATTRS, "n": str(n)}, f"pw{n}") for n in range(3)]
    other = Client(session, scratch / "other.py").store("Other's", {**ATTRS, "n": "other"}, "theirs")
    return paths, other


def test_three_reads_of_one_programs_items_ask_once_and_deny_leaves_all_unread(session, scratch):
    paths, other = saved(session, scratch)
    reader = Client(session, scratch / "reader.py")

    # Deny: the item asked about and the two others stay unread; nothing is remembered.
    session.pinentry_answers("deny")
    assert reader.get(paths[0]) == LOCKED
    assert len(confirms(session)) == 1
    assert any("“reader.py” wants to use “Site 0” from your keychain" in line
               and "and the 2 other items “maker.py” saved there." in line for line in descriptions(session)), \
        descriptions(session)
    assert reader.peek(paths) == {path: {"locked": True, "secret": None} for path in paths}
    assert len(confirms(session)) == 1

    # Allow, asked about the second: all three read, each by a run of its own, one question.
    session.pinentry_answers("allow")
    assert reader.get(paths[1]) == "SECRET pw1"
    assert len(confirms(session)) == 2
    assert reader.get(paths[0]) == "SECRET pw0"
    assert reader.get(paths[2]) == "SECRET pw2"
    assert reader.peek(paths) == {path: {"locked": False, "secret": f"pw{n}"} for n, path in enumerate(paths)}
    assert len(confirms(session)) == 2, "a read of an item with the same list asked again"

    # Another program's item, another list: asked about on its own, and the answer is its own.
    session.pinentry_answers("deny")
    assert reader.get(other) == LOCKED
    assert len(confirms(session)) == 3
    last = descriptions(session)[-1]
    assert "“Other's” from your keychain" in last and "other item" not in last, last
    # The Allow did not reach the other program's item.
    assert reader.peek([other]) == {other: {"locked": True, "secret": None}}


def test_always_allow_puts_the_program_on_every_item_of_the_list(session, scratch):
    import dbus
    paths, other = saved(session, scratch)
    reader = Client(session, scratch / "reader.py")
    session.pinentry_answers("always")
    assert reader.get(paths[2]) == "SECRET pw2"
    assert len(confirms(session)) == 1
    # Written into the file: a new keywelld (activated by the next call) reads the lists.
    for pid in session.keywelld_pids():
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not session.keywelld_pids(), "keywelld to exit")
    session.native().Unlock("login", dbus.ByteArray(LOGIN_PASSWORD.encode()))
    assert [reader.get(path) for path in paths] == ["SECRET pw0", "SECRET pw1", "SECRET pw2"]
    assert len(confirms(session)) == 1, "Always Allow did not cover the items of the same list"
    # keywell doctor lists the grants Always Allow made: the three items, not the other one.
    doctor = session.run([built("KEYWELL", "keywell"), "doctor"], timeout=120).stdout.decode()
    granted = [line for line in doctor.splitlines() if "Always Allow:" in line and "reader.py" in line]
    assert sorted(label for label in ("Site 0", "Site 1", "Site 2", "Other's")
                  if any(f"may use “{label}”" in line for line in granted)) == ["Site 0", "Site 1", "Site 2"], doctor
    assert all(line.startswith("ok") for line in granted), doctor
    # The other program's item was not written: asked (Deny) and unread.
    session.pinentry_answers("deny")
    assert reader.get(other) == LOCKED
    assert len(confirms(session)) == 2


bodies_as_test_user(globals())
