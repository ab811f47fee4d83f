"""Sync between machines (docs/sync.md), for real on one machine as two: two fresh accounts, each
with its own keywelld on its own private bus and its own real Syncthing (Debian's, listening on
loopback ports only, with discovery, relays, NAT traversal and usage reporting off), sharing one
folder between them as Syncthing shares it between two computers.

Steps, in one test so that the two Syncthings connect once: enable on A, a wrong then the right
password on B; an item added, changed and deleted on A shows on B; a ThisDeviceOnly item stays;
arrivals while B is locked merge at unlock; concurrent changes made while Syncthing is paused
converge on both sides and keep the loser in `sync conflicts`; altered, cut and renamed records
are refused while the rest merges; no label, account or secret is readable in either folder.
Needs KEYWELL, KEYWELLD and Debian's syncthing (scripts/setup.sh); without them it fails.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import socket
import subprocess
import time
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from keywell_helpers import CLIAccount, accounts_of, bodies_as_test_user, built, wait_for

SYNC_PASSWORD = "correct horse sync"
EXIT_AUTH_FAILED = 51  # errSecAuthFailed's low byte, as unlock-keychain exits
SECRETS = {"alice": "alice-Secret-7f3a", "bob": "bob-Secret-99c1"}
LABEL = "Label-Visible-5d2e"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Syncthing:
    """One Syncthing with its own home, GUI/REST on a loopback port, listening on another."""

    def __init__(self, home: Path, name: str) -> None:
        self.home, self.name = home, name
        generated = subprocess.run(["syncthing", "generate", f"--home={home}", "--no-default-folder"],
                                   capture_output=True, text=True, timeout=60)
        assert generated.returncode == 0, generated.stderr
        found = re.search(r"Device ID: (\S+)", generated.stdout + generated.stderr)
        assert found, generated.stdout + generated.stderr
        self.device_id = found.group(1)
        self.gui_port, self.listen_port = free_port(), free_port()
        self.api_key = f"keywell-test-{name}-{self.gui_port}"
        self.process: subprocess.Popen | None = None

    def configure(self, folder: Path, peer: Syncthing) -> None:
        path = self.home / "config.xml"
        tree = ET.parse(path)
        root = tree.getroot()
        gui = root.find("gui")
        gui.find("address").text = f"127.0.0.1:{self.gui_port}"
        gui.find("apikey").text = self.api_key
        options = root.find("options")
        for tag, value in {"listenAddress": f"tcp://127.0.0.1:{self.listen_port}", "globalAnnounceEnabled": "false",
                           "localAnnounceEnabled": "false", "relaysEnabled": "false", "natEnabled": "false",
                           "startBrowser": "false", "urAccepted": "-1", "crashReportingEnabled": "false",
                           "autoUpgradeIntervalH": "0",
                           # Redial within seconds after a pause, not Syncthing's default minute: the
                           # conflict step resumes both sides and waits for them to meet again.
                           "reconnectionIntervalS": "3"}.items():
            element = options.find(tag)
            if element is None:
                element = ET.SubElement(options, tag)
            element.text = value
        defaults = root.find("defaults")
        device = ET.fromstring(ET.tostring(defaults.find("device")))
        device.set("id", peer.device_id)
        device.set("name", peer.name)
        for address in device.findall("address"):
            device.remove(address)
        ET.SubElement(device, "address").text = f"tcp://127.0.0.1:{peer.listen_port}"
        root.append(device)
        shared = ET.fromstring(ET.tostring(defaults.find("folder")))
        shared.attrib.update({"id": "keywell", "label": "keywell", "path": str(folder), "type": "sendreceive",
                              "rescanIntervalS": "5", "fsWatcherEnabled": "true", "fsWatcherDelayS": "1"})
        for old in shared.findall("device"):
            shared.remove(old)
        for device_id in (self.device_id, peer.device_id):
            ET.SubElement(shared, "device", {"id": device_id, "introducedBy": ""})
        root.append(shared)
        tree.write(path)

    def start(self) -> None:
        log = open(self.home / "syncthing.log", "wb")
        self.process = subprocess.Popen(
            ["syncthing", "serve", f"--home={self.home}", "--no-browser", "--no-restart", "--no-upgrade"],
            stdout=log, stderr=subprocess.STDOUT, env={"PATH": "/usr/bin:/bin", "HOME": str(self.home),
                                                      "STNOUPGRADE": "1", "STNORESTART": "1"},
            start_new_session=True)

    def rest(self, method: str, path: str) -> dict | None:
        request = urllib.request.Request(f"http://127.0.0.1:{self.gui_port}{path}", method=method,
                                         headers={"X-API-Key": self.api_key})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                body = response.read()
        except OSError:
            return None
        return json.loads(body) if body else {}

    def connected(self, peer: Syncthing) -> bool:
        connections = self.rest("GET", "/rest/system/connections") or {}
        return bool(connections.get("connections", {}).get(peer.device_id, {}).get("connected"))

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def log(self) -> str:
        return (self.home / "syncthing.log").read_text(errors="replace")[-3000:]


class Machine(CLIAccount):
    """A fresh account (HOME, XDG folders, bus, keywelld) with its own Syncthing and sync folder."""

    def __init__(self, keywell: str, keywelld: str, name: str) -> None:
        super().__init__(keywell, keywelld, prefix=f"kwsync-{name}-", extra_env={"KEYWELL_TEST_FAST_KDF": "1"})
        self.name = name
        self.folder = self.root / "sync"
        self.folder.mkdir(mode=0o700)
        (self.folder / ".stfolder").mkdir()
        (self.folder / ".stignore").write_text(".keywell-tmp-*\n")
        self.syncthing = Syncthing(self.root / "syncthing", name)

    def close(self) -> None:
        self.syncthing.stop()
        super().close()

    def secret(self, account: str) -> str | None:
        result = self.run("find-generic-password", "-a", account, "-s", "svc", "-w", check=False)
        return result.stdout.strip() if result.returncode == 0 else None

    def records(self) -> set[str]:
        return {path.name for path in self.folder.iterdir() if path.suffix in (".rec", ".snap")}

    def status(self) -> dict:
        return json.loads(self.run("sync", "status", "--json").stdout)

    def native_add(self, attributes: dict) -> None:
        """An item through the native API (for attributes the CLI does not set, like `pdmn`)."""
        script = ("import dbus, json, sys\n"
                  "native = dbus.Interface(dbus.SessionBus().get_object('org.keywell.Keychain', '/org/keywell/Keychain'),"
                  " 'org.keywell.Keychain1')\n"
                  "attributes = json.loads(sys.argv[1])\n"
                  "attributes['v_Data'] = dbus.ByteArray(attributes['v_Data'].encode())\n"
                  "native.Add(dbus.Dictionary(attributes, signature='sv'))\n")
        result = subprocess.run(["/usr/bin/python3", "-c", script, json.dumps(attributes)], capture_output=True, text=True,
                                env=self.env, timeout=60)
        assert result.returncode == 0, result.stderr


@pytest.fixture
def machines():
    if shutil.which("syncthing") is None:
        pytest.fail("syncthing is needed: run scripts/setup.sh (Debian's syncthing)")
    binaries = built("KEYWELL"), built("KEYWELLD")
    names = iter(["a", "b"])
    yield from accounts_of(lambda: Machine(*binaries, next(names)))


def test_two_machines_sync_through_syncthing(machines):
    a, b = machines(), machines()
    for machine in (a, b):
        machine.run("create-keychain", "-p", "pw", "login")
        machine.run("set-keychain-settings", "--enforce-access", "off", "login")
    a.syncthing.configure(a.folder, b.syncthing)
    b.syncthing.configure(b.folder, a.syncthing)
    a.syncthing.start()
    b.syncthing.start()
    try:
        run_steps(a, b)
    except BaseException:
        print("syncthing A:\n" + a.syncthing.log() + "\nsyncthing B:\n" + b.syncthing.log())
        print("bus/daemon A:\n" + a.log.read_text(errors="replace")[-4000:])
        print("bus/daemon B:\n" + b.log.read_text(errors="replace")[-4000:])
        raise


def run_steps(a: Machine, b: Machine) -> None:
    wait_for(lambda: a.syncthing.connected(b.syncthing) and b.syncthing.connected(a.syncthing), "the Syncthings to connect")
    a.run("add-generic-password", "-a", "before", "-s", "svc", "-l", LABEL, "-w", "before-Secret-0e1d", "login")

    a.run("sync", "enable", a.folder.as_posix(), input=SYNC_PASSWORD + "\n")
    assert a.status()["folder"] == a.folder.as_posix()
    wait_for(lambda: (b.folder / "keywell-sync.header").exists() and b.records() >= a.records(), "A's mirror to reach B", 60)

    # A wrong password exits 51, says so, and changes neither the keychain, its status nor the folder.
    before = sorted(path.name for path in b.folder.iterdir())
    wrong = b.run("sync", "join", b.folder.as_posix(), input="wrong password\n", check=False)
    assert wrong.returncode == EXIT_AUTH_FAILED, wrong.stderr
    assert "password" in wrong.stderr
    assert b.run("sync", "status").stdout.splitlines()[0] == "disabled"
    assert sorted(path.name for path in b.folder.iterdir()) == before
    assert b.secret("before") is None

    b.run("sync", "join", b.folder.as_posix(), input=SYNC_PASSWORD + "\n")
    assert b.secret("before") == "before-Secret-0e1d"
    status = b.run("sync", "status").stdout.splitlines()
    assert status[0] == f"enabled {b.folder.as_posix()}"
    assert sum(line.startswith("machine ") for line in status) == 2 and status[-1] == "refused: 0", status

    # Added, changed, deleted on A: on B within 60 s each.
    start = time.monotonic()
    a.run("add-generic-password", "-a", "alice", "-s", "svc", "-l", LABEL, "-w", SECRETS["alice"], "login")
    wait_for(lambda: b.secret("alice") == SECRETS["alice"], "alice's item on B", 60)
    added_after = time.monotonic() - start
    a.run("add-generic-password", "-U", "-a", "alice", "-s", "svc", "-l", LABEL, "-w", SECRETS["alice"] + "-2", "login")
    wait_for(lambda: b.secret("alice") == SECRETS["alice"] + "-2", "alice's change on B", 60)
    a.run("delete-generic-password", "-a", "alice", "-s", "svc", "login")
    wait_for(lambda: b.secret("alice") is None, "alice's deletion on B", 60)
    print(f"an item added on A showed on B after {added_after:.1f} s")

    # A ThisDeviceOnly item never leaves A.
    a.native_add({"class": "genp", "acct": "local-only", "svce": "svc", "pdmn": "aku", "v_Data": "local-Secret-4b2c"})
    a.run("add-generic-password", "-a", "marker", "-s", "svc", "-w", "marker-Secret-1", "login")
    wait_for(lambda: b.secret("marker") == "marker-Secret-1", "the marker item on B", 60)
    assert b.secret("local-only") is None
    assert a.secret("local-only") == "local-Secret-4b2c"

    # Arrivals while B is locked merge at its unlock.
    b.run("lock-keychain", "login")
    a.run("add-generic-password", "-a", "while-locked", "-s", "svc", "-w", "locked-Secret-2", "login")
    wait_for(lambda: b.records() >= a.records(), "A's new record in B's folder", 60)
    time.sleep(2)
    assert b.run("find-generic-password", "-a", "while-locked", "-s", "svc", "login", check=False).returncode != 0
    b.run("unlock-keychain", "-p", "pw", "login")
    wait_for(lambda: b.secret("while-locked") == "locked-Secret-2", "the item that arrived while locked", 15)

    # Concurrent changes while Syncthing is paused: both converge on the newest, the other is kept.
    a.run("add-generic-password", "-a", "bob", "-s", "svc", "-l", LABEL, "-w", "bob-start", "login")
    wait_for(lambda: b.secret("bob") == "bob-start", "bob's item on B", 60)
    for machine in (a, b):
        assert machine.syncthing.rest("POST", "/rest/system/pause") is not None
    wait_for(lambda: not a.syncthing.connected(b.syncthing), "Syncthing to pause", 30)
    b.run("add-generic-password", "-U", "-a", "bob", "-s", "svc", "-l", LABEL, "-w", "bob-from-B", "login")
    time.sleep(0.05)
    a.run("add-generic-password", "-U", "-a", "bob", "-s", "svc", "-l", LABEL, "-w", SECRETS["bob"], "login")
    time.sleep(1.5)
    for machine in (a, b):
        assert machine.syncthing.rest("POST", "/rest/system/resume") is not None
    wait_for(lambda: a.syncthing.connected(b.syncthing) and b.syncthing.connected(a.syncthing),
             "the Syncthings to reconnect after the pause", 120)
    for machine in (a, b):
        wait_for(lambda: machine.secret("bob") == SECRETS["bob"], f"bob's newest version on {machine.name}", 60)
        kept = wait_for(lambda: json.loads(machine.run("sync", "conflicts", "--json").stdout), f"the kept version on {machine.name}", 60)
        assert [entry["account"] for entry in kept] == ["bob"], kept
        assert set(kept[0]) == {"label", "service", "account", "when", "machine"}
        assert machine.run("sync", "conflicts", "-w", "1").stdout.strip() == "bob-from-B"
        line = machine.run("sync", "conflicts").stdout.splitlines()[0].split("\t")
        assert line[:3] == [LABEL, "svc", "bob"] and len(line) == 5, line

    # Altered, cut and renamed records written into B's folder are refused; the rest still merges.
    a_id = a.status()["machines"][0]["id"]
    sample = sorted(a.folder.glob(f"{a_id}-*.rec"))[-1].read_bytes()
    altered = bytearray(sample)
    altered[len(altered) // 2] ^= 0x01
    (b.folder / f"{a_id}-900001.rec").write_bytes(bytes(altered))
    (b.folder / f"{a_id}-900002.rec").write_bytes(sample[:-7])
    (b.folder / f"{a_id}-900003.rec").write_bytes(sample)
    a.run("add-generic-password", "-a", "after-attack", "-s", "svc", "-w", "after-Secret-3", "login")
    wait_for(lambda: b.secret("after-attack") == "after-Secret-3", "the next item on B despite the bad files", 60)
    refused = wait_for(lambda: b.status()["refused"] >= 3 and b.status(), "the bad files to be refused", 30)
    assert {entry["file"] for entry in refused["refusedFiles"]} >= {f"{a_id}-90000{n}.rec" for n in (1, 2, 3)}, refused
    log = b.log.read_text(errors="replace")
    assert f"{a_id}-900001.rec" in log and "refused" in log

    # Nothing readable in either folder: no label, account or secret, as text, hex or base64.
    words = [LABEL, "alice", "before-Secret-0e1d", "local-Secret-4b2c", "marker-Secret-1", "bob-from-B", *SECRETS.values()]
    for machine in (a, b):
        blobs = [path.read_bytes() for path in machine.folder.rglob("*") if path.is_file() and ".stfolder" not in path.parts]
        for word in words:
            raw = word.encode()
            for form in (raw, raw.hex().encode(), raw.hex().upper().encode(), base64.b64encode(raw)):
                assert not any(form in blob for blob in blobs), f"{word!r} readable in {machine.name}'s folder"


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
