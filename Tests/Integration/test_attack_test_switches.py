"""A shipped keywelld ignores the test switches (issue 30, finding 5): the release build read
`KEYWELL_TEST_FAST_KDF` and `KEYWELL_TEST_THROTTLE_UNIT_MS`, so anything that can set the
activation environment of the user's bus could make the next keychains cheap to guess and the
wrong-password throttle short.

The release keywelld is started with both switches set, as an attacker would leave them, and
must behave as without them: a keychain it creates stores the real Argon2id cost
(docs/file-format.md; `KDFParameters.default`), the third wrong password starts the real first
delay of one second, and a fourth right after it is refused inside that delay. The same checks against a
debug build (KEYWELLD_DEBUG, which honours the switches by design) show that they see the
switches when a daemon reads them: the one test of the integration suite that runs the debug
build, since its point is the difference.

Needs KEYWELLD_RELEASE, a keywelld built with `swift build -c release` (without
KEYWELL_TEST_SWITCHES=1), and KEYWELLD_DEBUG, one built with `swift build`; scripts/test.sh sets
both. Without the release one the test skips, and fails under CI; without the debug one the
control fails.
"""

from __future__ import annotations

import os
import sqlite3

import dbus
import pytest

from keywell_helpers import bodies_as_test_user, built
from secret_service_helpers import KeywellBus
from skip_helpers import cannot_run

# KDFParameters.default and libsodium's minimum (crypto_pwhash_opslimit_min / memlimit_min).
REAL_OPS_LIMIT, REAL_MEM_LIMIT = 3, 128 << 20
FAST_OPS_LIMIT, FAST_MEM_LIMIT = 1, 8192
# PasswordThrottle: the first two wrong passwords are free, the third starts the first delay.
REFUSAL = "too many wrong passwords for "
NEXT_ATTEMPT = "next attempt allowed in "
SWITCHES = {"KEYWELL_TEST_FAST_KDF": "1", "KEYWELL_TEST_THROTTLE_UNIT_MS": "1"}


def release_keywelld() -> str:
    path = os.environ.get("KEYWELLD_RELEASE")
    if not path:
        # scripts/test.sh always builds one: in CI a missing release build is a failure, not a skip.
        cannot_run("KEYWELLD_RELEASE is not set: build one with `swift build -c release --product keywelld` "
                   "and point KEYWELLD_RELEASE at it")
    if not os.access(path, os.X_OK):
        pytest.fail(f"KEYWELLD_RELEASE={path} is not an executable")
    return os.path.abspath(path)


def stored_kdf_cost(bus: KeywellBus, name: str) -> tuple[int, int]:
    path = bus.home / ".local/share/keywell/keychains" / f"{name}.keychain-db"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as database:
        return database.execute("SELECT kdf_ops_limit, kdf_mem_limit FROM keychain").fetchone()


def wrong_passwords(bus: KeywellBus, name: str) -> list[str]:
    """The messages answering four wrong passwords sent one right after another."""
    native = bus.native()
    messages = []
    for attempt in range(4):
        try:
            native.Unlock(name, dbus.ByteArray(f"guess-{attempt}".encode()), timeout=120)
        except dbus.DBusException as error:
            assert error.get_dbus_name().endswith(".AuthFailed"), error
            messages.append(error.get_dbus_message())
            continue
        raise AssertionError("a wrong password unlocked the keychain")
    return messages


def first_delay(messages: list[str]) -> str:
    """The delay the third wrong password starts, as its message names it ("1 s")."""
    third = messages[2]
    assert NEXT_ATTEMPT in third, third
    return third.split(NEXT_ATTEMPT, 1)[1].rstrip(")")


def daemon_with_switches(keywelld: str) -> KeywellBus:
    bus = KeywellBus(keywelld=keywelld, daemon_env=SWITCHES)
    native = bus.native()
    native.CreateKeychain("switched", dbus.ByteArray(b"the-real-password"), timeout=120)
    native.Lock("switched")
    return bus


def test_a_release_keywelld_ignores_the_test_switches():
    bus = daemon_with_switches(release_keywelld())
    try:
        assert stored_kdf_cost(bus, "switched") == (REAL_OPS_LIMIT, REAL_MEM_LIMIT)
        messages = wrong_passwords(bus, "switched")
        assert first_delay(messages) == "1 s", messages[2]
        assert REFUSAL in messages[3], f"the fourth wrong password was checked at once: {messages[3]}"
    finally:
        bus.close()


def test_a_test_build_honours_them():
    """The control: the same checks see the switches in a daemon that reads them."""
    bus = daemon_with_switches(built("KEYWELLD_DEBUG", "debug keywelld (`swift build --product keywelld`)"))
    try:
        assert stored_kdf_cost(bus, "switched") == (FAST_OPS_LIMIT, FAST_MEM_LIMIT)
        assert first_delay(wrong_passwords(bus, "switched")) == "0.001 s"
    finally:
        bus.close()


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
