"""Attack: guessing a keychain's password through gnome-keyring's private interface.

`UnlockWithMasterPassword` and `ChangeWithMasterPassword` take a password in a secret struct and
answer at once, with no dialog: a guesser's fastest door, if it were not throttled. Both go
through the daemon's guessing throttle (docs/secret-service.md, "gnome-keyring's private
interface"; docs/password-throttle.md): a refused attempt says "Too many wrong passwords", every
other `Denied` was a real check. The daemon runs with its real 1 s first delay (doubling) and the
fast test KDF, so only the throttle stands in the way; T seconds allow at most 3 + log2(T + 1)
real checks (test_attack_throttle.py explains the bound).
"""

from __future__ import annotations

import time

import dbus

from keywell_helpers import bodies_as_test_user
from secret_service_helpers import SERVICE_PATH, session  # noqa: F401
from security_figures import record
from test_attack_throttle import RIGHT, allowed_checks

INTERNAL = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
DENIED = "org.gnome.keyring.Error.Denied"
REFUSAL = "Too many wrong passwords"


def test_master_password_calls_are_throttled(session):
    session.create_login(RIGHT)
    connection = session.dbus()
    service = connection.get_object("org.freedesktop.secrets", SERVICE_PATH)
    internal = dbus.Interface(service, INTERNAL)
    _, path = dbus.Interface(service, "org.freedesktop.Secret.Service").OpenSession("plain", dbus.String("", variant_level=1))
    login = f"{SERVICE_PATH}/collection/login"
    session.native().Lock("login")

    def secret(text: str) -> dbus.Struct:
        return dbus.Struct((dbus.ObjectPath(path), dbus.ByteArray(b""), dbus.ByteArray(text.encode()), "text/plain"),
                           signature="oayays")

    attempts = checks = 0
    start = time.monotonic()
    while time.monotonic() - start < 10:
        guess = secret(f"guess-{attempts}")
        try:
            if attempts % 2 == 0:
                internal.UnlockWithMasterPassword(login, guess)
            else:
                internal.ChangeWithMasterPassword(login, guess, secret("mine"))
            raise AssertionError("a wrong password was accepted")
        except dbus.DBusException as error:
            assert error.get_dbus_name() == DENIED, error
            checks += REFUSAL not in error.get_dbus_message()
        attempts += 1
    elapsed = time.monotonic() - start
    bound = allowed_checks(elapsed)
    record("wrong passwords through UnlockWithMasterPassword and ChangeWithMasterPassword, alternating, for 10 s",
           f"{checks} real checks of {attempts} attempts", "≤ 8", checks <= 8)
    assert checks <= bound, f"{checks} real checks of {attempts} attempts in {elapsed:.1f} s"
    assert bool(session.native().GetInfo("login")["locked"]), "the keychain stayed locked"


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
