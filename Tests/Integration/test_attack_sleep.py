"""Attack: another user locks your keychains with a fake "going to sleep" signal.

keywelld locks the keychains set to lock on sleep when logind sends PrepareForSleep(true) on
the system bus. The system bus lets any connection send a signal straight to any other, with
any path, interface and member, so the daemon must believe only the connection that owns
org.freedesktop.login1. Here: a dbus-daemon with a system-bus policy (anyone may connect and
send signals, only root may own login1) the test writes; a stand-in for logind owned by root;
the real keywelld running as one throwaway user; and a second throwaway user who sends
PrepareForSleep(true) to the daemon's unique name.

Needs KEYWELLD (scripts/test.sh sets it) and root.
"""

from __future__ import annotations

import os
import subprocess

import dbus
import dbus.lowlevel
import pytest

from keywell_helpers import keywelld, module, real_daemon_kit, wait_for  # noqa: F401 (fixtures)
from pam_helpers import dbus_call, ensure_runtime_dir, start_session_bus
from security_figures import record
from system_bus_helpers import connection_of_uid, start_system_bus

LOGIN1 = "org.freedesktop.login1"
LOGIN1_PATH = "/org/freedesktop/login1"
MANAGER = "org.freedesktop.login1.Manager"

# Runs as the other user: PrepareForSleep(true) to one connection, then a call of its own, so the
# bus has routed the signal before it prints its unique name.
FAKE_SLEEP = r'''
import sys, dbus, dbus.lowlevel
connection = dbus.bus.BusConnection(sys.argv[1])
message = dbus.lowlevel.SignalMessage("/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep")
message.set_destination(sys.argv[2])
message.append(True, signature="b")
connection.send_message(message)
connection.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", [])
print(connection.get_unique_name())
'''


@pytest.fixture
def kit(real_daemon_kit):
    return real_daemon_kit


@pytest.fixture
def system_bus(kit):
    # The real system bus also lets strangers ping.
    return start_system_bus(kit, '    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Peer"/>\n')


def test_prepare_for_sleep_from_another_user_locks_nothing(kit, keywelld, system_bus):
    owner, stranger = kit.user(), kit.user()
    start_session_bus(kit, owner)
    ensure_runtime_dir(owner)
    log_path = os.path.join(kit.bindir(), "keywelld.log")
    env = dict(kit.user_env(owner), DBUS_SYSTEM_BUS_ADDRESS=system_bus, KEYWELL_TEST_FAST_KDF="1")
    with open(log_path, "w") as log:
        kit.spawn(["setpriv", f"--reuid={owner.uid}", f"--regid={owner.gid}", "--init-groups", "--", keywelld, "--verbose"],
                  env=env, cwd=owner.home, stderr=log, stdout=subprocess.DEVNULL)
    daemon_log = lambda: open(log_path, errors="replace").read()  # noqa: E731

    logind = dbus.bus.BusConnection(system_bus)
    assert logind.request_name(LOGIN1, dbus.bus.NAME_FLAG_DO_NOT_QUEUE) == dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER
    # The daemon is subscribed once it says so (after its Inhibit call, which this policy refuses).
    wait_for(lambda: "watching logind for sleep" in daemon_log(), "the daemon to watch logind")
    daemon = wait_for(lambda: connection_of_uid(logind, owner.uid), "the daemon on the system bus")
    kit.secrets.append("laptop-pw")
    assert "ok" in dbus_call(kit, owner, "create", "laptop", password="laptop-pw")
    assert dbus_call(kit, owner, "info", "laptop")["ok"]["locked"] is False

    sent = kit.as_user(stranger, ["/usr/bin/python3", "-c", FAKE_SLEEP, system_bus, daemon],
                       capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": stranger.home})
    assert sent.returncode == 0, sent.stderr.decode()
    fake = sent.stdout.decode().strip()

    # The daemon either locks (the attack worked) or says it ignored that sender.
    def settled():
        if dbus_call(kit, owner, "info", "laptop")["ok"]["locked"]:
            return "locked"
        return "ignored" if f"ignored PrepareForSleep from {fake}," in daemon_log() else None
    outcome = wait_for(settled, "the daemon to act on the fake PrepareForSleep")
    record("another user sends PrepareForSleep(true) straight to the daemon on the system bus",
           "keychains locked: " + ("YES" if outcome == "locked" else "no"), "no", outcome == "ignored")
    assert outcome == "ignored", "a fake PrepareForSleep from another user locked the keychain"

    # logind's own announcement still locks it.
    logind.send_message(_prepare_for_sleep(True))
    wait_for(lambda: dbus_call(kit, owner, "info", "laptop")["ok"]["locked"], "logind's PrepareForSleep to lock")
    logind.close()


def _prepare_for_sleep(sleeping: bool):
    message = dbus.lowlevel.SignalMessage(LOGIN1_PATH, MANAGER, "PrepareForSleep")
    message.append(sleeping, signature="b")
    return message
