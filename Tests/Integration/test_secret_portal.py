"""The Secret portal, end to end: sandboxed apps ask the real xdg-desktop-portal for their master
secret and keywelld, as its backend, hands each app a 64-byte secret of its own, kept in the
login keychain and the same after keywelld restarts (docs/portal.md).

Needs KEYWELLD (scripts/test.sh sets it), xdg-desktop-portal and bwrap (scripts/setup.sh).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from keywell_helpers import bodies_as_test_user, user_tmp  # noqa: F401 (user_tmp: a fixture)
from portal_helpers import BACKEND, PortalSession, portal  # noqa: F401 (fixture)
from secret_service_helpers import LOGIN_PASSWORD, KeywellBus

APP = "org.example.App"
OTHER_APP = "org.example.Other"


def stored_items(portal, app_id: str) -> list[dict]:
    """The login keychain's items for `app_id`, as a Secret Service client outside the sandbox
    sees them: locked for it (the item trusts the app alone, docs/portal.md) until the person
    answers Allow to its Unlock prompt."""
    import secretstorage
    from secretstorage.util import unlock_objects
    connection = portal.bus.jeepney()
    collection = secretstorage.get_default_collection(connection)
    items = list(collection.search_items({"app_id": app_id}))
    assert all(item.is_locked() for item in items), "the app's secret is open to programs outside its sandbox"
    portal.bus.pinentry_answers("allow")
    assert not items or not unlock_objects(connection, [item.item_path for item in items])
    return [{"label": item.get_label(), "attributes": item.get_attributes(), "secret": item.get_secret()}
            for item in items]


def access_list(portal, label: str) -> list[str] | str:
    """The access list of the login keychain's item labelled `label`, read with the native API."""
    import dbus
    found = portal.bus.native().CopyMatching({"class": "genp", "r_Attributes": True, "r_Access": True,
                                              "m_Limit": "m_LimitAll"})
    lists = [entry["acls"] for entry in found if str(entry.get("labl", "")) == label]
    assert len(lists) == 1, found
    return str(lists[0]) if isinstance(lists[0], dbus.String) else [str(identity) for identity in lists[0]]


def test_each_sandboxed_app_gets_a_stable_secret_of_its_own(portal):
    first = portal.retrieve(APP, "first")
    assert first["handle"] == first["expected_handle"]
    assert first["response"] == 0
    secret = bytes.fromhex(first["secret"])
    assert len(secret) == 64

    again = portal.retrieve(APP, "again")
    assert again["response"] == 0 and again["secret"] == first["secret"]

    other = portal.retrieve(OTHER_APP, "other")
    assert other["response"] == 0 and len(bytes.fromhex(other["secret"])) == 64
    assert other["secret"] != first["secret"]

    # Kept in the login keychain as gnome-keyring keeps it, one item per app.
    items = stored_items(portal, APP)
    assert len(items) == 1
    assert items[0]["label"] == f"Application key for {APP}"
    assert items[0]["attributes"]["xdg:schema"] == "org.freedesktop.portal.Secret"
    assert items[0]["secret"] == secret
    # Trusted for the app it serves, not for xdg-desktop-portal, which asked for it.
    assert access_list(portal, f"Application key for {APP}") == [f"flatpak:{APP}"]
    log = portal.bus.daemon_log()
    assert f"gave {APP} its secret (new, stored in \"login\")" in log
    import dbus
    backend = portal.bus.dbus().get_object(BACKEND, "/org/freedesktop/portal/desktop")
    assert backend.Get("org.freedesktop.impl.portal.Secret", "version",
                       dbus_interface="org.freedesktop.DBus.Properties") == 1
    assert first["secret"] not in log and secret.hex().upper() not in log


def test_the_secret_survives_a_restart_and_a_locked_keychain_is_unlocked_through_the_dialog(portal):
    first = portal.retrieve(APP, "before")
    assert first["response"] == 0

    # keywelld stops (locking every keychain); the next portal call starts it again through the bus.
    for pid in portal.bus.keywelld_pids():
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while portal.bus.keywelld_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not portal.bus.keywelld_pids()

    portal.bus.pinentry_answers(LOGIN_PASSWORD)
    after = portal.retrieve(APP, "after")
    assert after["response"] == 0
    assert after["secret"] == first["secret"]
    dialog = "\n".join(portal.bus.pinentry_lines())
    assert "Unlock Keychain" in dialog and APP in dialog


def test_a_locked_keychain_whose_dialog_is_cancelled_gives_a_failure_and_says_why(portal):
    portal.bus.native().Lock("login")
    portal.bus.pinentry_answers(None)
    result = portal.retrieve(APP, "cancelled")
    assert result["response"] == 2
    assert result["secret"] == ""
    assert f"\"login\" stays locked, so {APP} gets no secret" in portal.bus.daemon_log()
    assert stored_items_while_locked_count(portal) == 0


def test_closing_the_request_takes_the_unlock_dialog_away(portal):
    """The app gives up while the unlock dialog is up: xdg-desktop-portal passes Close on to the
    backend's Request, keywelld ends the dialog and the call (response 1), and the keychain
    stays locked."""
    portal.bus.native().Lock("login")
    portal.bus.pinentry_answers({"hold": True})
    result = portal.retrieve(APP, "closed", "--close-when", str(portal.bus.pinentry_log), "HOLDING")
    assert result == {"closed": True}
    expected = f"the request for {APP}'s secret was closed while \"login\" was locked"
    deadline = time.monotonic() + 60
    while expected not in portal.bus.daemon_log() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert expected in portal.bus.daemon_log()
    assert stored_items_while_locked_count(portal) == 0


def stored_items_while_locked_count(portal) -> int:
    """How many portal items the login keychain holds (searching works while it is locked)."""
    import secretstorage
    collection = secretstorage.get_default_collection(portal.bus.jeepney())
    return len(list(collection.search_items({"xdg:schema": "org.freedesktop.portal.Secret"})))


def test_a_caller_outside_any_sandbox_gets_a_failure(portal):
    """xdg-desktop-portal passes an empty app id for a host program; there is no app to keep a
    secret for, and the program can use the Secret Service itself."""
    result = portal.retrieve(None, "host")
    assert result["response"] == 2 and result["secret"] == ""
    assert "no app id (the caller is not sandboxed)" in portal.bus.daemon_log()


def test_descriptors_that_cannot_take_the_secret_fail_cleanly(portal, user_tmp):
    # A pipe whose reader is gone.
    broken = portal.retrieve(APP, "broken", "--fd", "closed-reader")
    assert broken["response"] == 2
    # A pipe nobody reads, already full: the write waits a bounded time, then gives up.
    full = portal.retrieve(APP, "full", "--fd", "full-pipe")
    assert full["response"] == 2
    assert set(bytes.fromhex(full["secret"])) == {ord("x")}
    # Not a pipe or a socket: a file the app opened.
    target = user_tmp / "files" / "secret-here"
    target.parent.mkdir()
    in_file = portal.retrieve(APP, "file", "--fd", f"file:{target}")
    assert in_file["response"] == 2
    assert target.read_bytes() == b""
    log = portal.bus.daemon_log()
    assert "was not delivered: cannot write: Broken pipe" in log
    assert "was not delivered: nobody read the secret within" in log
    assert "was not delivered: the descriptor is not a pipe or a socket" in log
    # The daemon serves on, and the app's secret is the one made by the first of those calls.
    good = portal.retrieve(APP, "good")
    assert good["response"] == 0
    assert bytes.fromhex(good["secret"]) == stored_items(portal, APP)[0]["secret"]


# Hang guard for one secret-tool run in the sandbox (it takes well under a second).
SECRET_TOOL_GUARD = 30


def secret_tool_in_sandbox(portal, app_id: str, *arguments: str, data: Path, input: str | None = None):
    """secret-tool inside `app_id`'s sandbox, its file backend keeping its keyring in `data`.

    libsecret before 0.21.4 (Debian 12 has 0.20.5) starts listening for the portal's Response
    only once RetrieveSecret's reply reached its main loop, so a Response that comes first is
    lost and secret-tool waits for ever (fixed upstream by "file-backend: Subscribe before
    calling dbus"). A run that hangs after keywelld delivered the secret is that race and is run
    again, at most three times; a hang without a delivery fails the test."""
    for _ in range(3):
        delivered = portal.bus.daemon_log().count(f"gave {app_id} its secret")
        try:
            return portal.sandbox(app_id, ["secret-tool", *arguments], env={"XDG_DATA_HOME": str(data)},
                                  binds=[data], input=input, timeout=SECRET_TOOL_GUARD)
        except subprocess.TimeoutExpired:
            assert portal.bus.daemon_log().count(f"gave {app_id} its secret") > delivered, (
                f"secret-tool hung and keywelld never delivered the secret:\n{portal.bus.daemon_log()[-3000:]}")
    pytest.fail("secret-tool lost libsecret's portal race three times in a row")


def test_a_real_libsecret_app_keeps_its_passwords_through_the_portal(portal):
    """secret-tool inside the sandbox: libsecret sees /.flatpak-info, uses its file backend, and
    takes the file's key from the portal. Another app reading the same file gets nothing."""
    data = portal.bus.root / "app-data"
    data.mkdir()
    stored = secret_tool_in_sandbox(portal, APP, "store", "--label=Note", "service", "demo", data=data,
                                    input="s3cret-value")
    assert stored.returncode == 0, stored.stderr
    looked_up = secret_tool_in_sandbox(portal, APP, "lookup", "service", "demo", data=data)
    assert looked_up.returncode == 0 and looked_up.stdout == b"s3cret-value", looked_up.stderr
    keyring = data / "keyrings" / "default.keyring"
    assert b"s3cret-value" not in keyring.read_bytes()

    other = secret_tool_in_sandbox(portal, OTHER_APP, "lookup", "service", "demo", data=data)
    assert other.returncode != 0 and other.stdout == b""


def test_a_desktop_set_up_for_gnome_keyring_reaches_keywell_too():
    """gnome-keyring's backend file names org.freedesktop.secrets; keywelld owns that name and
    answers the portal there as well, so a desktop whose configuration picks gnome-keyring's file
    (GNOME's does) gets Keywell's secrets."""
    bus = KeywellBus()
    session = None
    try:
        bus.create_login()
        gnome_keyring_file = ("[portal]\nDBusName=org.freedesktop.secrets\n"
                              "Interfaces=org.freedesktop.impl.portal.Secret\nUseIn=gnome\n")
        session = PortalSession(bus, {"gnome-keyring.portal": gnome_keyring_file})
        result = session.retrieve(APP, "through_secrets")
        assert result["response"] == 0 and len(bytes.fromhex(result["secret"])) == 64
        assert "Using gnome-keyring.portal for org.freedesktop.impl.portal.Secret" in session.log()
        assert f"gave {APP} its secret" in bus.daemon_log()
    finally:
        if session is not None:
            session.close()
        bus.close()


def test_a_locked_keychain_with_no_dialog_to_show_fails_at_once_and_says_why():
    """No display and no configured terminal: the portal call fails (response 2) without starting
    a dialog that could only fail, and the daemon's log says why and what to run."""
    bus = KeywellBus(scripted_pinentry=False)
    session = None
    try:
        bus.create_login()
        session = PortalSession(bus)
        bus.native().Lock("login")
        result = session.retrieve(APP, "no_dialog")
        assert result["response"] == 2 and result["secret"] == ""
        log = bus.daemon_log()
        assert "no password dialog can be shown" in log and f"so {APP} gets no secret" in log, log[-2000:]
        assert "keywell unlock-keychain login" in log
    finally:
        if session is not None:
            session.close()
        bus.close()


# Every test here calls keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
