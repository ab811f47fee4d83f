"""`keywell migrate --from-secret-service` against the real gnome-keyring-daemon on a private bus
(docs/migration.md, "From any running Secret Service"): items stored with secret-tool, python
keyring and python-dbus in two collections (one locked, then unlocked), migrated into keywelld
while gnome-keyring owns org.freedesktop.secrets; once gnome-keyring stops and keywelld takes the
name, the same lookups give the same secrets, with the same labels, attributes, content types and
times. A second run copies nothing. A hostile owner's huge list is refused with a clear error.
"""

from __future__ import annotations

import os
import signal
import subprocess

import dbus
import pytest

from keywell_helpers import bodies_as_test_user, built, wait_for
from secret_service_helpers import SECRETS, SERVICE_PATH, KeywellBus

GK_PASSWORD = "gk-login-pw"
SERVICE_IFACE = "org.freedesktop.Secret.Service"
ITEM_IFACE = "org.freedesktop.Secret.Item"
GUILT = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"



def _plain_secret(session, value: bytes, content_type: str = "text/plain"):
    return dbus.Struct((session, dbus.ByteArray(b""), dbus.ByteArray(value), content_type))


def _snapshot(bus: KeywellBus) -> dict:
    """Every item of every persistent collection: (collection label, attributes) → label, secret,
    content type, created, modified; read through whatever owns org.freedesktop.secrets."""
    connection = bus.dbus()
    service = dbus.Interface(connection.get_object(SECRETS, SERVICE_PATH), SERVICE_IFACE)
    _, session = service.OpenSession("plain", dbus.String("", variant_level=1))
    properties = dbus.Interface(connection.get_object(SECRETS, SERVICE_PATH), dbus.PROPERTIES_IFACE)
    found = {}
    for collection in properties.Get(SERVICE_IFACE, "Collections"):
        if collection.endswith("/session"):
            continue
        cprops = dbus.Interface(connection.get_object(SECRETS, collection), dbus.PROPERTIES_IFACE)
        label = str(cprops.Get("org.freedesktop.Secret.Collection", "Label"))
        items = list(cprops.Get("org.freedesktop.Secret.Collection", "Items"))
        secrets = service.GetSecrets(items, session) if items else {}
        for item in items:
            info = dbus.Interface(connection.get_object(SECRETS, item), dbus.PROPERTIES_IFACE).GetAll(ITEM_IFACE)
            attributes = tuple(sorted((str(k), str(v)) for k, v in info["Attributes"].items()))
            secret = secrets[item]
            found[(label.lower(), attributes)] = (str(info["Label"]), bytes(secret[2]), str(secret[3]),
                                                  int(info["Created"]), int(info["Modified"]))
    return found


def _migrate(bus: KeywellBus):
    return bus.run([built("KEYWELL"), "migrate", "--from-secret-service"], timeout=120)


@pytest.fixture
def gnome_bus():
    if subprocess.run(["which", "gnome-keyring-daemon"], capture_output=True).returncode != 0:
        pytest.fail("gnome-keyring-daemon is missing: run scripts/setup.sh")
    bus = KeywellBus()
    gnome = subprocess.Popen(["gnome-keyring-daemon", "--foreground", "--components=secrets", "--unlock"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=bus.env,
                             **bus.owner.spawn)
    gnome.stdin.write(GK_PASSWORD.encode())
    gnome.stdin.close()

    def owned() -> None:
        connection = bus.dbus()
        wait_for(lambda: connection.name_has_owner(SECRETS), "the other service to own the name", 20)

    bus.owner.call(owned)
    bus.gnome = gnome
    try:
        yield bus
    finally:
        if gnome.poll() is None:
            gnome.terminate()
            gnome.wait(timeout=10)
        bus.close()


def test_migration_from_gnome_keyring_gives_the_same_lookups(gnome_bus):
    bus = gnome_bus
    connection = bus.dbus()
    service_object = connection.get_object(SECRETS, SERVICE_PATH)
    service = dbus.Interface(service_object, SERVICE_IFACE)
    _, session = service.OpenSession("plain", dbus.String("", variant_level=1))

    # The login collection (gnome-keyring's default), filled the way applications do.
    bus.secret_tool("store", "--label=Mail", "service", "imap", "user", "bob", input="hunter2", check=True)
    assert bus.run(["/usr/bin/python3", "-c", "import keyring; keyring.set_password('app', 'alice', 'kr-secret')"]).returncode == 0
    # A second collection with its own password, locked and unlocked again, holding a binary secret.
    work = dbus.Interface(service_object, GUILT).CreateWithMasterPassword(
        {"org.freedesktop.Secret.Collection.Label": dbus.String("Work", variant_level=1)},
        _plain_secret(session, b"work-pw"))
    bus.secret_tool("store", "--label=VPN", f"--collection={work}", "service", "vpn", "user", "carol", input="vpn-secret", check=True)
    collection = dbus.Interface(connection.get_object(SECRETS, work), "org.freedesktop.Secret.Collection")
    collection.CreateItem({ITEM_IFACE + ".Label": dbus.String("Key blob", variant_level=1),
                           ITEM_IFACE + ".Attributes": dbus.Dictionary({"app": "blob"}, signature="ss", variant_level=1)},
                          _plain_secret(session, b"\x00\x01binary\xff", "application/octet-stream"), False)
    service.Lock([work])
    dbus.Interface(service_object, GUILT).UnlockWithMasterPassword(work, _plain_secret(session, b"work-pw"))
    before = _snapshot(bus)
    assert len(before) == 4

    # keywelld (activated by the CLI) runs without the name; it asks for its new keychains' passwords.
    bus.pinentry_answers("kw-login-pw", "kw-work-pw")
    first = _migrate(bus)
    out = first.stdout.decode()
    assert first.returncode == 0, out + first.stderr.decode() + bus.daemon_log()[-2000:]
    assert "gnome-keyring-daemon" in out
    assert "2 collection(s): 4 copied, 0 updated, 0 already there (skipped)" in out
    assert "waits for the name" in bus.daemon_log()

    # Again: nothing new.
    again = _migrate(bus)
    assert again.returncode == 0, again.stderr.decode()
    assert "2 collection(s): 0 copied, 0 updated, 4 already there (skipped)" in again.stdout.decode()
    assert sum(line == "GETPIN" for line in bus.pinentry_lines()) == 2

    # gnome-keyring goes; keywelld takes the name; the same lookups answer the same.
    # (Signalled by pid: this body runs in a child of the process that started it, which reaps it.)
    os.kill(bus.gnome.pid, signal.SIGTERM)
    wait_for(lambda: "now owning org.freedesktop.secrets" in bus.daemon_log(), "keywelld to take the name", 20)
    assert bus.secret_tool("lookup", "service", "imap", "user", "bob").stdout == b"hunter2"
    assert bus.secret_tool("lookup", "service", "vpn", "user", "carol").stdout == b"vpn-secret"
    kr = bus.run(["/usr/bin/python3", "-c", "import keyring, sys; sys.stdout.write(keyring.get_password('app', 'alice'))"])
    assert kr.stdout == b"kr-secret"
    after = _snapshot(bus)
    assert after == before
    native = bus.native()
    assert str(native.GetDefaultKeychain()) == "login"
    assert sorted(str(n) for n in native.ListKeychains()) == ["Work", "login"]


def test_a_locked_collection_whose_prompt_cannot_show_is_reported(gnome_bus):
    bus = gnome_bus
    bus.secret_tool("store", "--label=Mail", "service", "imap", "user", "bob", input="hunter2", check=True)
    service = dbus.Interface(bus.dbus().get_object(SECRETS, SERVICE_PATH), SERVICE_IFACE)
    service.Lock(["/org/freedesktop/secrets/collection/login"])
    # gnome-keyring has no prompter on this bus: its unlock prompt ends dismissed.
    result = _migrate(bus)
    assert result.returncode == 1
    assert "left behind" in result.stderr.decode() and "still locked" in result.stderr.decode()
    assert "0 collection(s)" in result.stdout.decode()


def test_nothing_to_migrate_from_when_keywelld_owns_the_name():
    bus = KeywellBus()
    try:
        bus.create_login()
        assert bus.dbus().get_name_owner(SECRETS) == bus.dbus().get_name_owner("org.keywell.Keychain")
        result = _migrate(bus)
        assert result.returncode == 1
        assert "keywelld itself owns org.freedesktop.secrets" in result.stderr.decode()
        assert "Stop keywelld" in result.stderr.decode()
    finally:
        bus.close()


HOSTILE = r"""
import sys
from jeepney import MessageType, message_bus, new_error, new_method_return
from jeepney.io.blocking import open_dbus_connection
count = int(sys.argv[1])
connection = open_dbus_connection(bus="SESSION")
assert connection.send_and_get_reply(message_bus.RequestName("org.freedesktop.secrets", 4)).body[0] == 1
print("ready", flush=True)
while True:
    message = connection.receive()
    header = message.header
    if header.message_type != MessageType.method_call:
        continue
    member = header.fields.get(3)  # HeaderFields.member
    if member == "OpenSession":
        reply = new_method_return(message, "vo", (("s", ""), "/org/freedesktop/secrets/session/1"))
    elif member == "ReadAlias":
        reply = new_method_return(message, "o", ("/",))
    elif member == "Get":
        paths = [f"/org/freedesktop/secrets/collection/c{i}" for i in range(count)]
        reply = new_method_return(message, "v", (("ao", paths),))
    else:
        reply = new_error(message, "org.freedesktop.DBus.Error.UnknownMethod", "s", ("no",))
    connection.send(reply)
"""


def test_a_hostile_owner_listing_too_many_collections_is_refused():
    bus = KeywellBus()
    owner = subprocess.Popen(["/usr/bin/python3", "-c", HOSTILE, "1025"], stdout=subprocess.PIPE, env=bus.env)
    try:
        assert owner.stdout.readline().strip() == b"ready"
        result = _migrate(bus)
        assert result.returncode == 1
        message = result.stderr.decode()
        assert "lists 1025 collections; at most 1024 are taken" in message, message
        assert bus.native().ListKeychains() == []
    finally:
        owner.terminate()
        owner.wait(timeout=10)
        bus.close()


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
