"""Collection signals seen by outside subscribers (dbus-monitor, python secretstorage) for changes
made through every face of keywelld: the `keywell` CLI, the native API, the Secret Service, and
pam_keywell's control socket at the last logout. Each test has its own private bus on which
keywelld is D-Bus activated (secret_service_helpers.KeywellBus).

No timed waits: a test knows every earlier signal has arrived once a marker signal it caused
afterwards has (a bus delivers one sender's signals in order).
"""

from __future__ import annotations

import os
import select
import socket
import struct
import subprocess
import time

import secretstorage

from secret_service_helpers import SERVICE_PATH, KeywellBus, built, session  # noqa: F401

MEMORY = f"{SERVICE_PATH}/collection/session"


class Monitor:
    """dbus-monitor on the bus, for signals under /org/freedesktop/secrets, parsed into
    (member, path, first object-path or string argument)."""

    def __init__(self, bus: KeywellBus) -> None:
        self.bus = bus
        self.process = subprocess.Popen(
            ["dbus-monitor", "--address", bus.address, f"type='signal',path_namespace='{SERVICE_PATH}'"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=bus.env)
        self.lines: list[str] = []
        self.marks = 0
        self.sync()  # it is listening once it sees our first marker

    def sync(self) -> None:
        """Causes a marker signal (a new label on the in-memory collection) and reads until it
        shows. Until dbus-monitor is listening a marker can go unseen, so another follows each
        second without one; once one shows, every signal sent before it has shown too."""
        connection = self.bus.jeepney()
        memory = secretstorage.Collection(connection, MEMORY)
        tokens: list[str] = []
        for _ in range(30):
            self.marks += 1
            tokens.append(f"marker {self.marks}")
            memory.set_label(tokens[-1])
            stop = time.monotonic() + 1
            while time.monotonic() < stop:
                if any(token in line for token in tokens for line in self.lines):
                    return
                ready, _, _ = select.select([self.process.stdout], [], [], 0.1)
                if ready:
                    line = self.process.stdout.readline()
                    if not line:
                        raise AssertionError("dbus-monitor ended")
                    self.lines.append(line.decode(errors="replace").rstrip("\n"))
        raise AssertionError("dbus-monitor never showed a marker:\n" + "\n".join(self.lines[-40:]))

    def signals(self) -> list[tuple[str, str, str]]:
        """Every signal so far, markers left out."""
        found = []
        for index, line in enumerate(self.lines):
            if not line.startswith("signal "):
                continue
            fields = dict(part.split("=", 1) for part in line.replace(";", "").split() if "=" in part)
            argument = ""
            if index + 1 < len(self.lines):
                following = self.lines[index + 1].strip()
                if following.startswith(("object path ", "string ")):
                    argument = following.split('"')[1]
            found.append((fields.get("member", ""), fields.get("path", ""), argument))
        return [s for s in found if not ((s[0] == "PropertiesChanged" and s[1] == MEMORY)
                                         or (s[0] == "CollectionChanged" and s[2] == MEMORY))]

    def named(self, *members: str) -> list[tuple[str, str]]:
        return [(member, argument) for member, _, argument in self.signals() if member in members]

    def close(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=5)


def _started(session: KeywellBus) -> Monitor:
    # Through the Secret Service's name, so both faces are up before anything is watched.
    secretstorage.Collection(session.jeepney(), MEMORY).get_label()
    return Monitor(session)


def _control(session: KeywellBus, op: str) -> int:
    """One request on pam_keywell's control socket (docs/control-protocol.md); the status."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(10)
        connection.connect(os.path.join(session.runtime, "keywell", "control"))
        connection.sendall(b"KWC1" + op.encode() + b"\x00")
        answer = b""
        while chunk := connection.recv(4096):
            answer += chunk
    assert answer[:4] == b"KWC1"
    return struct.unpack(">i", answer[4:8])[0]


def test_keychains_the_cli_makes_and_deletes_are_announced_once(session):
    keywell = built("KEYWELL")
    session.create_login()
    monitor = _started(session)
    try:
        session.run([keywell, "create-keychain", "-p", "pw", "spare"], check=True)
        connection = session.jeepney()
        paths = [c.collection_path for c in secretstorage.get_all_collections(connection)]
        assert f"{SERVICE_PATH}/collection/spare" in paths
        session.run([keywell, "delete-keychain", "spare"], check=True)
        monitor.sync()
        assert monitor.named("CollectionCreated", "CollectionDeleted") == [
            ("CollectionCreated", f"{SERVICE_PATH}/collection/spare"),
            ("CollectionDeleted", f"{SERVICE_PATH}/collection/spare"),
        ]
        paths = [c.collection_path for c in secretstorage.get_all_collections(connection)]
        assert f"{SERVICE_PATH}/collection/spare" not in paths
    finally:
        monitor.close()


def test_cli_lock_unlock_and_default_change_the_collections(session):
    keywell = built("KEYWELL")
    session.create_login()
    session.run([keywell, "create-keychain", "-p", "pw", "spare"], check=True)
    monitor = _started(session)
    try:
        session.run([keywell, "lock-keychain", "spare"], check=True)
        session.run([keywell, "unlock-keychain", "-p", "pw", "spare"], check=True)
        session.run([keywell, "default-keychain", "-s", "spare"], check=True)
        monitor.sync()
        login, spare = f"{SERVICE_PATH}/collection/login", f"{SERVICE_PATH}/collection/spare"
        assert monitor.named("CollectionChanged") == [
            ("CollectionChanged", spare),  # locked
            ("CollectionChanged", spare),  # unlocked
            ("CollectionChanged", login),  # the alias default left it
            ("CollectionChanged", spare),  # and joined this one
        ]
        # The alias path secretstorage uses now stands for spare.
        assert secretstorage.get_default_collection(session.jeepney()).get_label() == "spare"
    finally:
        monitor.close()


def test_secretstorage_sets_a_collection_label_that_is_kept(session):
    session.create_login()
    monitor = _started(session)
    try:
        connection = session.jeepney()
        login = secretstorage.Collection(connection, f"{SERVICE_PATH}/collection/login")
        assert login.get_label() == "login"
        login.set_label("Personal — 個人")
        monitor.sync()
        assert ("CollectionChanged", login.collection_path) in monitor.named("CollectionChanged")
        assert secretstorage.get_default_collection(session.jeepney()).get_label() == "Personal — 個人"
        assert str(session.native().GetDefaultKeychain()) == "login", "the keychain keeps its name"
    finally:
        monitor.close()


def test_the_session_collection_is_emptied_at_the_last_logout(session):
    monitor = _started(session)
    try:
        connection = session.jeepney()
        memory = secretstorage.Collection(connection, MEMORY)
        first = memory.create_item("one", {"app": "a"}, b"s1")
        second = memory.create_item("two", {"app": "b"}, b"s2")
        assert _control(session, "O") == 0
        assert _control(session, "O") == 0
        assert _control(session, "C") == 0
        assert len(list(memory.get_all_items())) == 2, "one login session is still open"
        assert _control(session, "C") == 0
        assert list(memory.get_all_items()) == []
        assert list(secretstorage.search_items(connection, {"app": "a"})) == []
        monitor.sync()
        assert monitor.named("ItemDeleted") == [("ItemDeleted", first.item_path), ("ItemDeleted", second.item_path)]
        # The next session's items live there as before.
        assert memory.create_item("three", {"app": "c"}, b"s3").get_secret() == b"s3"
    finally:
        monitor.close()
