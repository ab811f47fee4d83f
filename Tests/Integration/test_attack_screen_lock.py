"""Attack: another user locks your keychains with a fake "screen locked" signal.

keywelld locks the keychains set to lock on screen lock when logind sends `Lock` for one of the
user's sessions (org.freedesktop.login1.Session, on the system bus). The system bus lets any
connection send a signal straight to any other, with any path, interface and member, so the
daemon must believe only the connection that owns org.freedesktop.login1. Here: a dbus-daemon
with a system-bus policy (anyone may connect, send signals and ask logind; only root may own
login1); a stand-in for logind owned by root that answers `Properties.Get(Session, "User")` for
the user's session; the real keywelld running as one throwaway user; and a second throwaway user
who sends `Lock` for the first user's session path straight to the daemon's unique name. Then
logind's own `Lock` (the positive control) locks.

Needs KEYWELLD (scripts/test.sh sets it) and root.
"""

from __future__ import annotations

import os
import subprocess
import threading

import dbus
import pytest
from jeepney import DBusAddress, MessageType, new_error, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

from keywell_helpers import keywelld, module, real_daemon_kit, wait_for  # noqa: F401 (fixtures)
from pam_helpers import dbus_call, ensure_runtime_dir, start_session_bus
from security_figures import record
from system_bus_helpers import connection_of_uid, start_system_bus

LOGIN1 = "org.freedesktop.login1"
SESSION_IFACE = "org.freedesktop.login1.Session"
SESSION_PATH = "/org/freedesktop/login1/session/_3"

# Runs as the other user: Lock for the victim's session, unicast to the daemon, then a call of
# its own so the bus has routed the signal before it prints its unique name.
FAKE_LOCK = r'''
import sys, dbus, dbus.lowlevel
connection = dbus.bus.BusConnection(sys.argv[1])
message = dbus.lowlevel.SignalMessage(sys.argv[3], "org.freedesktop.login1.Session", "Lock")
message.set_destination(sys.argv[2])
connection.send_message(message)
connection.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", [])
print(connection.get_unique_name())
'''


class FakeLogind:
    """Owns org.freedesktop.login1 (as root) and answers Properties.Get(Session, "User") for
    the sessions it was given; everything else gets UnknownMethod."""

    def __init__(self, address: str, sessions: dict[str, int]) -> None:
        self.connection = open_dbus_connection(bus=address)
        reply = self.connection.send_and_get_reply(message_bus.RequestName(LOGIN1, 4))  # DO_NOT_QUEUE
        assert reply.body == (1,), "the stand-in did not get org.freedesktop.login1"
        self.sessions = sessions
        self.unique_name = self.connection.unique_name
        self.stopped = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped:
            try:
                message = self.connection.receive(timeout=0.2)
            except TimeoutError:
                continue
            except Exception:
                return
            header = message.header
            if header.message_type != MessageType.method_call:
                continue
            path = header.fields.get(1)
            member = header.fields.get(3)
            if member == "Get" and path in self.sessions and tuple(message.body) == (SESSION_IFACE, "User"):
                uid = self.sessions[path]
                self.connection.send(new_method_return(message, "v", (("(uo)", (uid, f"/org/freedesktop/login1/user/_{uid}")),)))
            else:
                self.connection.send(new_error(message, "org.freedesktop.DBus.Error.UnknownMethod", "s", ("not here",)))

    def lock(self, path: str) -> None:
        self.connection.send(new_signal(DBusAddress(path, interface=SESSION_IFACE), "Lock"))

    def close(self) -> None:
        self.stopped = True
        self.thread.join(timeout=5)
        self.connection.close()


@pytest.fixture
def kit(real_daemon_kit):
    return real_daemon_kit


@pytest.fixture
def system_bus(kit):
    # Like the real system bus: anyone may call logind (its own policy decides).
    return start_system_bus(kit, '    <allow send_destination="org.freedesktop.login1"/>\n')


def test_screen_lock_from_another_user_locks_nothing(kit, keywelld, system_bus):
    owner, stranger = kit.user(), kit.user()
    start_session_bus(kit, owner)
    ensure_runtime_dir(owner)
    logind = FakeLogind(system_bus, {SESSION_PATH: owner.uid})
    try:
        log_path = os.path.join(kit.bindir(), "keywelld-screen.log")
        env = dict(kit.user_env(owner), DBUS_SYSTEM_BUS_ADDRESS=system_bus, KEYWELL_TEST_FAST_KDF="1")
        with open(log_path, "w") as log:
            kit.spawn(["setpriv", f"--reuid={owner.uid}", f"--regid={owner.gid}", "--init-groups", "--", keywelld, "--verbose"],
                      env=env, cwd=owner.home, stderr=log, stdout=subprocess.DEVNULL)
        daemon_log = lambda: open(log_path, errors="replace").read()  # noqa: E731
        # Subscribed once it says so (after asking for a sleep inhibitor, which the stand-in refuses).
        wait_for(lambda: "watching logind for sleep" in daemon_log(), "the daemon to watch logind")
        observer = dbus.bus.BusConnection(system_bus)
        daemon = wait_for(lambda: connection_of_uid(observer, owner.uid), "the daemon on the system bus")
        observer.close()
        kit.secrets.append("laptop-pw")
        assert "ok" in dbus_call(kit, owner, "create", "laptop", password="laptop-pw")
        assert dbus_call(kit, owner, "info", "laptop")["ok"]["locked"] is False

        sent = kit.as_user(stranger, ["/usr/bin/python3", "-c", FAKE_LOCK, system_bus, daemon, SESSION_PATH],
                           capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": stranger.home})
        assert sent.returncode == 0, sent.stderr.decode()
        fake = sent.stdout.decode().strip()

        # The daemon either locks (the attack worked) or says it ignored that sender.
        def settled():
            if dbus_call(kit, owner, "info", "laptop")["ok"]["locked"]:
                return "locked"
            return "ignored" if f"ignored Lock from {fake}," in daemon_log() else None
        outcome = wait_for(settled, "the daemon to act on the fake Lock")
        record("another user sends logind's session Lock straight to the daemon on the system bus",
               "keychains locked: " + ("YES" if outcome == "locked" else "no"), "no", outcome == "ignored")
        assert outcome == "ignored", "a fake Lock from another user locked the keychain"

        # logind's own Lock for the user's session still locks it.
        logind.lock(SESSION_PATH)
        wait_for(lambda: dbus_call(kit, owner, "info", "laptop")["ok"]["locked"], "logind's Lock to lock")
    finally:
        logind.close()
