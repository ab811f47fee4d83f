"""What the Secret Service access-control tests share: a python Secret Service client that is a
program of its own (a script file, so its identity names the script), and a bwrap sandbox with a
`/.flatpak-info` on a KeywellBus, made as identity_helpers makes one for WhoAmI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from identity_helpers import flatpak_info
from secret_service_helpers import KeywellBus

PYTHON = "/usr/bin/python3"

# A Secret Service client over jeepney (Debian's python3-jeepney). `look ATTRS` prints, as JSON,
# SearchItems' two lists and, for every item found, its Locked property and GetSecret's answer,
# then GetSecrets' answer for all of them. `store LABEL ATTRS SECRET` makes an item in the
# default collection (replace=true) and prints its path. `get PATH` prints one GetSecret answer,
# `probe PATH` tries every way at one item (properties, GetSecret, SetSecret, Delete) and the
# default collection's Items and Delete. `peek PATHS` prints each item's Locked and what GetSecrets
# gives of it, which never ask. `unlock ATTRS` runs Unlock (and its prompt) on the locked matches and prints whether it was
# dismissed, the result, then GetSecret of each. `dismiss ATTRS LOG` runs Unlock's prompt, calls
# Dismiss once the pinentry log LOG shows the dialog holding, prints how it completed and
# whether each is locked and readable (GetSecrets), then runs a second Unlock to its end.
CLIENT = r'''
import json, sys
from jeepney import DBusAddress, MatchRule, Properties, new_method_call
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import DBusErrorResponse, unwrap_msg

NAME = "org.freedesktop.secrets"
service = DBusAddress("/org/freedesktop/secrets", bus_name=NAME, interface="org.freedesktop.Secret.Service")
connection = open_dbus_connection(bus="SESSION")

def call(address, method, signature=None, *args):
    return unwrap_msg(connection.send_and_get_reply(new_method_call(address, method, signature, args), timeout=120))

def item(path):
    return DBusAddress(path, bus_name=NAME, interface="org.freedesktop.Secret.Item")

def get_secret(path, session):
    try:
        return "SECRET " + bytes(call(item(path), "GetSecret", "o", session)[0][2]).decode()
    except DBusErrorResponse as error:
        return "ERROR " + error.name

def locked(path):
    try:
        return unwrap_msg(connection.send_and_get_reply(Properties(item(path)).get("Locked"), timeout=120))[0][1]
    except DBusErrorResponse as error:
        return "ERROR " + error.name

session = call(service, "OpenSession", "sv", "plain", ("s", ""))[1]
command = sys.argv[1]
if command == "look":
    unlocked, locked_paths = call(service, "SearchItems", "a{ss}", json.loads(sys.argv[2]))
    paths = list(unlocked) + list(locked_paths)
    secrets = call(service, "GetSecrets", "aoo", paths, session)[0]
    print(json.dumps({"unlocked": list(unlocked), "locked": list(locked_paths),
                      "items": {p: {"locked": locked(p), "secret": get_secret(p, session)} for p in paths},
                      "secrets": {p: bytes(v[2]).decode() for p, v in secrets.items()}}))
elif command == "store":
    collection = DBusAddress("/org/freedesktop/secrets/aliases/default", bus_name=NAME, interface="org.freedesktop.Secret.Collection")
    properties = {"org.freedesktop.Secret.Item.Label": ("s", sys.argv[2]),
                  "org.freedesktop.Secret.Item.Attributes": ("a{ss}", json.loads(sys.argv[3]))}
    path = call(collection, "CreateItem", "a{sv}(oayays)b", properties, (session, b"", sys.argv[4].encode(), "text/plain"), True)[0]
    print(path)
elif command == "get":
    print(get_secret(sys.argv[2], session))
elif command == "peek":
    # What the caller can read of the items, without a question: Locked and GetSecrets.
    paths = json.loads(sys.argv[2])
    readable = call(service, "GetSecrets", "aoo", paths, session)[0]
    print(json.dumps({p: {"locked": locked(p), "secret": bytes(readable[p][2]).decode() if p in readable else None} for p in paths}))
elif command == "probe":
    # Every way at an item by its path, and the default collection's Items and Delete.
    path = sys.argv[2]
    def attempt(action):
        try:
            action()
            return "OK"
        except DBusErrorResponse as error:
            return error.name
    def get_property(name):
        return unwrap_msg(connection.send_and_get_reply(Properties(item(path)).get(name), timeout=120))
    def set_property(name, value):
        return unwrap_msg(connection.send_and_get_reply(Properties(item(path)).set(name, "s", value), timeout=120))
    collection = DBusAddress("/org/freedesktop/secrets/aliases/default", bus_name=NAME, interface="org.freedesktop.Secret.Collection")
    items = unwrap_msg(connection.send_and_get_reply(Properties(collection).get("Items"), timeout=120))[0][1]
    print(json.dumps({
        "Locked": attempt(lambda: get_property("Locked")), "Attributes": attempt(lambda: get_property("Attributes")),
        "Label": attempt(lambda: set_property("Label", "renamed")),
        "GetSecret": attempt(lambda: call(item(path), "GetSecret", "o", session)),
        "SetSecret": attempt(lambda: call(item(path), "SetSecret", "(oayays)", (session, b"", b"planted", "text/plain"))),
        "Delete": attempt(lambda: call(item(path), "Delete")),
        "Items": list(items),
        "DeleteCollection": attempt(lambda: call(collection, "Delete")),
    }))
elif command == "unlock":
    _, locked_paths = call(service, "SearchItems", "a{ss}", json.loads(sys.argv[2]))
    unlocked, prompt = call(service, "Unlock", "ao", list(locked_paths))
    result = {"immediately": list(unlocked)}
    if prompt != "/":
        rule = MatchRule(type="signal", interface="org.freedesktop.Secret.Prompt", member="Completed", path=prompt)
        call(message_bus, "AddMatch", "s", rule.serialise())
        with connection.filter(rule) as queue:
            call(DBusAddress(prompt, bus_name=NAME, interface="org.freedesktop.Secret.Prompt"), "Prompt", "s", "")
            signal = connection.recv_until_filtered(queue, timeout=300)
        dismissed, value = signal.body
        result["dismissed"] = dismissed
        result["completed"] = list(value[1])
    result["after"] = {p: get_secret(p, session) for p in locked_paths}
    print(json.dumps(result))
elif command == "dismiss":
    # Unlock's prompt, dismissed once LOG shows the dialog holding; then Unlock once more.
    import time
    _, locked_paths = call(service, "SearchItems", "a{ss}", json.loads(sys.argv[2]))
    _, prompt = call(service, "Unlock", "ao", list(locked_paths))
    rule = MatchRule(type="signal", interface="org.freedesktop.Secret.Prompt", member="Completed", path=prompt)
    call(message_bus, "AddMatch", "s", rule.serialise())
    prompt_object = DBusAddress(prompt, bus_name=NAME, interface="org.freedesktop.Secret.Prompt")
    with connection.filter(rule) as queue:
        call(prompt_object, "Prompt", "s", "")
        deadline = time.monotonic() + 120  # a hang guard: the dialog shows within seconds
        def holding():
            try:
                return "HOLDING" in open(sys.argv[3]).read()
            except FileNotFoundError:
                return False
        while not holding():
            assert time.monotonic() < deadline, "the access question never showed"
            time.sleep(0.05)
        call(prompt_object, "Dismiss")
        signal = connection.recv_until_filtered(queue, timeout=120)
    dismissed, value = signal.body
    # Locked and GetSecrets, which never ask (GetSecret would: a withdrawn question is no answer).
    readable = call(service, "GetSecrets", "aoo", list(locked_paths), session)[0]
    result = {"dismissed": dismissed, "completed": list(value[1]),
              "after": {p: {"locked": locked(p), "secret": p in readable} for p in locked_paths}}
    _, again = call(service, "Unlock", "ao", list(locked_paths))
    rule = MatchRule(type="signal", interface="org.freedesktop.Secret.Prompt", member="Completed", path=again)
    call(message_bus, "AddMatch", "s", rule.serialise())
    with connection.filter(rule) as queue:
        call(DBusAddress(again, bus_name=NAME, interface="org.freedesktop.Secret.Prompt"), "Prompt", "s", "")
        signal = connection.recv_until_filtered(queue, timeout=120)
    result["again"] = {"dismissed": signal.body[0], "secrets": {p: get_secret(p, session) for p in locked_paths}}
    print(json.dumps(result))
'''


class Client:
    """The client script written at `path`: each path is a program of its own."""

    def __init__(self, bus: KeywellBus, path: Path) -> None:
        self.bus = bus
        self.path = path
        path.write_text(CLIENT)

    def run(self, *args: str, prefix: list[str] | None = None, check: bool = True) -> str:
        result = subprocess.run([*(prefix or []), PYTHON, str(self.path), *args], env=self.bus.env, capture_output=True,
                                text=True, timeout=600, cwd=self.path.parent)
        if check:
            assert result.returncode == 0, f"{self.path.name} {args} exited {result.returncode}: {result.stderr}\n" \
                                           f"daemon log:\n{self.bus.daemon_log()[-3000:]}"
        return result.stdout

    def look(self, attributes: dict, prefix: list[str] | None = None) -> dict:
        return json.loads(self.run("look", json.dumps(attributes), prefix=prefix))

    def store(self, label: str, attributes: dict, secret: str, prefix: list[str] | None = None) -> str:
        return self.run("store", label, json.dumps(attributes), secret, prefix=prefix).strip()

    def get(self, path: str, prefix: list[str] | None = None) -> str:
        return self.run("get", path, prefix=prefix).strip()

    def peek(self, paths: list[str]) -> dict:
        return json.loads(self.run("peek", json.dumps(paths)))

    def probe(self, path: str, prefix: list[str] | None = None) -> dict:
        return json.loads(self.run("probe", path, prefix=prefix))

    def unlock(self, attributes: dict) -> dict:
        return json.loads(self.run("unlock", json.dumps(attributes)))

    def dismiss(self, attributes: dict, pinentry_log: Path) -> dict:
        return json.loads(self.run("dismiss", json.dumps(attributes), str(pinentry_log)))


def sandbox(bus: KeywellBus, scratch: Path, app_id: str, instance: str) -> list[str]:
    """bwrap as Flatpak runs an app: a fresh root holding /usr, the bus's folder and `scratch`
    (read-only), `/.flatpak-info` naming `app_id`, and the instance recorded as Flatpak records
    it ($XDG_RUNTIME_DIR/.flatpak/<instance>/bwrapinfo.json, written by bwrap's --info-fd).
    Returns the command prefix; the record is written by the bwrap that `recorded` wraps."""
    info = scratch / f"flatpak-info-{app_id}"
    info.write_text(flatpak_info(app_id, instance))
    folder = bus.runtime / ".flatpak" / instance
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / "bwrapinfo.json"
    # The shell opens the record as fd 9 for bwrap's --info-fd, then runs bwrap in its place.
    return ["/bin/sh", "-c", f'exec 9>"{record}"; exec "$@"', "sh",
            "bwrap", "--info-fd", "9", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev",
            "--bind", str(bus.runtime), str(bus.runtime), "--ro-bind", str(scratch), str(scratch),
            "--ro-bind", str(info), "/.flatpak-info", "--chdir", str(scratch), "--"]


def confirms(session) -> list[str]:
    """The questions the scripted pinentry was asked (its CONFIRM lines)."""
    return [line for line in session.pinentry_lines() if line.startswith("CONFIRM")]


def descriptions(session) -> list[str]:
    """The words of those questions (their SETDESC lines)."""
    return [line for line in session.pinentry_lines() if line.startswith("SETDESC")]


@pytest.fixture
def scratch(session):
    """A folder of the test user's own for the client scripts (their identity is the script)."""
    folder = session.root / "scratch"
    folder.mkdir(mode=0o700)
    session.owner.give(folder)
    return folder
