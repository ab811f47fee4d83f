"""Someone who can write the keychain file edits items' access lists with sqlite3 while keywelld
is stopped: adds their own program to the list of an item, widens a list to "any application",
or turns the keychain's enforceAccess off so that new items trust everyone. Every edit must be
detected once the keychain is unlocked, as an attribute edit is: the item's secret is refused
(its MAC covers its list) and a tampered header refuses to unlock (docs/access-control.md,
docs/file-format.md)."""

from __future__ import annotations

import shutil

import dbus

from identity_helpers import exe
from keywell_helpers import bodies_as_test_user, built
from secret_service_helpers import LOGIN_PASSWORD, KeywellBus, session  # noqa: F401
from security_figures import record
from test_attack_tampered_attributes import _keychain, _sqlite, _stop_daemon, _unlock

LISTED_PASSWORD = "listed-password-5d1e"
NONE_PASSWORD = "none-password-90ab"
EVIL = "exe:/tmp/evil;sha256=" + "0" * 64


def _store_items(session: KeywellBus) -> str:
    session.create_login()
    # The reads below come from this test (python3), which neither list trusts: every question
    # it causes is answered Allow, which stores nothing, so the lists stay as written. (What is
    # tested here is the MAC over the lists, checked before anyone is asked.)
    session.pinentry_answers(*["allow"] * 100)
    keywell = built("KEYWELL", "keywell")
    session.run([keywell, "add-generic-password", "-a", "listed", "-s", "svc", "-w", LISTED_PASSWORD,
                 "-T", "/usr/bin/env", "login"], check=True)
    session.run([keywell, "add-generic-password", "-a", "none", "-s", "svc", "-w", NONE_PASSWORD, "-T", "", "login"],
                check=True)
    dump = session.run([keywell, "dump-keychain", "-a", "login"], check=True).stdout.decode()
    trusted = exe("/usr/bin/env")
    assert f"            0: {trusted}\n" in dump and "        applications (0):\n" in dump, dump
    # Before the edits, everything reads back (the test is not vacuous).
    for account, password in (("listed", LISTED_PASSWORD), ("none", NONE_PASSWORD)):
        assert bytes(_read(session, account)[0]["v_Data"]) == password.encode()
    return trusted


def _read(session: KeywellBus, account: str):
    return session.native().CopyMatching({"class": "genp", "svce": "svc", "acct": account, "r_Data": True,
                                          "r_Access": True})


def _refused(account: str):
    def check(session: KeywellBus) -> bool:
        try:
            _read(session, account)
        except dbus.DBusException as error:
            return "integrity" in str(error)
        return False
    return check


EDITS = [
    ("own program added to an item's list",
     lambda path: _sqlite(path, f"UPDATE item SET access = access || char(10) || '{EVIL}' WHERE acct = 'listed'"),
     _refused("listed")),
    ("an item's list replaced by the attacker's program",
     lambda path: _sqlite(path, f"UPDATE item SET access = '{EVIL}' WHERE acct = 'listed'"), _refused("listed")),
    ("an item's list widened to any application (NULL)",
     lambda path: _sqlite(path, "UPDATE item SET access = NULL WHERE acct = 'listed'"), _refused("listed")),
    ("an empty list widened to any application (NULL)",
     lambda path: _sqlite(path, "UPDATE item SET access = NULL WHERE acct = 'none'"), _refused("none")),
    # Checked by the unlock itself: it must fail, and the keychain stay locked.
    ("the keychain's enforce_access turned off", lambda path: _sqlite(path, "UPDATE keychain SET enforce_access = 0"),
     None),
]


def test_access_lists_and_enforce_access_edited_on_disk_are_detected(session):
    trusted = _store_items(session)
    path = _keychain(session)
    _stop_daemon(session)
    pristine = path + ".pristine"
    shutil.copyfile(path, pristine)

    detected = 0
    failures = []
    for name, edit, refused in EDITS:
        _stop_daemon(session)
        shutil.copyfile(pristine, path)
        edit(path)
        unlock_error = ""
        try:
            _unlock(session)
            unlocked = True
        except dbus.DBusException as error:
            unlocked = False
            unlock_error = str(error)
        if refused is None:
            ok = not unlocked and "integrity" in unlock_error and session.native().GetInfo("login")["locked"]
        else:
            assert unlocked, f"{name}: unlock failed: {unlock_error}"
            ok = refused(session)
        detected += ok
        if not ok:
            failures.append(name)

    # Untouched, the file still works and keeps its lists.
    _stop_daemon(session)
    shutil.copyfile(pristine, path)
    _unlock(session)
    listed = _read(session, "listed")[0]
    assert bytes(listed["v_Data"]) == LISTED_PASSWORD.encode(), session.daemon_log()[-3000:]
    assert [str(identity) for identity in listed["acls"]] == [trusted]
    assert list(_read(session, "none")[0]["acls"]) == []
    assert bool(session.native().GetInfo("login")["enforceAccess"])

    record("item access lists and enforceAccess edited on disk with sqlite3",
           f"{detected} of {len(EDITS)} edits detected", "all detected", detected == len(EDITS))
    assert not failures, f"undetected: {failures}\n{session.daemon_log()[-2000:]}"


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
