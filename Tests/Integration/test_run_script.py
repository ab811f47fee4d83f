"""scripts/run.sh's login keychain step (scripts/lib/login-keychain.sh, which run.sh sources): a
first run creates `login`; a later run that finds it locked asks for its password (here on
standard input) and goes on with it unlocked; a wrong password stops with a message saying what to
do. Runs the real script with the built `keywell` against keywelld activated on a private bus.
"""

from __future__ import annotations

import os
from pathlib import Path

import dbus

from keywell_helpers import built
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
