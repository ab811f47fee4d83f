"""Planted -wal/-shm/-journal files or symlinks beside a keychain in a shared folder.

SQLite keeps up to three files beside a database (`-wal`, `-shm`, `-journal`) and opens them by
name, creating them only if they are missing. In a sticky world-writable folder such as /tmp,
another user (B) can create those names first, mode 0666: a keychain A makes or opens there would
then have its header (salt, wrapped key) and items written into B's files, or a hot journal B
wrote played back into it. Where `fs.protected_regular` is 0 the kernel does not stop that.

Here B plants the files the way the review did, in a root-owned 1777 folder, and A uses
`keywell` through its own keywelld on its private session bus: every create and open must be
refused with a message that names the planted file, B's files must stay empty, and without
planted files the create must work and leave all four names A's own (so B cannot plant later).
The rule is in docs/file-format.md.

Needs root and KEYWELLD/KEYWELL (scripts/test.sh sets them).
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from pam_helpers import Kit, SyslogCapture, User, module_path, require_root_and_tools, start_session_bus
from security_figures import record
from test_other_users import start_daemon, stop_daemon

COMPANIONS = ("-wal", "-shm", "-journal")
PASSWORD = "weak-pw-1"

# Runs as B: plants `path` as an empty 0666 file, or as a symlink to an empty 0666 file of B's.
PLANT = r'''
import os, sys
kind, path = sys.argv[1], sys.argv[2]
def empty_file(p):
    fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    os.fchmod(fd, 0o666)
    os.close(fd)
if kind == "file":
    empty_file(path)
else:
    empty_file(path + ".bait")
    os.symlink(path + ".bait", path)
'''


@pytest.fixture(scope="module")
def binaries():
    require_root_and_tools()
    found = {}
    for variable in ("KEYWELLD", "KEYWELL"):
        path = os.environ.get(variable)
        if not path or not os.access(path, os.X_OK):
            pytest.fail(f"{variable} is not set to the built binary (scripts/test.sh sets it)")
        found[variable] = os.path.abspath(path)
    return found


@pytest.fixture
def kit(binaries):
    k = Kit(module_path(), SyslogCapture())
    try:
        yield k
    finally:
        k.close()


@pytest.fixture
def unprotected_regular():
    """fs.protected_regular=0, as the review had it: the kernel then lets A open B's files in a
    sticky folder with O_CREAT. The setting is global (no namespace makes it private), so it is
    restored afterwards; where /proc/sys is read-only the checks are exercised all the same."""
    knob = Path("/proc/sys/fs/protected_regular")
    before = knob.read_text().strip() if knob.exists() else None
    changed = False
    if before not in (None, "0"):
        try:
            knob.write_text("0")
            changed = True
        except OSError:
            pass
    try:
        yield
    finally:
        if changed:
            knob.write_text(before)


def shared_folder(kit: Kit) -> str:
    """A root-owned sticky folder everyone can write, like /tmp."""
    d = tempfile.mkdtemp(prefix="kwshared-", dir="/tmp")
    os.chmod(d, 0o1777)
    kit.paths.append(d)
    return d


def keywell(kit: Kit, user: User, binary: str, *args: str) -> subprocess.CompletedProcess:
    return kit.as_user(user, [binary, *args], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)


def keywell_on_terminal(kit: Kit, user: User, binary: str, *args: str) -> subprocess.CompletedProcess:
    """As a person runs it: on a terminal (script(1)'s pty), where the CLI adds the daemon's
    explanation to macOS's error line; through a pipe it prints macOS's line alone. The
    terminal's output (stdout and stderr together) comes back as `stderr`."""
    r = kit.as_user(user, ["script", "-qec", shlex.join([binary, *args]), "/dev/null"],
                    capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    return subprocess.CompletedProcess(r.args, r.returncode, "", r.stdout + r.stderr)


def serving(kit: Kit, user: User, binary: str) -> None:
    """Waits until the user's keywelld answers on the bus (it starts before it owns its name)."""
    for _ in range(600):
        r = keywell(kit, user, binary, "list-keychains")
        if r.returncode == 0:
            return
        time.sleep(0.05)
    pytest.fail(f"keywelld never answered: {r.stderr}")


def plant(kit: Kit, attacker: User, kind: str, path: str) -> list[str]:
    """Plants `path` as B; returns the files of B's that must stay empty."""
    r = kit.as_user(attacker, ["/usr/bin/python3", "-c", PLANT, kind, path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [path] if kind == "file" else [path + ".bait"]


def bytes_in(paths: list[str]) -> int:
    return sum(os.stat(p).st_size for p in paths)


# (case, the suffixes planted, as files or symlinks)
CREATE_CASES = [
    ("-wal, -shm and -journal, 0666", ("-wal", "-shm", "-journal"), "file"),
    ("-wal, 0666", ("-wal",), "file"),
    ("-shm, 0666", ("-shm",), "file"),
    ("-journal, 0666", ("-journal",), "file"),
    ("-wal a symlink to B's file", ("-wal",), "symlink"),
    ("-journal a symlink to B's file", ("-journal",), "symlink"),
    ("the keychain a symlink to B's file", ("",), "symlink"),
]
OPEN_CASES = [
    ("-wal, -shm and -journal, 0666", ("-wal", "-shm", "-journal"), "file"),
    ("-journal, 0666", ("-journal",), "file"),
    ("-shm a symlink to B's file", ("-shm",), "symlink"),
]


def test_planted_companion_files_in_a_shared_folder_are_refused(kit, binaries, unprotected_regular):
    owner = kit.user()
    attacker = kit.user()
    start_session_bus(kit, owner)
    daemon = start_daemon(kit, owner, binaries["KEYWELLD"])
    serving(kit, owner, binaries["KEYWELL"])
    folder = shared_folder(kit)
    outcomes: dict[str, str] = {}
    written = 0

    def attempt(case: str, path: str, planted: list[str], bait: list[str], *command: str) -> None:
        nonlocal written
        r = keywell_on_terminal(kit, owner, binaries["KEYWELL"], *command)
        written += bytes_in(bait)
        print(case, "→", r.stderr.strip().replace("\n", " | "))
        # The message names the planted file and says it refused it (not some later I/O error).
        named = "refusing" in r.stderr and any(p in r.stderr for p in planted)
        outcomes[case] = "refused" if r.returncode != 0 and named and bytes_in(bait) == 0 else \
            f"NOT REFUSED (exit {r.returncode}, {bytes_in(bait)} bytes in B's files): {r.stderr.strip()[-300:]}"

    # Create: B's files are there before A makes the keychain.
    for index, (case, suffixes, kind) in enumerate(CREATE_CASES):
        path = f"{folder}/x{index}.keychain-db"
        planted = [path + suffix for suffix in suffixes]
        bait = [b for p in planted for b in plant(kit, attacker, kind, p)]
        attempt(f"create, {case}", path, planted, bait, "create-keychain", "-p", PASSWORD, path)

    # Without planted files the create works, and all four names are A's, 0600, and stay A's
    # after the daemon stops (SQLite would otherwise remove -wal and -shm at close for B to take).
    path = f"{folder}/clean.keychain-db"
    r = keywell(kit, owner, binaries["KEYWELL"], "create-keychain", "-p", PASSWORD, path)
    assert r.returncode == 0, r.stderr
    r = keywell(kit, owner, binaries["KEYWELL"], "add-generic-password", "-a", "acct", "-s", "svc", "-w", "kept", path)
    assert r.returncode == 0, r.stderr
    stop_daemon(daemon)
    kept = []
    for suffix in ("",) + COMPANIONS:
        info = os.lstat(path + suffix) if os.path.lexists(path + suffix) else None
        kept.append(info is not None and stat.S_ISREG(info.st_mode) and info.st_uid == owner.uid
                    and stat.S_IMODE(info.st_mode) == 0o600 and info.st_nlink == 1)
    late = kit.as_user(attacker, ["/usr/bin/python3", "-c", PLANT, "file", path + "-wal"],
                       capture_output=True, text=True, timeout=60)
    outcomes["after close, B plants -wal beside A's keychain"] = "refused" if late.returncode != 0 and all(kept) else \
        f"NOT REFUSED (the four files A's own, 0600: {kept})"

    # Open: an existing keychain whose companions are gone (another SQLite program closed it
    # last, or an older Keywell did) when B plants them.
    daemon = start_daemon(kit, owner, binaries["KEYWELLD"])
    serving(kit, owner, binaries["KEYWELL"])
    for index, (case, suffixes, kind) in enumerate(OPEN_CASES):
        path = f"{folder}/y{index}.keychain-db"
        r = keywell(kit, owner, binaries["KEYWELL"], "create-keychain", "-p", PASSWORD, path)
        assert r.returncode == 0, r.stderr
        stop_daemon(daemon)
        kit.as_user(owner, ["rm", "-f"] + [path + suffix for suffix in COMPANIONS], check=True)
        planted = [path + suffix for suffix in suffixes]
        bait = [b for p in planted for b in plant(kit, attacker, kind, p)]
        daemon = start_daemon(kit, owner, binaries["KEYWELLD"])
        serving(kit, owner, binaries["KEYWELL"])
        attempt(f"open, {case}", path, planted, bait, "unlock-keychain", "-p", PASSWORD, path)
    stop_daemon(daemon)

    for name, outcome in outcomes.items():
        print(name, "→", outcome)
    refused = sum(outcome == "refused" for outcome in outcomes.values())
    record("planted -wal/-shm/-journal or symlinks beside a keychain in a shared 1777 folder (create and open)",
           f"{refused} of {len(outcomes)} refused, {written} bytes written to planted files",
           "all refused", refused == len(outcomes) and written == 0)
    assert refused == len(outcomes) and written == 0, outcomes
