"""SQL planted in a keychain file (issue 30, finding 3).

A keychain file is an SQLite database, and SQLite runs the triggers and views a database holds
inside whatever process opens it. Someone who can write the file (a process of the same user, or
whoever handed over a file to `keywell restore`) plants, with the sqlite3 shell:

- `BEFORE DELETE ON item ... RAISE(IGNORE)`: before the fix, `keywell delete-generic-password`
  exited 0 (and said "password has been deleted.") while the secret stayed;
- a recursive CTE in `BEFORE INSERT ON item`: before the fix, every add to that keychain hung with
  keywelld spinning, past the call deadline.

Keywell must refuse such a file with an error that names it and the object, lose and change
nothing, answer in bounded time, and work as before with an untouched keychain
(docs/file-format.md, "What a keychain file may hold"). The real keywell CLI and keywelld on a
private session bus, as the other integration tests run them.

Needs KEYWELL and KEYWELLD (scripts/test.sh sets them), and the sqlite3 shell.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from keywell_helpers import CLIAccount, accounts_of, bodies_as_test_user, built, user_tmp  # noqa: F401 (user_tmp: a fixture)
from security_figures import record

PASSWORD = "planted-sql-pw"
SECRET = "the-secret-that-must-stay"
HIDE_DELETES = "CREATE TRIGGER t_hide BEFORE DELETE ON item BEGIN SELECT RAISE(IGNORE); END"
SPIN_ON_INSERT = ("CREATE TRIGGER t_spin BEFORE INSERT ON item BEGIN SELECT (SELECT count(*) FROM "
                  "(WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT x FROM n)); END")
# Longer than any refusal takes; shorter than the 25 s D-Bus deadline the hang ran into.
ANSWER_WITHIN = 15.0


class Account(CLIAccount):
    """A fresh account driven through the `keywell` CLI."""

    def __init__(self, keywell: str, keywelld: str) -> None:
        super().__init__(keywell, keywelld, prefix="kwplantsql-")

    def on_terminal(self, *args: str) -> tuple[subprocess.CompletedProcess, float]:
        """As a person runs it, on a terminal (script(1)'s pty), where the CLI adds the daemon's
        explanation to macOS's error line; the output (both streams) and the seconds it took.
        A run that does not end within a minute comes back with exit status None."""
        started = time.monotonic()
        try:
            r = subprocess.run(["script", "-qec", shlex.join([self.keywell, *args]), "/dev/null"],
                               capture_output=True, text=True, env=self.env, stdin=subprocess.DEVNULL, timeout=60)
        except subprocess.TimeoutExpired as expired:
            output = (expired.stdout or b"").decode(errors="replace") if isinstance(expired.stdout, bytes) else (expired.stdout or "")
            return subprocess.CompletedProcess(args, None, output, ""), time.monotonic() - started
        return subprocess.CompletedProcess(args, r.returncode, r.stdout + r.stderr, ""), time.monotonic() - started

    def keychain(self, name: str) -> Path:
        return self.keychains / f"{name}.keychain-db"

    def stop_daemon(self) -> None:
        reply = subprocess.run(
            ["dbus-send", "--session", "--print-reply=literal", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
             "org.freedesktop.DBus.GetConnectionUnixProcessID", "string:org.keywell.Keychain"],
            capture_output=True, text=True, env=self.env, timeout=30, check=True)
        pid = int(reply.stdout.split()[-1])
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not Path(f"/proc/{pid}").exists(), "keywelld did not exit after SIGTERM"


@pytest.fixture
def binaries():
    if shutil.which("sqlite3") is None:
        pytest.fail("the sqlite3 shell is needed: run scripts/setup.sh")
    return built("KEYWELL"), built("KEYWELLD")


@pytest.fixture
def accounts(binaries):
    yield from accounts_of(lambda: Account(*binaries))


def sqlite(path: Path, sql: str) -> str:
    """The sqlite3 shell on `path`, as someone who can write the file uses it."""
    return subprocess.run(["sqlite3", str(path), sql], capture_output=True, text=True, check=True, timeout=60).stdout.strip()


def stored(path: Path, account: str) -> int:
    return int(sqlite(path, f"SELECT count(*) FROM item WHERE acct = '{account}'"))


def keychain_with_a_secret(account: Account, name: str = "work") -> Path:
    account.run("create-keychain", "-p", PASSWORD, name)
    account.run("add-generic-password", "-a", "victim", "-s", "svc", "-w", SECRET, name)
    return account.keychain(name)


def refused_naming(result: subprocess.CompletedProcess, *words: str) -> bool:
    return result.returncode not in (0, None) and all(word in result.stdout for word in words)


def test_triggers_planted_while_keywelld_was_stopped_are_refused(accounts):
    account = accounts()
    path = keychain_with_a_secret(account)
    account.stop_daemon()
    sqlite(path, HIDE_DELETES)
    sqlite(path, SPIN_ON_INSERT)
    # Unlocked first, as its owner would (refused already once the file is checked).
    unlocking = account.run("unlock-keychain", "-p", PASSWORD, "work", check=False)

    deleting, _ = account.on_terminal("delete-generic-password", "-a", "victim", "-s", "svc", "work")
    delete_refused = refused_naming(deleting, 'trigger "t_hide"', str(path)) and stored(path, "victim") == 1
    adding, seconds = account.on_terminal("add-generic-password", "-a", "other", "-s", "svc", "-w", "x", "work")
    add_refused = refused_naming(adding, 'trigger "t_hide"', str(path)) and seconds < ANSWER_WITHIN

    record("trigger hiding deletes planted in a closed keychain file",
           f"delete exit {deleting.returncode}, secret {'kept' if stored(path, 'victim') else 'gone'}",
           "refused naming the trigger and file, secret kept", delete_refused)
    record("endless trigger on insert planted in a closed keychain file",
           f"add exit {adding.returncode} after {seconds:.1f} s", f"refused within {ANSWER_WITHIN:.0f} s", add_refused)
    assert delete_refused, deleting.stdout + account.log.read_text(errors="replace")[-2000:]
    assert add_refused, f"{seconds:.1f} s: {adding.stdout}"
    assert stored(path, "other") == 0
    # Through a pipe the CLI prints macOS's line alone; the status says it.
    assert unlocking.returncode != 0, unlocking.stderr


def test_triggers_planted_while_the_keychain_is_open_stop_the_next_write(accounts):
    account = accounts()
    path = keychain_with_a_secret(account)
    # keywelld has the file open and unlocked; another process of the user plants the triggers.
    sqlite(path, HIDE_DELETES)
    deleting, _ = account.on_terminal("delete-generic-password", "-a", "victim", "-s", "svc", "work")
    delete_refused = refused_naming(deleting, 'trigger "t_hide"', str(path)) and stored(path, "victim") == 1
    sqlite(path, "DROP TRIGGER t_hide")
    sqlite(path, SPIN_ON_INSERT)
    adding, seconds = account.on_terminal("add-generic-password", "-a", "other", "-s", "svc", "-w", "x", "work")
    add_refused = refused_naming(adding, 'trigger "t_spin"', str(path)) and seconds < ANSWER_WITHIN

    record("trigger hiding deletes planted in an open keychain file",
           f"delete exit {deleting.returncode}, secret {'kept' if stored(path, 'victim') else 'gone'}",
           "refused naming the trigger and file, secret kept", delete_refused)
    record("endless trigger on insert planted in an open keychain file",
           f"add exit {adding.returncode} after {seconds:.1f} s", f"refused within {ANSWER_WITHIN:.0f} s", add_refused)
    assert delete_refused, deleting.stdout + account.log.read_text(errors="replace")[-2000:]
    assert add_refused, f"{seconds:.1f} s: {adding.stdout}"
    # Once the planted SQL is gone, the keychain works again and the delete is real.
    sqlite(path, "DROP TRIGGER t_spin")
    deleted, _ = account.on_terminal("delete-generic-password", "-a", "victim", "-s", "svc", "work")
    assert deleted.returncode == 0, deleted.stdout
    assert stored(path, "victim") == 0


def test_a_backup_with_a_planted_trigger_is_not_restored(accounts, user_tmp):
    account = accounts()
    keychain_with_a_secret(account)
    backup = user_tmp / "work.keychain-db"
    account.run("backup", "-k", "work", str(backup))
    sqlite(backup, HIDE_DELETES)
    before = backup.read_bytes()

    other = accounts()
    started = time.monotonic()
    restoring = other.run("restore", str(backup), "restored", check=False)
    seconds = time.monotonic() - started
    refused = (restoring.returncode not in (0, 2) and 'trigger "t_hide"' in restoring.stderr
               and str(backup) in restoring.stderr and seconds < ANSWER_WITHIN)
    installed = sorted(os.listdir(other.keychains)) if other.keychains.exists() else []
    record("trigger planted in a backup handed to keywell restore", f"restore exit {restoring.returncode}",
           "refused naming the trigger and file, nothing installed", refused and not installed)
    assert refused, restoring.stderr
    assert not any(name.startswith("restored.") for name in installed), installed
    assert backup.read_bytes() == before


def test_an_untouched_keychain_and_backup_work(accounts, user_tmp):
    """The positive control: without planted SQL, the same steps succeed."""
    account = accounts()
    path = keychain_with_a_secret(account)
    account.run("add-generic-password", "-a", "spare", "-s", "svc", "-w", "y", "work")
    backup = user_tmp / "work.keychain-db"
    account.run("backup", "-k", "work", str(backup))
    account.stop_daemon()
    account.run("unlock-keychain", "-p", PASSWORD, "work")
    deleting, _ = account.on_terminal("delete-generic-password", "-a", "victim", "-s", "svc", "work")
    assert deleting.returncode == 0 and "password has been deleted." in deleting.stdout, deleting.stdout
    assert stored(path, "victim") == 0
    adding, seconds = account.on_terminal("add-generic-password", "-a", "other", "-s", "svc", "-w", "x", "work")
    assert adding.returncode == 0 and seconds < ANSWER_WITHIN, adding.stdout

    other = accounts()
    other.run("restore", str(backup), "restored")
    other.run("unlock-keychain", "-p", PASSWORD, "restored")
    found = other.run("find-generic-password", "-a", "victim", "-s", "svc", "-w", "restored")
    assert found.stdout.strip() == SECRET


# The triggers are planted as the user's own programs would plant them: each body runs as the test user.
bodies_as_test_user(globals())
