"""Other users and planted files: what another account can and cannot do to a user's Keywell.

The owner runs the real keywelld on a private session bus at $XDG_RUNTIME_DIR/bus; a second
throwaway user (the attacker) probes it. Where the folders' modes alone would stop the attacker
we also open a door on purpose (a hard link to the socket in a folder everyone can enter) to
show that the next line of defence holds too: the bus's EXTERNAL authentication and the
control socket's SO_PEERCRED check.

Needs root and KEYWELLD (scripts/test.sh sets it).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from pam_helpers import (
    Kit, SyslogCapture, User, dbus_call, keywelld_pids, module_path, require_root_and_tools,
    start_session_bus,
)
from security_figures import record

# Runs as the attacker: tries the owner's bus, control socket, files and daemon memory; prints one
# line per probe, "<probe> refused <exception> <message>" or "<probe> ALLOWED". Every probe also
# runs where it must succeed (as the owner, or as root for the daemon's memory): a probe with a
# wrong path or a broken check would fail there, so a refusal counts only next to that success.
PROBE = r'''
import os, socket, struct, sys
import dbus

def probe(name, attempt):
    try:
        attempt()
        print(name, "ALLOWED")
    except Exception as e:
        print(name, "refused", type(e).__name__, str(e).replace("\n", " ")[:120])

def bus(address):
    dbus.bus.BusConnection(address)

def control(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.sendall(b"KWC1Q\x00")
    answer = s.recv(64)
    if not answer:
        raise ConnectionError("closed without an answer")

def read(path):
    with open(path, "rb") as f:
        f.read(16)

def memory(spec):
    # "<pid>:<address>": 16 bytes of a mapped address (offset 0 of /proc/<pid>/mem is never mapped).
    pid, _, address = spec.partition(":")
    with open("/proc/%s/mem" % pid, "rb") as f:
        f.seek(int(address, 16))
        if len(f.read(16)) != 16:
            raise EOFError("short read")

def listing(path):
    os.listdir(path)

def peer(path):
    # The daemon's direct socket: D-Bus with no bus in between (docs/native-api.md).
    c = dbus.connection.Connection("unix:path=" + path)
    c.call_blocking(None, "/org/keywell/Keychain", "org.keywell.Keychain1", "GetLoginKeychain", "", (), timeout=10)

actions = {"bus": bus, "control": control, "read": read, "list": listing, "mem": memory, "peer": peer}
for spec in sys.argv[1:]:
    kind, _, target = spec.partition("=")
    probe(spec, lambda: actions[kind](target))
'''


@pytest.fixture(scope="module")
def keywelld():
    require_root_and_tools()
    path = os.environ.get("KEYWELLD")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("KEYWELLD is not set to the built keywelld (scripts/test.sh sets it)")
    return os.path.abspath(path)


@pytest.fixture
def kit(keywelld):
    k = Kit(module_path(), SyslogCapture())
    try:
        yield k
    finally:
        k.close()


def start_daemon(kit: Kit, user: User, keywelld: str, log: str | None = None) -> subprocess.Popen:
    """keywelld as the user, on the user's session bus, with its stderr in `log`."""
    env = dict(kit.user_env(user), KEYWELL_TEST_FAST_KDF="1")
    err = open(log, "ab") if log else subprocess.DEVNULL
    p = kit.spawn(["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups", "--", keywelld, "--verbose"],
                  env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    # Ready once it owns the name: a call sent earlier would have the bus start another keywelld
    # (the installed one, through its service file) and be answered by whichever won.
    owner = ["dbus-send", "--session", "--print-reply=literal", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
             "org.freedesktop.DBus.GetConnectionUnixProcessID", "string:org.keywell.Keychain"]
    deadline = time.monotonic() + 30
    while True:
        answer = kit.as_user(user, owner, capture_output=True, text=True, timeout=30)
        if answer.returncode == 0 and answer.stdout.split()[-1] == str(p.pid):
            return p
        assert p.poll() is None, f"keywelld exited with {p.returncode} before it owned its name"
        assert time.monotonic() < deadline, f"keywelld did not own its name within 30 s: {answer.stdout}{answer.stderr}"
        time.sleep(0.05)


def stop_daemon(p: subprocess.Popen) -> None:
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=10)


def probe_as(kit: Kit, user: User | None, *specs: str) -> dict[str, str]:
    """Runs the probes as `user` (as root, the test's own identity, when None)."""
    args = ["/usr/bin/python3", "-c", PROBE, *specs]
    if user is None:
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    else:
        r = kit.as_user(user, args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    found = {}
    for line in r.stdout.splitlines():
        spec, _, outcome = line.partition(" ")
        found[spec] = outcome
    return found


# What each refusal must be: the kernel's or the daemon's no, not some other failure (a missing
# file, a read at an unmapped address, a typo in a path) that a bare "it raised" would accept.
PERMISSION = ("PermissionError", "Permission denied", "Operation not permitted")


def refused_because(outcome: str, *reasons: str) -> bool:
    return outcome.startswith("refused") and any(reason in outcome for reason in reasons)


def expect_refused_where_allowed(refused: dict[str, str], allowed: dict[str, str], reasons: dict[str, tuple]) -> None:
    """Every probe refused for its reason in `refused` and the very same probe ALLOWED in `allowed`."""
    assert set(refused) == set(allowed) == set(reasons), (refused, allowed)
    for spec, why in reasons.items():
        assert allowed[spec] == "ALLOWED", f"the control failed, so the probe proves nothing: {spec}: {allowed[spec]}"
        assert refused_because(refused[spec], *why), f"{spec}: {refused[spec]} (expected one of {why})"


def first_mapped_address(pid: int) -> str:
    """A readable address of process `pid` (read as root from its maps)."""
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        span, perms = line.split()[:2]
        if perms.startswith("r"):
            return span.split("-")[0]
    raise AssertionError(f"no readable mapping in /proc/{pid}/maps")


def keychains_dir(user: User) -> str:
    return f"{user.home}/.local/share/keywell/keychains"


def owner_with_login(kit: Kit, keywelld: str) -> tuple[User, subprocess.Popen]:
    owner = kit.user()
    start_session_bus(kit, owner)
    daemon = start_daemon(kit, owner, keywelld)
    r = dbus_call(kit, owner, "create", "login", password=owner.password)
    assert "ok" in r, r
    return owner, daemon


def exposed_folder(kit: Kit) -> str:
    """A folder anyone can enter, on the same file system as /run/user (hard links need that)."""
    d = tempfile.mkdtemp(prefix="kwexpose-", dir="/run/user")
    os.chmod(d, 0o755)
    kit.paths.append(d)
    return d


def test_another_user_reaches_neither_the_bus_nor_the_control_socket_nor_the_files(kit, keywelld):
    owner, daemon = owner_with_login(kit, keywelld)
    attacker = kit.user()
    run = owner.runtime_dir
    keychain = f"{keychains_dir(owner)}/login.keychain-db"

    # The real layout: the 0700 folders stop everything at the door; the owner gets through.
    direct_reasons = {spec: PERMISSION for spec in (
        f"bus=unix:path={run}/bus", f"control={run}/keywell/control", f"peer={run}/keywell/native", f"read={keychain}",
        f"list={keychains_dir(owner)}", f"list={run}/keywell")}
    direct = probe_as(kit, attacker, *direct_reasons)
    expect_refused_where_allowed(direct, probe_as(kit, owner, *direct_reasons), direct_reasons)

    # Doors opened on purpose: hard links to both sockets where the attacker can reach them, the
    # control socket's mode widened. The bus refuses the attacker's uid (EXTERNAL), the daemon
    # closes the control connection without a byte (SO_PEERCRED).
    door = exposed_folder(kit)
    os.link(f"{run}/bus", f"{door}/bus")
    os.link(f"{run}/keywell/control", f"{door}/control")
    os.link(f"{run}/keywell/native", f"{door}/native")
    for name in ("bus", "control", "native"):
        os.chmod(f"{door}/{name}", 0o666)
    doors = (f"bus=unix:path={door}/bus", f"control={door}/control", f"peer={door}/native")
    try:
        opened = probe_as(kit, attacker, *doors)
        # The same doors work for the owner, so the refusals above are the checks, not the links.
        own = probe_as(kit, owner, *doors)
    finally:
        os.chmod(f"{door}/control", 0o600)
        os.chmod(f"{door}/native", 0o600)
    expect_refused_where_allowed(opened, own, {
        # dbus-daemon rejects the attacker's uid in the EXTERNAL handshake and hangs up, which
        # libdbus reports as NoReply to its Hello.
        f"bus=unix:path={door}/bus": ("org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.AuthFailed"),
        # The daemon closes the connection without a byte (SO_PEERCRED).
        f"control={door}/control": ("closed without an answer", "ConnectionResetError", "BrokenPipeError"),
        # The daemon's own libdbus server takes only its user in the EXTERNAL handshake.
        f"peer={door}/native": ("org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.AuthFailed",
                                "org.freedesktop.DBus.Error.Disconnected", "org.freedesktop.DBus.Error.NoServer"),
    })

    # Modes on disk and in the runtime folder.
    modes = {p: stat.S_IMODE(os.lstat(p).st_mode) for p in
             (keychain, keychains_dir(owner), f"{run}/keywell", f"{run}/keywell/control", f"{run}/keywell/native")}
    assert modes[keychain] == 0o600 and modes[keychains_dir(owner)] == 0o700, modes
    assert modes[f"{run}/keywell"] == 0o700 and modes[f"{run}/keywell/control"] == 0o600, modes
    assert modes[f"{run}/keywell/native"] == 0o600, modes

    # The daemon's memory: another uid can read neither its memory (at an address that is mapped)
    # nor its environment; root, who may, reads both with the same probes.
    pid = keywelld_pids(owner)[0]
    memory_reasons = {f"mem={pid}:{first_mapped_address(pid)}": PERMISSION, f"read=/proc/{pid}/environ": PERMISSION}
    memory = probe_as(kit, attacker, *memory_reasons)
    expect_refused_where_allowed(memory, probe_as(kit, None, *memory_reasons), memory_reasons)
    stop_daemon(daemon)

    refused = sum(o.startswith("refused") for o in list(direct.values()) + list(opened.values()) + list(memory.values()))
    total = len(direct) + len(opened) + len(memory)
    record("another user: session bus, control socket, direct socket, keychain files, daemon memory",
           f"{refused} of {total} probes refused (incl. hard-linked sockets: EXTERNAL auth, SO_PEERCRED)",
           "all refused", refused == total)


def test_planted_symlinks_and_writable_folders_are_refused(kit, keywelld):
    owner, daemon = owner_with_login(kit, keywelld)
    attacker = kit.user()
    folder = keychains_dir(owner)
    outcomes = {}

    # A keychain file that is a symlink to a file the attacker owns (and could swap at will).
    planted = tempfile.mkdtemp(prefix="kwplant-")
    os.chmod(planted, 0o755)
    kit.paths.append(planted)
    bait = f"{planted}/bait.keychain-db"
    shutil.copy(f"{folder}/login.keychain-db", bait)
    os.chown(bait, attacker.uid, attacker.gid)
    os.chmod(bait, 0o644)
    os.symlink(bait, f"{folder}/planted.keychain-db")
    r = dbus_call(kit, owner, "info", "planted")
    outcomes["keychain file → another user's file"] = r
    os.unlink(f"{folder}/planted.keychain-db")

    # The keychains folder writable by others.
    os.chmod(folder, 0o777)
    r = dbus_call(kit, owner, "create", "newone", password="pw")
    outcomes["keychains folder mode 0777"] = r
    os.chmod(folder, 0o700)

    # The keychains folder a symlink to a folder the attacker owns.
    stop_daemon(daemon)
    theirs = f"{planted}/theirs"
    os.mkdir(theirs, 0o755)
    os.chown(theirs, attacker.uid, attacker.gid)
    os.rename(folder, folder + ".real")
    os.symlink(theirs, folder)
    daemon = start_daemon(kit, owner, keywelld)
    r = dbus_call(kit, owner, "create", "newtwo", password="pw")
    outcomes["keychains folder → another user's folder"] = r
    stop_daemon(daemon)
    os.unlink(folder)
    os.rename(folder + ".real", folder)
    assert os.listdir(theirs) == [], "the daemon wrote into the attacker's folder"

    # $XDG_RUNTIME_DIR/keywell a symlink elsewhere, then `control` a symlink: the daemon uses
    # neither (no control socket; it says so) and writes nothing through them.
    run = owner.runtime_dir
    shutil.rmtree(f"{run}/keywell")
    elsewhere = f"{owner.home}/elsewhere"
    os.mkdir(elsewhere, 0o700)
    os.chown(elsewhere, owner.uid, owner.gid)
    os.symlink(elsewhere, f"{run}/keywell")
    os.lchown(f"{run}/keywell", owner.uid, owner.gid)
    log = f"{planted}/keywelld.log"
    daemon = start_daemon(kit, owner, keywelld, log=log)
    dbus_call(kit, owner, "default")
    stop_daemon(daemon)
    text = Path(log).read_text(errors="replace")
    outcomes["runtime folder keywell → elsewhere"] = {
        "error": "refused" if "not a folder" in text and not os.listdir(elsewhere) else "USED", "message": text[-300:]}

    os.unlink(f"{run}/keywell")
    os.mkdir(f"{run}/keywell", 0o700)
    os.chown(f"{run}/keywell", owner.uid, owner.gid)
    target = f"{owner.home}/precious"
    Path(target).write_text("keep me")
    os.chown(target, owner.uid, owner.gid)
    os.symlink(target, f"{run}/keywell/control")
    os.lchown(f"{run}/keywell/control", owner.uid, owner.gid)
    Path(log).write_text("")
    daemon = start_daemon(kit, owner, keywelld, log=log)
    dbus_call(kit, owner, "default")
    stop_daemon(daemon)
    text = Path(log).read_text(errors="replace")
    intact = Path(target).read_text() == "keep me" and os.path.islink(f"{run}/keywell/control")
    outcomes["control socket → a file"] = {
        "error": "refused" if "not a socket" in text and intact else "USED", "message": text[-300:]}

    refused = {k: v for k, v in outcomes.items() if "error" in v}
    for name, outcome in outcomes.items():
        print(name, outcome)
    record("planted symlinks (keychain file, keychains folder, runtime folder, control socket) and a 0777 folder",
           f"{len(refused)} of {len(outcomes)} refused", "all refused", len(refused) == len(outcomes))
    assert len(refused) == len(outcomes), outcomes
    # The refusals say why.
    assert "symbolic link" in outcomes["keychain file → another user's file"]["message"]
    assert "others can write" in outcomes["keychains folder mode 0777"]["message"]
