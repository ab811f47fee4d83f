"""Attacks by a sandboxed app on what all the user's apps share, through the Secret Service
(docs/secret-service.md, "Sandboxed callers"): a Flatpak app (a python script over jeepney in a
bwrap sandbox with a `/.flatpak-info`) that repoints or removes the `default` alias, renames the
login collection, locks the user's keychains (a denial of service), creates collections, guesses
the master password through gnome-keyring's private interface, and lists other apps' item
paths by introspecting the collection. Each call is made exactly as the attacker would; an
unconfined program then checks that nothing changed."""

from __future__ import annotations

import json

from keywell_helpers import bodies_as_test_user
from secret_service_helpers import LOGIN_PASSWORD, session  # noqa: F401
from security_figures import record
from ss_access_helpers import PYTHON, Client, sandbox, scratch  # noqa: F401

ACCESS_DENIED = "org.freedesktop.DBus.Error.AccessDenied"

# `attack OTHER` makes every shared-state call (SetAlias points `default` at the collection OTHER) in turn and prints each one's outcome ("OK", or the
# error's name); `introspect PATH` prints the child nodes Introspect lists at PATH.
ATTACKER = r'''
import json, sys
import xml.etree.ElementTree as ET
from jeepney import DBusAddress, Properties, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import DBusErrorResponse, unwrap_msg

NAME = "org.freedesktop.secrets"
ROOT = "/org/freedesktop/secrets"
connection = open_dbus_connection(bus="SESSION")
service = DBusAddress(ROOT, bus_name=NAME, interface="org.freedesktop.Secret.Service")
internal = DBusAddress(ROOT, bus_name=NAME, interface="org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface")

def call(address, method, signature=None, *args):
    return unwrap_msg(connection.send_and_get_reply(new_method_call(address, method, signature, args), timeout=120))

def attempt(action):
    try:
        action()
        return "OK"
    except DBusErrorResponse as error:
        return error.name

session = call(service, "OpenSession", "sv", "plain", ("s", ""))[1]
login = call(service, "ReadAlias", "s", "default")[0]
collection = DBusAddress(login, bus_name=NAME, interface="org.freedesktop.Secret.Collection")

def secret(text):
    return (session, b"", text.encode(), "text/plain")

label = {"org.freedesktop.Secret.Collection.Label": ("s", "Spy's")}
if sys.argv[1] == "attack":
    print(json.dumps({
        "SetAlias": attempt(lambda: call(service, "SetAlias", "so", "default", sys.argv[2])),
        "SetLabel": attempt(lambda: unwrap_msg(connection.send_and_get_reply(
            Properties(collection).set("Label", "s", "Spy's"), timeout=120))),
        "Lock": attempt(lambda: call(service, "Lock", "ao", [login])),
        "LockService": attempt(lambda: call(service, "LockService")),
        "CreateCollection": attempt(lambda: call(service, "CreateCollection", "a{sv}s", label, "")),
        "CreateWithMasterPassword": attempt(lambda: call(internal, "CreateWithMasterPassword", "a{sv}(oayays)",
                                                          label, secret("spy-password"))),
        "ChangeWithMasterPassword": attempt(lambda: call(internal, "ChangeWithMasterPassword", "o(oayays)(oayays)",
                                                          login, secret("guess-1"), secret("spy-password"))),
        "UnlockWithMasterPassword": attempt(lambda: call(internal, "UnlockWithMasterPassword", "o(oayays)",
                                                          login, secret("guess-2"))),
        "ChangeWithPrompt": attempt(lambda: call(internal, "ChangeWithPrompt", "o", login)),
    }))
elif sys.argv[1] == "introspect":
    introspectable = DBusAddress(sys.argv[2], bus_name=NAME, interface="org.freedesktop.DBus.Introspectable")
    xml = call(introspectable, "Introspect")[0]
    print(json.dumps([node.get("name") for node in ET.fromstring(xml).findall("node")]))
'''


def run_attacker(session, scratch, *args: str, app_id: str, instance: str):
    script = scratch / "spy.py"
    script.write_text(ATTACKER)
    result = session.run([*sandbox(session, scratch, app_id, instance), PYTHON, str(script), *args], timeout=600, cwd=scratch)
    assert result.returncode == 0, f"{result.stderr.decode()}\ndaemon log:\n{session.daemon_log()[-3000:]}"
    return json.loads(result.stdout)


def shared_state(session) -> dict:
    """What an unconfined program sees of the shared state: aliases, collections, labels, locks."""
    import dbus
    bus = session.dbus()
    service = dbus.Interface(bus.get_object("org.freedesktop.secrets", "/org/freedesktop/secrets"),
                             "org.freedesktop.Secret.Service")
    properties = dbus.Interface(bus.get_object("org.freedesktop.secrets", "/org/freedesktop/secrets"),
                                dbus.PROPERTIES_IFACE)
    collections = sorted(str(path) for path in properties.Get("org.freedesktop.Secret.Service", "Collections"))
    state = {"default": str(service.ReadAlias("default")), "collections": collections}
    for path in collections:
        collection = dbus.Interface(bus.get_object("org.freedesktop.secrets", path), dbus.PROPERTIES_IFACE)
        state[path] = {name: str(collection.Get("org.freedesktop.Secret.Collection", name)) for name in ("Label", "Locked")}
    return state


def other_keychain(session) -> str:
    """A second keychain, so that `default` has somewhere else to point; its collection path."""
    import dbus
    session.native().CreateKeychain("other", dbus.ByteArray(b"other-password"))
    return "/org/freedesktop/secrets/collection/other"


def test_a_sandboxed_app_cannot_change_what_all_apps_share(session, scratch):
    session.create_login()
    other = other_keychain(session)
    before = shared_state(session)
    assert other in before["collections"] and before["default"] != other
    assert before[before["default"]]["Locked"] == "0"
    outcomes = run_attacker(session, scratch, "attack", other, app_id="org.example.Spy", instance="2000000011")
    after = shared_state(session)
    refused = [name for name, outcome in outcomes.items() if outcome == ACCESS_DENIED]
    record("Secret Service: a Flatpak app (bwrap, /.flatpak-info) changes shared state: SetAlias, collection Label, "
           "Lock, LockService, CreateCollection and gnome-keyring's private interface (create, change, unlock "
           "with a guessed master password, ChangeWithPrompt)",
           f"{len(refused)} of {len(outcomes)} calls refused (AccessDenied); shared state "
           f"{'unchanged' if after == before else 'changed'}",
           f"all {len(outcomes)} refused, nothing changed", len(refused) == len(outcomes) and after == before)
    assert outcomes == {name: ACCESS_DENIED for name in outcomes}, outcomes
    assert after == before


def test_an_unconfined_program_still_changes_aliases_and_labels(session, scratch):
    # The refusals are about sandboxes only: the person's own tools keep every call.
    import dbus
    session.create_login()
    other = other_keychain(session)
    bus = session.dbus()
    service = dbus.Interface(bus.get_object("org.freedesktop.secrets", "/org/freedesktop/secrets"),
                             "org.freedesktop.Secret.Service")
    login = str(service.ReadAlias("default"))
    collection = dbus.Interface(bus.get_object("org.freedesktop.secrets", login), dbus.PROPERTIES_IFACE)
    collection.Set("org.freedesktop.Secret.Collection", "Label", dbus.String("Renamed"))
    locked = service.Lock([dbus.ObjectPath(login)])[0]
    service.SetAlias("default", dbus.ObjectPath(other))
    assert str(collection.Get("org.freedesktop.Secret.Collection", "Label")) == "Renamed"
    assert [str(path) for path in locked] == [login]
    assert str(service.ReadAlias("default")) == other


def test_introspection_lists_no_other_apps_items_to_a_sandboxed_app(session, scratch):
    session.create_login()
    host = Client(session, scratch / "host.py")
    hosts = [host.store(f"Host {n}", {"service": "host", "n": str(n)}, f"host-secret-{n}") for n in range(5)]
    app = Client(session, scratch / "app.py")
    own = app.store("App's", {"service": "app"}, "app-secret", prefix=sandbox(session, scratch, "org.example.Spy", "2000000012"))
    login = own.rsplit("/", 1)[0]
    listed = run_attacker(session, scratch, "introspect", login, app_id="org.example.Spy", instance="2000000013")
    leaked = [path for path in hosts if path.rsplit("/", 1)[1] in listed]
    record("Secret Service: a Flatpak app introspects the login collection's path for other apps' item nodes",
           f"{len(leaked)} of {len(hosts)} other apps' item paths listed", "0 listed", not leaked)
    assert leaked == [], listed
    # Its own item is listed, as in its `Items`.
    assert listed == [own.rsplit("/", 1)[1]]
    # An unconfined program sees every node, as before.
    unconfined = scratch / "look.py"
    unconfined.write_text(ATTACKER)
    everything = json.loads(session.run([PYTHON, str(unconfined), "introspect", login], check=True, timeout=120).stdout)
    assert sorted(everything) == sorted(path.rsplit("/", 1)[1] for path in hosts + [own])


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
