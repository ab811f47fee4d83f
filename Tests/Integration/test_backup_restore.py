"""`keywell backup` / `keywell restore`, and the checkpoint that makes a locked keychain's file
complete (docs/cli.md, "Backing up"): the real keywell and keywelld on private session buses,
real SQLite files, each restore into a fresh account (its own HOME and bus).

Needs the built binaries: KEYWELL=/path/to/keywell and KEYWELLD=/path/to/keywelld
(scripts/test.sh sets both). Without them the tests fail; they do not skip.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from keywell_helpers import CLIAccount, accounts_of, built, user_tmp  # noqa: F401 (user_tmp: a fixture)

PASSWORD = "backup-pw"


class Account(CLIAccount):
    """A fresh account driven through the `keywell` CLI."""

    def __init__(self, keywell: str, keywelld: str) -> None:
        super().__init__(keywell, keywelld, prefix="kwbackup-")

    def items(self, keychain: str) -> dict[str, str]:
        """account -> secret of every generic password in `keychain` (unlocked)."""
        dumped = json.loads(self.run("dump-keychain", "-d", "--json", keychain).stdout)
        assert all("error" not in item for item in dumped), dumped
        return {item["account"]: item["password"] for item in dumped}

    def daemon_pid(self) -> int:
        reply = subprocess.run(
            ["dbus-send", "--session", "--print-reply=literal", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
             "org.freedesktop.DBus.GetConnectionUnixProcessID", "string:org.keywell.Keychain"],
            capture_output=True, text=True, env=self.env, timeout=30, check=True, **self.owner.spawn)
        return int(reply.stdout.split()[-1])



@pytest.fixture
def binaries():
    return built("KEYWELL"), built("KEYWELLD")


@pytest.fixture
def accounts(binaries):
    yield from accounts_of(lambda: Account(*binaries))


def secret_of(index: int) -> str:
    return f"secret-{index}-" + "x" * (index % 7)


def add_item(account: Account, keychain: str, index: int, check: bool = True) -> subprocess.CompletedProcess:
    return account.run("add-generic-password", "-a", f"acct-{index}", "-s", "svc", "-w", secret_of(index),
                       keychain, check=check)


def integrity(path: Path) -> tuple[str, int]:
    """SQLite's integrity check and the item count of the file at `path`, opened read-only."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0], db.execute("SELECT count(*) FROM item").fetchone()[0]


def restore_and_read(accounts, backup: Path, name: str) -> tuple[dict[str, str], Path]:
    """Restores `backup` as `name` in a fresh account; its items and the installed file."""
    other = accounts()
    other.run("restore", str(backup), name)
    other.run("unlock-keychain", "-p", PASSWORD, name)
    installed = other.keychains / f"{name}.keychain-db"
    assert installed.stat().st_mode & 0o777 == 0o600
    return other.items(name), installed


def test_backups_taken_during_writes_restore_every_acknowledged_item(accounts, user_tmp):
    account = accounts()
    account.run("create-keychain", "-p", PASSWORD, "work")
    for index in range(20):
        add_item(account, "work", index)
    acknowledged = list(range(20))
    lock = threading.Lock()
    stop = threading.Event()
    failures: list[str] = []

    def writer() -> None:
        index = 20
        while not stop.is_set():
            result = add_item(account, "work", index, check=False)
            if result.returncode != 0:
                failures.append(result.stderr)
                return
            with lock:
                acknowledged.append(index)
            index += 1

    thread = threading.Thread(target=writer)
    thread.start()
    backups: list[tuple[Path, list[int]]] = []
    try:
        for round in range(4):
            # Wait for the writer to have added something since the last backup.
            deadline = time.monotonic() + 120
            while len(acknowledged) < 20 + 5 * (round + 1) and time.monotonic() < deadline and thread.is_alive():
                time.sleep(0.01)
            with lock:
                before = list(acknowledged)
            target = user_tmp / f"work-{round}.keychain-db"
            account.run("backup", "-k", "work", str(target))
            backups.append((target, before))
    finally:
        stop.set()
        thread.join(timeout=120)
    assert not failures, failures
    assert len(acknowledged) > 20 + 5 * len(backups) - 1, "the writer added items while backups ran"

    for round, (backup, before) in enumerate(backups):
        assert backup.stat().st_mode & 0o777 == 0o600
        # One self-contained file: rollback-journal mode (header bytes 18-19 are 1), no -wal.
        assert backup.read_bytes()[18:20] == b"\x01\x01"
        assert not Path(f"{backup}-wal").exists()
        check, _ = integrity(backup)
        assert check == "ok"
        items, installed = restore_and_read(accounts, backup, f"restored{round}")
        for index in before:
            assert items.get(f"acct-{index}") == secret_of(index), f"backup {round} lost acct-{index}"
        assert integrity(installed)[0] == "ok"


def test_backup_of_a_locked_keychain_restores_with_its_password(accounts, user_tmp):
    account = accounts()
    account.run("create-keychain", "-p", PASSWORD, "work")
    for index in range(5):
        add_item(account, "work", index)
    account.run("lock-keychain", "work")
    account.run("backup", "-k", "work", str(user_tmp / "locked.keychain-db"))
    # Named after the file by default.
    other = accounts()
    other.run("restore", str(user_tmp / "locked.keychain-db"))
    assert other.run("unlock-keychain", "-p", "wrong", "locked", check=False).returncode == 51
    other.run("unlock-keychain", "-p", PASSWORD, "locked")
    assert other.items("locked") == {f"acct-{i}": secret_of(i) for i in range(5)}


def copy_main_file_alone(account: Account, keychain: str, destination: Path) -> Path:
    """What a user's backup tool does: copy `<name>.keychain-db`, without -wal or -shm."""
    copy = destination / f"{keychain}-copy.keychain-db"
    shutil.copyfile(account.keychains / f"{keychain}.keychain-db", copy)
    os.chmod(copy, 0o600)
    account.owner.give(copy)
    return copy


def check_plain_copy(accounts, copy: Path, count: int) -> None:
    assert integrity(copy) == ("ok", count)
    items, installed = restore_and_read(accounts, copy, "copied")
    assert items == {f"acct-{i}": secret_of(i) for i in range(count)}
    assert integrity(installed) == ("ok", count)


def test_plain_copy_of_a_locked_keychain_file_holds_every_item(accounts, user_tmp):
    account = accounts()
    account.run("create-keychain", "-p", PASSWORD, "work")
    for index in range(12):
        add_item(account, "work", index)
    account.run("lock-keychain", "work")
    check_plain_copy(accounts, copy_main_file_alone(account, "work", user_tmp), 12)
    # The -wal stays (persistent WAL), emptied by the checkpoint.
    assert (account.keychains / "work.keychain-db-wal").stat().st_size == 0


def test_plain_copy_after_the_daemon_is_stopped_holds_every_item(accounts, user_tmp):
    account = accounts()
    account.run("create-keychain", "-p", PASSWORD, "work")
    for index in range(12):
        add_item(account, "work", index)
    pid = account.daemon_pid()
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not Path(f"/proc/{pid}").exists(), "keywelld did not exit after SIGTERM"
    check_plain_copy(accounts, copy_main_file_alone(account, "work", user_tmp), 12)


def refused(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode not in (0, 2), (result.returncode, result.stderr)
    for word in words:
        assert word in result.stderr, result.stderr


def test_restore_refusals_lose_nothing(accounts, user_tmp):
    account = accounts()
    account.run("create-keychain", "-p", PASSWORD, "work")
    add_item(account, "work", 1)
    backup = user_tmp / "work.keychain-db"
    account.run("backup", "-k", "work", str(backup))

    # Not a keychain: a text file, and an SQLite database of another program.
    text = user_tmp / "notes.txt"
    text.write_text("not a keychain\n")
    refused(account.run("restore", str(text), "notes", check=False), "not a Keywell keychain")
    other_db = user_tmp / "other.db"
    with sqlite3.connect(other_db) as db:
        db.execute("CREATE TABLE t (x)")
    before = other_db.read_bytes()
    refused(account.run("restore", str(other_db), "other", check=False), "not a Keywell keychain")
    assert other_db.read_bytes() == before
    fifo = user_tmp / "fifo"
    os.mkfifo(fifo)
    refused(account.run("restore", str(fifo), "fifo", check=False), "not a regular file")

    # Unreadable: missing, and a folder on the way that is not a folder.
    refused(account.run("restore", str(user_tmp / "missing.keychain-db"), check=False), "missing.keychain-db")
    refused(account.run("restore", str(text / "x.keychain-db"), "x", check=False), "x.keychain-db")
    listed = set(os.listdir(account.keychains))
    assert listed == {"work.keychain-db", "work.keychain-db-wal", "work.keychain-db-shm", "work.keychain-db-journal"}

    # An existing name: refused, the keychain untouched; -f replaces it with the backup.
    add_item(account, "work", 2)
    refused(account.run("restore", str(backup), "work", check=False), "already exists", "-f")
    assert account.items("work") == {"acct-1": secret_of(1), "acct-2": secret_of(2)}
    account.run("restore", "-f", str(backup), "work")
    account.run("unlock-keychain", "-p", PASSWORD, "work")
    assert account.items("work") == {"acct-1": secret_of(1)}


def test_backup_refusals_lose_nothing(accounts, user_tmp):
    account = accounts()
    account.run("create-keychain", "-p", PASSWORD, "work")
    add_item(account, "work", 1)

    existing = user_tmp / "existing"
    existing.write_text("keep me\n")
    refused(account.run("backup", "-k", "work", str(existing), check=False), "already exists", "-f")
    assert existing.read_text() == "keep me\n"

    # A symlink is refused, dangling or not, and what it points to is never written.
    pointed = user_tmp / "pointed"
    pointed.write_text("keep me too\n")
    link = user_tmp / "link"
    link.symlink_to(pointed)
    refused(account.run("backup", "-k", "work", str(link), check=False), "already exists")
    dangling = user_tmp / "dangling"
    dangling.symlink_to(user_tmp / "nowhere")
    refused(account.run("backup", "-k", "work", str(dangling), check=False), "already exists")
    assert pointed.read_text() == "keep me too\n"
    assert not (user_tmp / "nowhere").exists()
    # -f replaces the link itself.
    account.run("backup", "-f", "-k", "work", str(link))
    assert not link.is_symlink() and pointed.read_text() == "keep me too\n"
    assert integrity(link) == ("ok", 1)

    # A folder nobody can write (a read-only file system: the tests run as root).
    readonly = user_tmp / "readonly"
    readonly.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(readonly)],
                             capture_output=True, text=True)
    assert mounted.returncode == 0, mounted.stderr
    try:
        refused(account.run("backup", "-k", "work", str(readonly / "b.keychain-db"), check=False),
                "cannot write in", "Read-only file system")
    finally:
        subprocess.run(["umount", str(readonly)], check=True)

    # Nothing of the refusals is left behind, and the keychain is whole.
    left = sorted(p.name for p in user_tmp.iterdir())
    assert left == ["dangling", "existing", "link", "pointed", "readonly"], left
    assert account.items("work") == {"acct-1": secret_of(1)}
