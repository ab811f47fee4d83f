"""The attack of an outside review, end to end: someone who can write the keychain file edits
attributes (and the header's lock settings) with sqlite3 while keywelld is stopped, so that a
lookup for one site returns another site's password, or the keychain never locks. Every edit
must be detected once the keychain is unlocked: no secret comes back under an attribute that
was never its own, and a tampered header refuses to unlock (docs/file-format.md)."""

from __future__ import annotations

import shutil
import subprocess
import time

import dbus
import pytest

from keywell_helpers import bodies_as_test_user
from secret_service_helpers import LOGIN_PASSWORD, KeywellBus, session  # noqa: F401
from security_figures import record

BANK_PASSWORD = "bank-password-7f3a"
EVIL_PASSWORD = "evil-password-11c2"


def _keychain(session: KeywellBus) -> str:
    return str(session.home / ".local/share/keywell/keychains/login.keychain-db")


def _stop_daemon(session: KeywellBus) -> None:
    for pid in session.keywelld_pids():
        subprocess.run(["kill", "-TERM", str(pid)], check=False)
    deadline = time.monotonic() + 20
    while session.keywelld_pids():
        assert time.monotonic() < deadline, "keywelld did not stop"
        time.sleep(0.05)
    # Its log folded into the file (sqlite3, the last connection, removes it), so the file alone
    # is the whole keychain.
    _sqlite(_keychain(session), "PRAGMA wal_checkpoint(TRUNCATE);")


def _sqlite(path: str, sql: str) -> str:
    return subprocess.run(["sqlite3", path, sql], check=True, capture_output=True, text=True).stdout.strip()


def _unlock(session: KeywellBus) -> None:
    """Starts keywelld again (activation) and unlocks the login keychain."""
    session.native().Unlock("login", dbus.ByteArray(LOGIN_PASSWORD.encode()))


def _store_items(session: KeywellBus) -> None:
    session.create_login()
    session.secret_tool("store", "--label=Bank", "server", "bank.example", "user", "carol", input=BANK_PASSWORD, check=True)
    session.secret_tool("store", "--label=Evil", "server", "evil.example", "user", "carol", input=EVIL_PASSWORD, check=True)
    session.native().Add({"class": "genp", "svce": "native-svc", "acct": "erin", "labl": "Native",
                          "icmt": "a comment", "v_Data": dbus.ByteArray(b"native-secret")})
    # Before the edits, everything reads back (the test is not vacuous).
    assert session.secret_tool("lookup", "server", "evil.example").stdout == EVIL_PASSWORD.encode()
    assert session.secret_tool("lookup", "server", "bank.example").stdout == BANK_PASSWORD.encode()


def _swap_server_rows(path: str) -> None:
    _sqlite(path, """
        UPDATE item_attribute SET value = CASE value WHEN 'bank.example' THEN 'evil.example' ELSE 'bank.example' END
        WHERE name = 'server' AND value IN ('bank.example', 'evil.example');""")


def _evil_lookup_gets_no_bank_password(session: KeywellBus) -> bool:
    result = session.secret_tool("lookup", "server", "evil.example")
    return BANK_PASSWORD.encode() not in result.stdout and result.returncode != 0


def _label_changed(path: str) -> None:
    _sqlite(path, "UPDATE item SET labl = 'Evil', labl_n = 'Evil', labl_f = 'evil' WHERE labl = 'Bank'")


def _search_refuses_tampered_label(session: KeywellBus) -> bool:
    result = session.secret_tool("search", "--all", "server", "bank.example")
    text = result.stdout.decode(errors="replace") + result.stderr.decode(errors="replace")
    return BANK_PASSWORD not in text and "label = Evil" not in text


def _native_column_changed(path: str) -> None:
    _sqlite(path, "UPDATE item SET icmt = 'edited', icmt_n = 'edited', icmt_f = 'edited' WHERE svce = 'native-svc'")


def _native_read_refused(session: KeywellBus) -> bool:
    try:
        session.native().CopyMatching({"class": "genp", "svce": "native-svc", "r_Data": True, "r_Attributes": True})
    except dbus.DBusException as error:
        return "integrity" in str(error)
    return False


def _lock_settings_changed(path: str) -> None:
    _sqlite(path, "UPDATE keychain SET lock_after_seconds = 0, lock_on_sleep = 0")


EDITS = [
    ("server attribute rows of two items swapped", _swap_server_rows, _evil_lookup_gets_no_bank_password),
    ("label column edited", _label_changed, _search_refuses_tampered_label),
    ("native attribute column (icmt) edited", _native_column_changed, _native_read_refused),
    # Checked by the unlock itself: it must fail, and the keychain stay locked.
    ("lock_after_seconds and lock_on_sleep edited", _lock_settings_changed, None),
]


def test_attributes_and_lock_settings_edited_on_disk_are_detected(session):
    _store_items(session)
    # The login keychain never locks by default: make it lock, so the header edit gains something.
    session.native().SetSettings("login", {"lockAfterSeconds": dbus.UInt32(300), "lockOnSleep": True})
    path = _keychain(session)
    _stop_daemon(session)
    pristine = path + ".pristine"
    shutil.copyfile(path, pristine)

    detected = 0
    secrets_under_wrong_attribute = 0
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
            ok = not unlocked and "lock settings" in unlock_error and session.native().GetInfo("login")["locked"]
        else:
            assert unlocked, f"{name}: unlock failed: {unlock_error}"
            ok = refused(session)
        if edit is _swap_server_rows:
            result = session.secret_tool("lookup", "server", "evil.example")
            secrets_under_wrong_attribute += BANK_PASSWORD.encode() in result.stdout
        detected += ok
        if not ok:
            failures.append(name)

    # Untouched, the file still works.
    _stop_daemon(session)
    shutil.copyfile(pristine, path)
    _unlock(session)
    untouched = session.secret_tool("lookup", "server", "bank.example")
    assert untouched.stdout == BANK_PASSWORD.encode(), untouched.stderr.decode() + session.daemon_log()[-3000:]

    record("attribute rows swapped / label, native attribute and header lock settings edited on disk with sqlite3",
           f"{detected} of {len(EDITS)} edits detected, {secrets_under_wrong_attribute} secrets returned under a wrong attribute",
           "all detected", detected == len(EDITS) and secrets_under_wrong_attribute == 0)
    assert not failures, f"undetected: {failures}\n{session.daemon_log()[-2000:]}"
    assert secrets_under_wrong_attribute == 0


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
