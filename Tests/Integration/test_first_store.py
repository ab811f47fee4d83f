"""The first store of a new user, every path (docs/secret-service.md, "First store"): keywelld
D-Bus activated on a private bus with fresh XDG folders, then `secret-tool store`, python
`keyring.set_password` and `secret-tool store --collection=…` with (a) no keychain at all, (b)
keychains but no default, (c) a default that names a deleted keychain, (d) the creation prompt
dismissed, (e) no prompter, (f) `login` locked. Each ends in a stored item or in an error that says
why and what to do. The scripted pinentry (KEYWELL_PINENTRY) is the person.

The last test puts the same calls to the real gnome-keyring-daemon on a private bus and checks that
keywelld answers the first ones as it does (the answers libsecret's fallbacks depend on).
"""

from __future__ import annotations

import subprocess
import time

import dbus
import pytest

from keywell_helpers import bodies_as_test_user, built
from secret_service_helpers import LOGIN_PASSWORD, SECRETS, SERVICE_PATH, KeywellBus

DEFAULT_ALIAS = "/org/freedesktop/secrets/aliases/default"
NO_PINENTRY = "/nonexistent/pinentry"


def store(bus, *extra: str, secret: str = "first-secret"):
    return bus.secret_tool("store", "--label=x", *extra, "service", "s", "account", "a", input=secret)


def keyring_set(bus):
    return bus.run(["/usr/bin/python3", "-c", "import keyring; keyring.set_password('s2', 'a2', 'kr-secret')"])


def lookup(bus) -> bytes:
    return bus.secret_tool("lookup", "service", "s", "account", "a").stdout


def make_bus(pinentry: str | None = None) -> KeywellBus:
    bus = KeywellBus()
    if pinentry:
        # The wrapper sets KEYWELL_PINENTRY to the scripted one; this one goes after it.
        text = bus.wrapper.read_text().replace("exec ", f"export KEYWELL_PINENTRY='{pinentry}'\nexec ", 1)
        bus.wrapper.write_text(text)
    return bus


@pytest.fixture
def bus():
    b = make_bus()
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def bus_without_prompter():
    b = make_bus(NO_PINENTRY)
    try:
        yield b
    finally:
        b.close()


# ---------------------------------------------------------------------------------- stored


def test_a_no_keychain_at_all_creates_the_default_through_a_prompt(bus):
    # The new keychain enforces access lists: secret-tool reading python keyring's item is
    # asked, and allowed (docs/secret-service.md, "Access control").
    bus.pinentry_answers("new-pw", "allow")
    result = store(bus)
    assert result.returncode == 0, result.stderr
    assert lookup(bus) == b"first-secret"
    assert str(bus.native().GetDefaultKeychain()) == "Default keyring"
    # The next client finds the default there: no second prompt.
    assert keyring_set(bus).returncode == 0
    assert bus.secret_tool("lookup", "service", "s2", "username", "a2").stdout == b"kr-secret"
    assert sum(line == "GETPIN" for line in bus.pinentry_lines()) == 1


def test_a_python_keyring_alone_creates_the_default_too(bus):
    bus.pinentry_answers("new-pw", "allow")  # the access question of secret-tool's lookup
    result = keyring_set(bus)
    assert result.returncode == 0, result.stderr
    assert bus.secret_tool("lookup", "service", "s2", "username", "a2").stdout == b"kr-secret"


def test_b_keychains_but_no_default(bus):
    bus.native().CreateKeychain("work", dbus.ByteArray(b"work-pw"))
    service = dbus.Interface(bus.dbus().get_object(SECRETS, SERVICE_PATH), "org.freedesktop.Secret.Service")
    assert service.ReadAlias("default") == "/"
    bus.pinentry_answers("new-pw")
    assert store(bus).returncode == 0
    assert lookup(bus) == b"first-secret"
    assert str(bus.native().GetDefaultKeychain()) == "Default keyring"
    # The keychain that was there is left as it was.
    assert "work" in [str(n) for n in bus.native().ListKeychains()]


def test_c_default_naming_a_deleted_keychain(bus):
    native = bus.native()
    native.CreateKeychain("work", dbus.ByteArray(b"work-pw"))
    native.SetDefaultKeychain("work")
    native.DeleteKeychain("work")
    bus.pinentry_answers("new-pw")
    assert store(bus).returncode == 0
    assert lookup(bus) == b"first-secret"
    assert str(native.GetDefaultKeychain()) == "Default keyring"


def test_f_locked_login_is_unlocked_through_a_prompt_and_stores(bus):
    bus.create_login()
    bus.native().Lock("login")
    bus.pinentry_answers(LOGIN_PASSWORD)
    assert store(bus).returncode == 0
    assert lookup(bus) == b"first-secret"


def test_store_into_a_named_collection(bus):
    bus.create_login()
    result = store(bus, "--collection=/org/freedesktop/secrets/collection/login")
    assert result.returncode == 0, result.stderr
    missing = store(bus, "--collection=/org/freedesktop/secrets/collection/nope")
    assert missing.returncode != 0
    assert "/org/freedesktop/secrets/collection/nope" in missing.stderr.decode()


# ---------------------------------------------------------------------------------- a reason


def test_d_creation_prompt_dismissed_says_why_and_what_to_do(bus):
    bus.pinentry_answers(None)  # Cancel
    result = store(bus)
    assert result.returncode != 0
    message = result.stderr.decode()
    assert "no keychain is the default one" in message
    assert "the password dialog was cancelled" in message
    assert "keywell create-keychain login" in message
    assert lookup(bus) == b""
    assert "dismissed: the password dialog was cancelled" in bus.daemon_log()
    # python keyring prints its own words; the store did not happen either.
    bus.pinentry_answers(None)
    failed = keyring_set(bus)
    assert failed.returncode != 0 and "Prompt dismissed" in failed.stderr.decode()
    # Doing what the message says works.
    bus.pinentry_answers("new-pw")
    assert store(bus).returncode == 0 and lookup(bus) == b"first-secret"


def test_e_no_prompter_says_which_and_what_to_do(bus_without_prompter):
    bus = bus_without_prompter
    result = store(bus)
    assert result.returncode != 0
    message = result.stderr.decode()
    assert "no password dialog could be shown" in message and NO_PINENTRY in message
    assert "keywell create-keychain login" in message
    assert "no password dialog" in bus.daemon_log()
    # What the message says: create the login keychain; the next store goes there, no prompt needed.
    keywell = bus.run([built("KEYWELL"), "create-keychain", "login"], input="pw\npw\n")
    assert keywell.returncode == 0, keywell.stderr
    assert store(bus).returncode == 0 and lookup(bus) == b"first-secret"


def test_f_locked_login_with_the_prompt_dismissed_says_how_to_unlock(bus):
    bus.create_login()
    bus.native().Lock("login")
    bus.pinentry_answers(None)
    result = store(bus)
    assert result.returncode != 0
    message = result.stderr.decode()
    assert "“login” is locked" in message and "cancelled" in message
    assert "keywell unlock-keychain login" in message


def test_f_locked_login_without_a_prompter(bus_without_prompter):
    bus = bus_without_prompter
    bus.create_login()
    bus.native().Lock("login")
    result = store(bus)
    assert result.returncode != 0
    message = result.stderr.decode()
    assert "no password dialog could be shown" in message and "keywell unlock-keychain login" in message


# ---------------------------------------------------------------------------------- gnome-keyring


def _first_answers(bus: KeywellBus) -> dict:
    """What a service answers to the first calls of libsecret's store: ReadAlias("default"),
    and CreateItem on the default alias (the error's name, which decides libsecret's fallback)."""
    connection = bus.dbus()
    service = dbus.Interface(connection.get_object(SECRETS, SERVICE_PATH), "org.freedesktop.Secret.Service")
    _, session = service.OpenSession("plain", dbus.String("", variant_level=1))
    collection = dbus.Interface(connection.get_object(SECRETS, DEFAULT_ALIAS), "org.freedesktop.Secret.Collection")
    properties = {"org.freedesktop.Secret.Item.Label": dbus.String("x", variant_level=1),
                  "org.freedesktop.Secret.Item.Attributes": dbus.Dictionary({"service": "s"}, signature="ss", variant_level=1)}
    secret = dbus.Struct((session, dbus.ByteArray(b""), dbus.ByteArray(b"v"), "text/plain"))
    try:
        collection.CreateItem(properties, secret, False)
        create = "ok"
    except dbus.DBusException as error:
        create = error.get_dbus_name()
    return {"ReadAlias": str(service.ReadAlias("default")) == "/", "CreateItem": create}


def test_first_answers_match_gnome_keyring():
    if subprocess.run(["which", "gnome-keyring-daemon"], capture_output=True).returncode != 0:
        pytest.fail("gnome-keyring-daemon is missing: run scripts/setup.sh")
    answers = {}
    for service in ("gnome-keyring", "keywelld"):
        for case in ("no keychain", "locked login"):
            bus = KeywellBus(activate=service == "keywelld")
            gnome = None
            try:
                if service == "gnome-keyring":
                    args = ["gnome-keyring-daemon", "--foreground", "--components=secrets"]
                    if case == "locked login":
                        args.append("--unlock")
                    gnome = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL, env=bus.env)
                    gnome.stdin.write(LOGIN_PASSWORD.encode() if case == "locked login" else b"")
                    gnome.stdin.close()
                    connection = bus.dbus()
                    deadline = time.monotonic() + 15
                    while not connection.name_has_owner(SECRETS):
                        assert time.monotonic() < deadline, "gnome-keyring-daemon did not start"
                        time.sleep(0.05)
                    if case == "locked login":
                        service_object = dbus.Interface(connection.get_object(SECRETS, SERVICE_PATH), "org.freedesktop.Secret.Service")
                        service_object.Lock(["/org/freedesktop/secrets/collection/login"])
                elif case == "locked login":
                    bus.create_login()
                    bus.native().Lock("login")
                answers[(service, case)] = _first_answers(bus)
            finally:
                if gnome is not None:
                    gnome.terminate()
                    gnome.wait(timeout=10)
                bus.close()
    for case in ("no keychain", "locked login"):
        assert answers[("keywelld", case)] == answers[("gnome-keyring", case)], answers
    assert answers[("keywelld", "no keychain")] == {"ReadAlias": True, "CreateItem": "org.freedesktop.DBus.Error.UnknownMethod"}
    assert answers[("keywelld", "locked login")] == {"ReadAlias": False, "CreateItem": "org.freedesktop.Secret.Error.IsLocked"}


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
