"""pam_keywell.so under stress, with the real keywelld: many logins at once for one user, and
logins while the daemon hangs. A login must never fail because of Keywell, and afterwards there
must be one daemon and one sound login keychain that opens with the password.

Needs root, KEYWELLD and PAM_KEYWELL_SO (scripts/test.sh sets them).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from keywell_helpers import open_kit
from pam_helpers import (
    LOGIN_BOUND_S, Kit, User, dbus_call, keywelld_pids, module_path, pamtester,
    require_root_and_tools, start_session_bus,
)
from security_figures import record

PARALLEL_LOGINS = 50
LOGINS_WHILE_HUNG = 10


@pytest.fixture(scope="module")
def keywelld():
    require_root_and_tools()
    path = os.environ.get("KEYWELLD")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("KEYWELLD is not set to the built keywelld (scripts/test.sh sets it)")
    return os.path.abspath(path)


@pytest.fixture
def kit(keywelld):
    yield from open_kit(module_path())


def full_login(stack: str, user: User):
    """authenticate, open_session and close_session in one pamtester, as a short login does."""
    return pamtester(stack, user.name, "authenticate", "open_session", "close_session",
                     stdin=user.password + "\n", timeout=120)


def logins_in_parallel(stack: str, user: User, count: int):
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda _: full_login(stack, user), range(count)))


def login_keychain_files(user: User) -> list[str]:
    folder = f"{user.home}/.local/share/keywell/keychains"
    return sorted(name for name in os.listdir(folder) if name.endswith(".keychain-db")) if os.path.isdir(folder) else []


def integrity(user: User) -> str:
    path = f"{user.home}/.local/share/keywell/keychains/login.keychain-db"
    r = subprocess.run(["sqlite3", "-readonly", path, "PRAGMA integrity_check;"], capture_output=True, text=True)
    return (r.stdout + r.stderr).strip()


def wait_for_one_daemon(user: User, timeout: float = 10) -> list[int]:
    """Daemons that lost the instance lock exit on their own; give them a moment."""
    deadline = time.monotonic() + timeout
    pids = keywelld_pids(user)
    while time.monotonic() < deadline and len(pids) != 1:
        time.sleep(0.1)
        pids = keywelld_pids(user)
    return pids


def unlocks_with_password(kit: Kit, user: User) -> dict:
    """Lock, then Unlock with the login password, through the daemon on a fresh session bus."""
    start_session_bus(kit, user)
    dbus_call(kit, user, "lock", "login")
    return dbus_call(kit, user, "unlock", "login", password=user.password)


def test_fifty_parallel_logins_for_one_user(kit, keywelld):
    user = kit.user()
    stack = kit.stack(daemon=keywelld)
    started = time.monotonic()
    results = logins_in_parallel(stack, user, PARALLEL_LOGINS)
    wall = time.monotonic() - started
    failed = [r for r in results if not r.ok]
    slowest = max(r.elapsed for r in results)

    daemons = wait_for_one_daemon(user)
    files = login_keychain_files(user)
    sound = integrity(user)
    unlocked = unlocks_with_password(kit, user)
    consistent = len(daemons) == 1 and files == ["login.keychain-db"] and sound == "ok" and "ok" in unlocked

    record(f"{PARALLEL_LOGINS} parallel pamtester logins (auth + open + close) for one user",
           f"{PARALLEL_LOGINS - len(failed)}/{PARALLEL_LOGINS} succeeded in {wall:.1f} s (slowest {slowest:.1f} s)",
           "all succeed", not failed)
    record("after the parallel logins", f"{len(daemons)} daemon, keychains {files}, integrity_check {sound}, "
           f"unlocks with the password: {'yes' if 'ok' in unlocked else unlocked}",
           "1 daemon, 1 sound login keychain", consistent)
    assert not failed, failed[0]
    assert len(daemons) == 1, daemons
    assert files == ["login.keychain-db"], files
    assert sound == "ok", sound
    assert "ok" in unlocked, unlocked


def test_logins_while_the_daemon_hangs(kit, keywelld):
    user = kit.user()
    stack = kit.stack(daemon=keywelld)
    first = full_login(stack, user)
    assert first.ok, first
    daemons = wait_for_one_daemon(user)
    assert len(daemons) == 1, daemons
    hung = daemons[0]
    os.kill(hung, signal.SIGSTOP)
    try:
        results = logins_in_parallel(stack, user, LOGINS_WHILE_HUNG)
    finally:
        os.kill(hung, signal.SIGCONT)
    failed = [r for r in results if not r.ok]
    slowest = max(r.elapsed for r in results)
    # Each login may wait out the module's bound once per phase that talks to the daemon
    # (open_session and close_session).
    bound = 2 * LOGIN_BOUND_S + 1

    daemons = wait_for_one_daemon(user)
    sound = integrity(user)
    unlocked = unlocks_with_password(kit, user)
    record(f"{LOGINS_WHILE_HUNG} parallel logins while keywelld is stopped (SIGSTOP)",
           f"{LOGINS_WHILE_HUNG - len(failed)}/{LOGINS_WHILE_HUNG} succeeded, slowest {slowest:.1f} s",
           f"all succeed, each ≤ {bound:.0f} s", not failed and slowest <= bound)
    record("after the hang (SIGCONT)", f"{len(daemons)} daemon, integrity_check {sound}, "
           f"unlocks with the password: {'yes' if 'ok' in unlocked else unlocked}",
           "1 daemon, sound keychain", len(daemons) == 1 and sound == "ok" and "ok" in unlocked)
    assert not failed, failed[0]
    assert slowest <= bound, slowest
    assert daemons == [hung], daemons
    assert sound == "ok", sound
    assert "ok" in unlocked, unlocked
