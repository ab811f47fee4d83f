"""The plumbing that runs keywelld as a desktop does, as a user of its own (docs/contributing.md,
"Whom the integration tests run keywelld as"): an account's bus, keywelld and clients run as the
throwaway test user, a test body can run as that user, and keywelld refuses root's calls then,
which is why the bodies that call it from pytest's process must drop to that user."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from keywell_helpers import CLIAccount, as_test_user, built, throwaway_user
from secret_service_helpers import NATIVE, NATIVE_IFACE, NATIVE_PATH, KeywellBus


def uid_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("\nUid:")[1].split()[1])  # the effective uid


@pytest.fixture
def cli():
    account = CLIAccount(built("KEYWELL"), built("KEYWELLD"), prefix="kwtestuser-", extra_env={"KEYWELL_TEST_FAST_KDF": "1"})
    try:
        yield account
    finally:
        account.close()


def test_the_bus_keywelld_and_their_files_are_the_test_users(cli):
    user = throwaway_user()
    assert user.uid not in (None, 0) and cli.owner == user
    cli.run("create-keychain", "-p", "pw", "login")
    daemon = subprocess.run(["pgrep", "-s", str(cli.bus.pid), "-x", "keywelld"], capture_output=True, text=True)
    pids = [int(pid) for pid in daemon.stdout.split()]
    assert len(pids) == 1, daemon
    assert uid_of(pids[0]) == user.uid and uid_of(cli.bus.pid) == user.uid
    keychain = cli.keychains / "login.keychain-db"
    assert keychain.stat().st_uid == user.uid and keychain.stat().st_mode & 0o777 == 0o600


def test_keywelld_refuses_root_as_another_user(cli):
    """The account's bus lets anyone connect; keywelld itself turns root away."""
    import dbus
    cli.run("create-keychain", "-p", "pw", "login")
    connection = dbus.bus.BusConnection(cli.env["DBUS_SESSION_BUS_ADDRESS"])
    try:
        native = dbus.Interface(connection.get_object(NATIVE, NATIVE_PATH), NATIVE_IFACE)
        with pytest.raises(dbus.DBusException, match="MissingEntitlement.*cannot be identified"):
            native.GetDefaultKeychain()
    finally:
        connection.close()


@as_test_user
def test_a_body_run_as_the_test_user_is_served():
    bus = KeywellBus()
    try:
        assert os.geteuid() == throwaway_user().uid and bus.owner == throwaway_user()
        bus.create_login()
        assert str(bus.native().GetDefaultKeychain()) == "login"
        assert all(uid_of(pid) == os.geteuid() for pid in bus.keywelld_pids())
    finally:
        bus.close()


def test_a_failure_or_skip_in_the_users_body_is_the_tests():
    def fails():
        assert 1 + 1 == 3, "arithmetic"

    def skips():
        pytest.skip("said why")

    with pytest.raises(pytest.fail.Exception, match="arithmetic"):
        throwaway_user().call(fails)
    with pytest.raises(pytest.skip.Exception, match="said why"):
        throwaway_user().call(skips)
    # A body that dies without reporting fails too, and so does one that hangs.
    with pytest.raises(pytest.fail.Exception, match="without a report"):
        throwaway_user().call(os._exit, 3)
    with pytest.raises(pytest.fail.Exception, match="ran over 1 s"):
        throwaway_user().call(time.sleep, 120, timeout=1)
