"""Someone who can write the keychain file turns a WhenUnlocked item into an AfterFirstUnlock one
(`pdmn` 'ak' → 'ck', with sqlite3 while keywelld is stopped) so that its secret stays readable
after the idle timer locked the keychain. `pdmn` is covered by the item's integrity MAC, so at the
next unlock the item fails its check and keywelld keeps no copy: once locked again, the read is
refused (docs/access-control.md, "Accessibility")."""

from __future__ import annotations

import subprocess
import time

import dbus

from keywell_helpers import bodies_as_test_user, wait_for
from secret_service_helpers import LOGIN_PASSWORD, KeywellBus, session  # noqa: F401
from security_figures import record

BANK_PASSWORD = b"bank-password-5d1e"
MAIL_PASSWORD = b"mail-password-0b7c"


def _keychain(session: KeywellBus) -> str:
    return str(session.home / ".local/share/keywell/keychains/login.keychain-db")


def _sqlite(path: str, sql: str) -> str:
    return subprocess.run(["sqlite3", path, sql], check=True, capture_output=True, text=True).stdout.strip()


def _stop_daemon(session: KeywellBus) -> None:
    for pid in session.keywelld_pids():
        subprocess.run(["kill", "-TERM", str(pid)], check=False)
    deadline = time.monotonic() + 20
    while session.keywelld_pids():
        assert time.monotonic() < deadline, "keywelld did not stop"
        time.sleep(0.05)
    _sqlite(_keychain(session), "PRAGMA wal_checkpoint(TRUNCATE);")


def _lock_by_idle_timer(session: KeywellBus) -> None:
    session.native().SetSettings("login", dbus.Dictionary({"lockAfterSeconds": dbus.UInt32(1)}, signature="sv"))
    wait_for(lambda: bool(session.native().GetInfo("login")["locked"]), "the idle timer to lock login")


def _read(session: KeywellBus, account: str) -> bytes | str:
    """The secret, or the D-Bus error's name."""
    try:
        found = session.native().CopyMatching(
            dbus.Dictionary({"class": "genp", "svce": "attack", "acct": account, "r_Data": True}, signature="sv"))
        return bytes(found[0]["v_Data"])
    except dbus.DBusException as error:
        return error.get_dbus_name()


def test_a_pdmn_edited_on_disk_gives_no_read_while_locked(session):
    session.create_login()
    for account, accessibility, secret in (("bank", "ak", BANK_PASSWORD), ("mail", "ck", MAIL_PASSWORD)):
        session.native().Add(dbus.Dictionary({"class": "genp", "svce": "attack", "acct": account, "pdmn": accessibility,
                                              "v_Data": dbus.ByteArray(secret)}, signature="sv"))
    # Untouched, AfterFirstUnlock works (the test is not vacuous) and WhenUnlocked is refused.
    _lock_by_idle_timer(session)
    assert _read(session, "mail") == MAIL_PASSWORD
    assert _read(session, "bank").endswith("InteractionNotAllowed")

    _stop_daemon(session)
    path = _keychain(session)
    _sqlite(path, "UPDATE item SET pdmn = 'ck', pdmn_n = 'ck' WHERE acct = 'bank'")
    session.native().Unlock("login", dbus.ByteArray(LOGIN_PASSWORD.encode()))
    _lock_by_idle_timer(session)
    result = _read(session, "bank")
    refused = result != BANK_PASSWORD and isinstance(result, str) and result.endswith("InteractionNotAllowed")
    record("pdmn edited on disk (ak → ck) to read a WhenUnlocked secret after the idle lock",
           f"{0 if refused else 1} of 1 secrets returned", "0 returned", refused)
    assert refused, (result, session.daemon_log()[-2000:])


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
