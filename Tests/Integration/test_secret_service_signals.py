"""Collection signals seen by outside subscribers (dbus-monitor, python secretstorage) for changes
made through every face of keywelld: the `keywell` CLI, the native API, the Secret Service, and
pam_keywell's control socket at the last logout. Each test has its own private bus on which
keywelld is D-Bus activated (secret_service_helpers.KeywellBus).

No timed waits: a test knows every earlier signal has arrived once a marker signal it caused
afterwards has (a bus delivers one sender's signals in order).
"""

from __future__ import annotations

import os
import re
import select
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import secretstorage

from keywell_helpers import bodies_as_test_user
from secret_service_helpers import SERVICE_PATH, KeywellBus, built, session  # noqa: F401

MEMORY = f"{SERVICE_PATH}/collection/session"


class Monitor:
    """dbus-monitor on the bus, for signals under /org/freedesktop/secrets, parsed into
    (member, path, first object-path or string argument)."""

    def __init__(self, bus: KeywellBus, also: tuple[str, ...] = ()) -> None:
        """`also`: more match rules, e.g. for replies."""
        self.bus = bus
        self.process = subprocess.Popen(
            ["dbus-monitor", "--address", bus.address, f"type='signal',path_namespace='{SERVICE_PATH}'", *also],
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

    def messages(self) -> list[tuple[str, str, list[str]]]:
        """Every signal so far as (member, path, the lines of its body), markers left out."""
        found = []
        for line in self.lines:
            if line.startswith(("signal ", "method ", "error ")):
                fields = dict(part.split("=", 1) for part in line.replace(";", "").split() if "=" in part)
                found.append((fields.get("member", ""), fields.get("path", ""), []) if line.startswith("signal ") else None)
            elif found and found[-1] is not None:
                found[-1][2].append(line)
        found = [m for m in found if m is not None and m[1].startswith(SERVICE_PATH)]
        return [m for m in found if not (m[1] == MEMORY or (m[0] == "CollectionChanged" and MEMORY in "".join(m[2])))]

    def sequence(self) -> list[tuple]:
        """The signals in order: (member, path, argument) for the Secret Service's own, and
        (PropertiesChanged, path, {property: value text}) for property changes. Fails on any
        PropertiesChanged that invalidates instead of sending the value."""
        result = []
        for member, path, body in self.messages():
            if member != "PropertiesChanged":
                argument = body[0].strip().split('"')[1] if body and '"' in body[0] else ""
                result.append((member, path, argument))
                continue
            changed, invalidated = _properties(body)
            assert not invalidated, f"{path} invalidated {invalidated} instead of sending the values"
            result.append((member, path, changed))
        return result

    def named(self, *members: str) -> list[tuple[str, str]]:
        return [(member, argument) for member, _, argument in self.signals() if member in members]

    def close(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=5)


def _properties(body: list[str]) -> tuple[dict[str, str], list[str]]:
    """A PropertiesChanged body as dbus-monitor prints it: each changed property with its value
    (the printed lines, joined), and the invalidated names."""
    top = [i for i, line in enumerate(body) if line.startswith("   ") and not line.startswith("    ")]
    # top: interface, "array [" (changed), "]", "array [" (invalidated), "]"
    changed_lines = body[top[1] + 1:top[2]]
    invalidated = [line.strip().split('"')[1] for line in body[top[3] + 1:top[4]] if '"' in line]
    changed: dict[str, str] = {}
    name = None
    for line in changed_lines:
        text = line.strip()
        if line.startswith("         string ") and name is None:
            name = text.split('"')[1]
            changed[name] = ""
        elif text == ")":
            name = None
        elif name is not None and text != "dict entry(":
            changed[name] += " " + text.replace("variant", "").strip()
    return {k: v.strip() for k, v in changed.items()}, invalidated


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
        # Each followed by the new Collections (never a bare invalidation: libsecret's handlers
        # of both signals read the cached value, and Seahorse crashed without one).
        steps = [s for s in monitor.sequence() if s[1] == SERVICE_PATH]
        login, spare, memory = (f"{SERVICE_PATH}/collection/{n}" for n in ("login", "spare", "session"))
        assert [(member, argument if member != "PropertiesChanged" else _path_list(argument["Collections"]))
                for member, _, argument in steps] == [
            ("CollectionCreated", spare), ("PropertiesChanged", [login, spare, memory]),
            ("CollectionDeleted", spare), ("PropertiesChanged", [login, memory]),
        ], steps
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


# ---------------------------------------------------------------- the order gnome-keyring sends
# Each sequence is what gnome-keyring-daemon 42 sends for the same step (docs/secret-service.md,
# "Signals"); every PropertiesChanged carries the new values (libsecret updates its caches from
# them, and its handlers of the other signals read those caches).

COLLECTION_IFACE_PATH = f"{SERVICE_PATH}/collection"


def _path_list(value: str) -> list[str]:
    return [part.split('"')[1] for part in value.split("object path ")[1:]]


def test_secret_service_changes_send_signals_in_gnome_keyrings_order_with_values(session):
    session.create_login()
    monitor = _started(session)
    try:
        connection = session.jeepney()
        login_path = f"{COLLECTION_IFACE_PATH}/login"
        login = secretstorage.Collection(connection, login_path)
        item = login.create_item("one", {"app": "a"}, b"s1")
        item.set_label("two")
        item.set_attributes({"app": "b"})
        login.set_label("Mine")
        item.delete()
        monitor.sync()
        steps = monitor.sequence()
        assert [(member, path) for member, path, _ in steps] == [
            ("ItemCreated", login_path), ("PropertiesChanged", login_path),
            ("ItemChanged", login_path), ("PropertiesChanged", item.item_path),
            ("ItemChanged", login_path), ("PropertiesChanged", item.item_path),
            ("CollectionChanged", SERVICE_PATH), ("PropertiesChanged", login_path),
            ("ItemDeleted", login_path), ("PropertiesChanged", login_path),
        ], steps
        assert steps[0][2] == item.item_path and _path_list(steps[1][2]["Items"]) == [item.item_path]
        assert steps[2][2] == item.item_path and steps[3][2]["Label"] == 'string "two"'
        assert 'string "app"' in steps[5][2]["Attributes"] and 'string "b"' in steps[5][2]["Attributes"]
        assert steps[6][2] == login_path and steps[7][2] == {"Label": 'string "Mine"'}
        assert steps[8][2] == item.item_path and _path_list(steps[9][2]["Items"]) == []
    finally:
        monitor.close()


def test_item_signals_follow_the_reply_in_the_order_of_the_changes(session):
    """A Secret Service call's item signals leave right after its reply, so that the bus routes
    the reply first (docs/secret-service.md, "Signals"), and in the order of the changes."""
    session.create_login()
    monitor = Monitor(session, also=("type='method_return'",))
    try:
        login_path = f"{COLLECTION_IFACE_PATH}/login"
        login = secretstorage.Collection(session.jeepney(), login_path)
        items = [login.create_item(f"item {n}", {"app": str(n)}, b"s") for n in range(3)]
        for item in items:
            item.delete()
        monitor.sync()
        paths = [item.item_path for item in items]
        assert monitor.named("ItemCreated", "ItemDeleted") == (
            [("ItemCreated", path) for path in paths] + [("ItemDeleted", path) for path in paths])
        lines = monitor.lines

        def first(kind: str, path: str) -> int:
            return next(index for index, line in enumerate(lines[:-1])
                        if line.startswith(kind) and f'object path "{path}"' in lines[index + 1])
        for path in paths:
            reply = first("method return ", path)
            created = next(index for index, line in enumerate(lines[:-1])
                           if line.startswith("signal ") and "member=ItemCreated" in line and path in lines[index + 1])
            assert reply < created, "\n".join(lines[reply - 5:created + 5])
    finally:
        monitor.close()


def test_cli_item_changes_send_item_signals_with_values(session):
    keywell = built("KEYWELL")
    session.create_login()
    monitor = _started(session)
    try:
        login_path = f"{COLLECTION_IFACE_PATH}/login"
        session.run([keywell, "add-generic-password", "-a", "me", "-s", "cli-item", "-w", "pw1"], check=True)
        monitor.sync()
        steps = monitor.sequence()
        assert [(member, path) for member, path, _ in steps] == [("ItemCreated", login_path), ("PropertiesChanged", login_path)], steps
        made = steps[0][2]
        assert made.startswith(login_path + "/") and _path_list(steps[1][2]["Items"]) == [made]
        # The native API's own signal still says which keychain changed (its clients look again).
        session.run([keywell, "delete-generic-password", "-s", "cli-item"], check=True)
        monitor.sync()
        steps = monitor.sequence()[2:]
        assert steps == [("ItemDeleted", login_path, made), ("PropertiesChanged", login_path, {"Items": "array [ ]"})], steps
    finally:
        monitor.close()


def test_lock_and_unlock_send_item_then_collection_signals(session):
    keywell = built("KEYWELL")
    session.create_login()
    login_path = f"{COLLECTION_IFACE_PATH}/login"
    item = secretstorage.Collection(session.jeepney(), login_path).create_item("one", {"app": "a"}, b"s1")
    monitor = _started(session)
    try:
        session.run([keywell, "lock-keychain", "login"], check=True)
        session.run([keywell, "unlock-keychain", "-p", "login-password", "login"], check=True)
        monitor.sync()
        steps = monitor.sequence()
        for locked, part in (("true", steps[:4]), ("false", steps[4:])):
            assert part == [
                ("ItemChanged", login_path, item.item_path),
                ("CollectionChanged", SERVICE_PATH, login_path),
                ("PropertiesChanged", item.item_path, {"Locked": f"boolean {locked}"}),
                ("PropertiesChanged", login_path, {"Locked": f"boolean {locked}"}),
            ], steps
        assert len(steps) == 8, steps
    finally:
        monitor.close()


def _lock_signal_cap() -> int:
    """ServiceLimits.itemsSignalledOnLockChange, read from its one definition."""
    source = (Path(__file__).resolve().parents[2] / "Sources/KeywellProtocol/ServiceLimits.swift").read_text()
    return int(re.search(r"itemsSignalledOnLockChange = ([\d_]+)", source).group(1).replace("_", ""))


# A long-lived libsecret client holding the collection and its items, as Seahorse does: it reports
# what it holds, then waits (main loop, a hang guard only) for the collection's `locked` to change
# and reports what it sees then, and what a fresh libsecret client finds.
LIBSECRET_WATCHER = r"""
import gi, sys
gi.require_version("Secret", "1")
from gi.repository import GLib, Secret
service = Secret.Service.open_sync(Secret.Service, None, Secret.ServiceFlags.LOAD_COLLECTIONS, None)
login = next(c for c in service.get_collections() if c.get_object_path().endswith("/login"))
login.load_items_sync(None)
loop = GLib.MainLoop()
login.connect("notify::locked", lambda *_: loop.quit())
GLib.timeout_add_seconds(120, loop.quit)
print("holding", len(login.get_items()), login.get_locked(), flush=True)
loop.run()
fresh = Secret.Service.open_sync(Secret.Service, None, Secret.ServiceFlags.NONE, None)
found = fresh.search_sync(None, {"app": "big"}, Secret.SearchFlags.ALL, None)
print("after", login.get_locked(), len(found),
      sum(item.get_locked() for item in found), flush=True)
"""


def test_lock_of_a_collection_over_the_cap_sends_only_its_own_signals(session):
    """Up to the cap every item gets ItemChanged and Locked; one more item and a lock sends only
    CollectionChanged and the collection's Locked, and libsecret clients still see it locked."""
    keywell = built("KEYWELL")
    cap = _lock_signal_cap()
    session.create_login(enforce_access=False)
    login_path = f"{COLLECTION_IFACE_PATH}/login"
    login = secretstorage.Collection(session.jeepney(), login_path)
    items = [login.create_item(f"item {n}", {"app": "big", "n": str(n)}, b"s") for n in range(cap)]
    monitor = _started(session)
    try:
        session.run([keywell, "lock-keychain", "login"], check=True)
        session.run([keywell, "unlock-keychain", "-p", "login-password", "login"], check=True)
        monitor.sync()
        steps = monitor.sequence()
        paths = [item.item_path for item in items]
        for locked, part in (("true", steps[:2 * cap + 2]), ("false", steps[2 * cap + 2:])):
            assert part == [("ItemChanged", login_path, path) for path in paths] + [
                ("CollectionChanged", SERVICE_PATH, login_path)] + [
                ("PropertiesChanged", path, {"Locked": f"boolean {locked}"}) for path in paths] + [
                ("PropertiesChanged", login_path, {"Locked": f"boolean {locked}"})], part[:6]

        login.create_item("one more", {"app": "big", "n": str(cap)}, b"s")
        watcher = subprocess.Popen([sys.executable, "-c", LIBSECRET_WATCHER], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=session.env)
        try:
            assert watcher.stdout.readline().split() == ["holding", str(cap + 1), "False"], watcher.stderr.read()
            monitor.sync()
            before = len(monitor.sequence())
            session.run([keywell, "lock-keychain", "login"], check=True)
            monitor.sync()
            assert monitor.sequence()[before:] == [
                ("CollectionChanged", SERVICE_PATH, login_path),
                ("PropertiesChanged", login_path, {"Locked": "boolean true"}),
            ]
            out, err = watcher.communicate(timeout=120)
        finally:
            watcher.kill()
        # The held collection reads locked; a fresh client finds every item, each locked.
        assert out.split() == ["after", "True", str(cap + 1), str(cap + 1)], (out, err)
    finally:
        monitor.close()


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
