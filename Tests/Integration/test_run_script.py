"""scripts/run.sh's login keychain step (scripts/lib/login-keychain.sh, which run.sh sources): a
first run creates `login`; a later run that finds it locked asks for its password (here on
standard input) and goes on with it unlocked; a wrong password stops with a message saying what to
do. Runs the real script with the built `keywell` against keywelld activated on a private bus.
"""

from __future__ import annotations

import os
from pathlib import Path

import dbus

from keywell_helpers import bodies_as_test_user, built
from secret_service_helpers import session  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
STEP = "set -euo pipefail; cd \"$REPO\"; source scripts/lib/login-keychain.sh; ensure_login_keychain; " \
       "keywell add-generic-password -U -a me -s run-test -w after-unlock"


def run_step(bus, password_line: str):
    keywell_dir = os.path.dirname(built("KEYWELL"))
    return bus.run(["bash", "-c", STEP], input=password_line,
                   env={"PATH": f"{keywell_dir}:{bus.env['PATH']}", "REPO": str(REPO)})


def is_locked(bus) -> bool:
    return bool(bus.native().GetInfo("login")["locked"])


def test_first_run_creates_login_and_a_later_run_unlocks_it(session):
    first = run_step(session, "run-pw\n")
    assert first.returncode == 0, first.stderr.decode()
    assert "creating your login keychain" in first.stdout.decode()
    session.native().Lock("login")
    assert is_locked(session)

    again = run_step(session, "run-pw\n")
    assert again.returncode == 0, again.stdout.decode() + again.stderr.decode()
    assert "login keychain is locked" in again.stdout.decode()
    assert not is_locked(session)
    # It went on: the item written after the unlock is there.
    assert session.run([built("KEYWELL"), "find-generic-password", "-s", "run-test", "-w"]).stdout == b"after-unlock\n"
    assert b"run-pw" not in again.stdout + again.stderr


def test_a_wrong_password_leaves_it_locked_and_says_what_to_do(session):
    assert run_step(session, "run-pw\n").returncode == 0
    session.native().Lock("login")
    wrong = run_step(session, "not-it\n")
    assert wrong.returncode != 0
    assert "keywell unlock-keychain login" in wrong.stderr.decode()
    assert is_locked(session)
    # An unlocked login needs nothing: nothing is read from standard input.
    session.native().Unlock("login", dbus.ByteArray(b"run-pw"))
    fine = run_step(session, "")
    assert fine.returncode == 0 and "locked" not in fine.stdout.decode()


def _read_until(fd: int, text: bytes, seen: bytearray, timeout: float = 30) -> None:
    import select
    import time
    deadline = time.monotonic() + timeout
    while text not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no {text!r} on the terminal; saw {bytes(seen)!r}"
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            assert chunk, f"the terminal closed before {text!r}; saw {bytes(seen)!r}"
            seen.extend(chunk)


def test_on_a_terminal_it_asks_again_after_a_wrong_password(session):
    import pty
    assert run_step(session, "run-pw\n").returncode == 0
    session.native().Lock("login")
    keywell_dir = os.path.dirname(built("KEYWELL"))
    env = {**session.env, "PATH": f"{keywell_dir}:{session.env['PATH']}", "REPO": str(REPO)}
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe("bash", ["bash", "-c", STEP], env)
    seen = bytearray()
    try:
        _read_until(fd, b"password to unlock", seen)
        os.write(fd, b"not-it\n")
        del seen[:]
        _read_until(fd, b"password to unlock", seen)
        os.write(fd, b"run-pw\n")
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, bytes(seen)
    assert not is_locked(session)
    assert session.run([built("KEYWELL"), "find-generic-password", "-s", "run-test", "-w"]).stdout == b"after-unlock\n"


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
