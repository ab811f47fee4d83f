"""The Secret Service of keywelld through clients others wrote: secret-tool (libsecret), python
secretstorage and keyring, python-dbus, dbus-monitor. Each test has its own private bus on which
keywelld is D-Bus activated, with temp HOME/XDG folders and a scripted pinentry.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import threading
import time

import dbus
import pytest
import secretstorage

from secret_service_helpers import DH, LOGIN_PASSWORD, SECRETS, SERVICE_PATH, KeywellBus, session  # noqa: F401
from keywell_helpers import bodies_as_test_user
from security_figures import record

LOGIN = "/org/freedesktop/secrets/collection/login"


# ------------------------------------------------------------------------------------ secret-tool


def test_secret_tool_store_lookup_search_clear(session):
    session.create_login()
    session.secret_tool("store", "--label=Mail password", "service", "imap", "user", "bob", input="hunter2", check=True)
    session.secret_tool("store", "--label=Other", "service", "imap", "user", "carol", input="other", check=True)

    assert session.secret_tool("lookup", "service", "imap", "user", "bob").stdout == b"hunter2"
    search = session.secret_tool("search", "--all", "service", "imap")
    text = search.stdout.decode() + search.stderr.decode()
    assert "label = Mail password" in text and "label = Other" in text
    assert "attribute.user = bob" in text and "secret = hunter2" in text

    # store again with the same attributes replaces (libsecret asks replace=true).
    session.secret_tool("store", "--label=Mail password", "service", "imap", "user", "bob", input="changed", check=True)
    assert session.secret_tool("lookup", "service", "imap", "user", "bob").stdout == b"changed"
    assert session.secret_tool("search", "--all", "service", "imap").stdout.decode().count("label = ") == 2

    session.secret_tool("clear", "service", "imap", "user", "bob", check=True)
    assert session.secret_tool("lookup", "service", "imap", "user", "bob").returncode != 0
    assert session.secret_tool("lookup", "service", "imap", "user", "carol").stdout == b"other"


def test_secret_tool_creates_the_default_collection_through_a_prompt(session):
    # No keychain at all: libsecret asks for CreateCollection("Default keyring", alias default).
    session.pinentry_answers("new-keychain-pw")
    session.secret_tool("store", "--label=first", "app", "x", input="s1", check=True)
    assert session.secret_tool("lookup", "app", "x").stdout == b"s1"
    native = session.native()
    assert str(native.GetDefaultKeychain()) == "Default keyring"
    assert [str(n) for n in native.GetSearchList()] == ["Default keyring"]
    assert any("SETREPEAT" in line for line in session.pinentry_lines())
    native.Lock("Default keyring")
    native.Unlock("Default keyring", dbus.ByteArray(b"new-keychain-pw"))
    # The new default did not turn the never-set search list into a set one: it still follows the default.
    native.CreateKeychain("other", dbus.ByteArray(b"other-pw"))
    native.SetDefaultKeychain("other")
    assert [str(n) for n in native.GetSearchList()] == ["other"]


# ------------------------------------------------------------------------------------ secretstorage


def test_secretstorage_dh_session(session):
    session.create_login()
    connection = session.jeepney()
    from secretstorage.util import open_session
    assert open_session(connection).encrypted, "secretstorage negotiated the DH algorithm"

    collection = secretstorage.get_default_collection(connection)
    assert collection.collection_path == "/org/freedesktop/secrets/aliases/default"
    assert collection.get_label() == "login" and not collection.is_locked()
    item = collection.create_item("Note", {"app": "notes", "id": "1"}, b"\x00binary\xff", content_type="application/octet-stream")
    assert item.item_path.startswith(LOGIN + "/")
    assert item.get_secret() == b"\x00binary\xff"
    assert item.get_secret_content_type() == "application/octet-stream"
    item.set_label("Renamed")
    item.set_attributes({"app": "notes", "id": "2"})
    found = list(secretstorage.search_items(connection, {"id": "2"}))
    assert [i.item_path for i in found] == [item.item_path]
    assert found[0].get_label() == "Renamed"
    assert time.time() - 60 < item.get_created() <= time.time() + 1
    item.set_secret(b"new")
    assert item.get_secret() == b"new"
    item.delete()
    assert list(collection.search_items({"app": "notes"})) == []

    paths = [c.collection_path for c in secretstorage.get_all_collections(connection)]
    assert LOGIN in paths and "/org/freedesktop/secrets/collection/session" in paths


def test_secretstorage_create_and_delete_collection(session):
    session.create_login()
    connection = session.jeepney()
    session.pinentry_answers("project-pw")
    collection = secretstorage.create_collection(connection, "Project keys")
    assert collection.collection_path == "/org/freedesktop/secrets/collection/Project_20keys"
    assert collection.get_label() == "Project keys"
    collection.create_item("k", {"k": "v"}, b"value")
    assert "Project keys" in [str(k) for k in session.native().ListKeychains()]
    collection.delete()
    assert "Project keys" not in [str(k) for k in session.native().ListKeychains()]


def test_plain_session_through_python_dbus(session):
    session.create_login()
    bus = session.dbus()
    service = dbus.Interface(bus.get_object(SECRETS, SERVICE_PATH), "org.freedesktop.Secret.Service")
    output, path = service.OpenSession("plain", dbus.String("", variant_level=1))
    collection = dbus.Interface(bus.get_object(SECRETS, "/org/freedesktop/secrets/aliases/default"),
                                "org.freedesktop.Secret.Collection")
    props = {"org.freedesktop.Secret.Item.Label": dbus.String("plain item", variant_level=1),
             "org.freedesktop.Secret.Item.Attributes": dbus.Dictionary({"p": "1"}, signature="ss", variant_level=1)}
    secret = dbus.Struct((path, dbus.ByteArray(b""), dbus.ByteArray(b"in the clear"), "text/plain"), signature="oayays")
    item_path, prompt = collection.CreateItem(props, secret, True)
    assert prompt == "/"
    item = dbus.Interface(bus.get_object(SECRETS, item_path), "org.freedesktop.Secret.Item")
    got = item.GetSecret(path)
    assert bytes(got[2]) == b"in the clear" and bytes(got[1]) == b""
    with pytest.raises(dbus.DBusException) as error:
        service.OpenSession("blowfish", dbus.String("", variant_level=1))
    assert error.value.get_dbus_name() == "org.freedesktop.DBus.Error.NotSupported"
    with pytest.raises(dbus.DBusException) as error:
        dbus.Interface(bus.get_object(SECRETS, LOGIN + "/" + "0" * 32), "org.freedesktop.Secret.Item").GetSecret(path)
    # gnome-keyring's answer on a missing object, the one clients read as "not found".
    assert error.value.get_dbus_name() == "org.freedesktop.DBus.Error.UnknownMethod"


def test_a_known_callers_reads_stay_on_the_io_thread(session):
    # A client that only reads an alias is never asked who it is by a handler: its identity is
    # still worked out on its first call, so that its later reads are not each handed to a worker.
    session.create_login()
    bus = session.dbus()
    service = dbus.Interface(bus.get_object(SECRETS, SERVICE_PATH), "org.freedesktop.Secret.Service")
    calls = 6
    for _ in range(calls):
        assert str(service.ReadAlias("default")) == LOGIN
    me = bus.get_unique_name()
    pattern = re.compile(r"secrets ReadAlias \S+: ok .*caller=(\S+).*thread=(\w+)|secrets ReadAlias \S+: ok .*thread=(\w+).*caller=(\S+)")

    def threads() -> list[str]:
        found = []
        for line in session.daemon_log().splitlines():
            match = pattern.search(line)
            if match and me in (match.group(1), match.group(4)):
                found.append(match.group(2) or match.group(3))
        return found

    _wait(lambda: len(threads()) == calls)
    placed = threads()
    # Only the first call, whose caller was still unknown, went to a worker. Counted rather than
    # ordered: a call's line is logged once its reply has gone, so the worker's line may come
    # after the next call's, which the client sent as soon as it had the reply.
    assert placed.count("worker") == 1 and placed.count("io") == calls - 1, placed


def test_secretstorage_raises_item_not_found_for_deleted_and_missing_items(session):
    session.create_login()
    connection = session.jeepney()
    collection = secretstorage.get_default_collection(connection)
    item = collection.create_item("Gone soon", {"app": "deleted"}, b"s")
    path = item.item_path
    item.delete()
    for call in (item.delete, item.get_secret, item.get_label, item.get_attributes):
        with pytest.raises(secretstorage.exceptions.ItemNotFoundException):
            call()
    for missing in (path, "/not/existing/path", "/org/freedesktop/secrets/collection/nope/1"):
        with pytest.raises(secretstorage.exceptions.ItemNotFoundException):
            secretstorage.Item(connection, missing)
    with pytest.raises(secretstorage.exceptions.ItemNotFoundException):
        secretstorage.Collection(connection, "/org/freedesktop/secrets/collection/nope")


def test_malformed_calls_are_refused_with_invalid_args(session):
    """Sent with python-dbus, which marshals whatever it is given: a Label nested 32 variants
    deep, Introspect with an argument, methods with the wrong signature."""
    session.create_login()
    bus = session.dbus()
    _, plain = bus.call_blocking(SECRETS, SERVICE_PATH, "org.freedesktop.Secret.Service", "OpenSession", "sv",
                                 ("plain", dbus.String("", variant_level=1)))
    secret = dbus.Struct((plain, dbus.ByteArray(b""), dbus.ByteArray(b"pw"), "text/plain"))

    def refused(path, interface, member, signature, arguments):
        with pytest.raises(dbus.DBusException) as error:
            bus.call_blocking(SECRETS, path, interface, member, signature, arguments, timeout=20)
        assert error.value.get_dbus_name() == "org.freedesktop.DBus.Error.InvalidArgs", (member, signature)

    nested = dbus.Dictionary({"org.freedesktop.Secret.Item.Label": dbus.String("deep", variant_level=32),
                              "org.freedesktop.Secret.Item.Attributes":
                                  dbus.Dictionary({"app": "nested"}, signature="ss", variant_level=1)}, signature="sv")
    refused(LOGIN, "org.freedesktop.Secret.Collection", "CreateItem", "a{sv}(oayays)b", (nested, secret, False))
    assert list(secretstorage.search_items(session.jeepney(), {"app": "nested"})) == []
    refused(SERVICE_PATH, "org.freedesktop.DBus.Introspectable", "Introspect", "s", ("x",))
    refused(LOGIN, "org.freedesktop.DBus.Introspectable", "Introspect", "s", ("x",))
    refused(SERVICE_PATH, "org.freedesktop.DBus.Properties", "Get", "s", ("org.freedesktop.Secret.Service",))
    refused(SERVICE_PATH, "org.freedesktop.Secret.Service", "SearchItems", "a{sv}", (dbus.Dictionary({}, signature="sv"),))
    refused(SERVICE_PATH, "org.freedesktop.Secret.Service", "GetSecrets", "ao", (dbus.Array([], signature="o"),))
    refused(LOGIN, "org.freedesktop.Secret.Collection", "CreateItem", "a{sv}(oayays)", (nested, secret))
    refused(LOGIN, "org.freedesktop.Secret.Collection", "Delete", "b", (True,))
    # Still there, unchanged.
    assert bus.call_blocking(SECRETS, LOGIN, "org.freedesktop.DBus.Properties", "Get", "ss",
                             ("org.freedesktop.Secret.Collection", "Locked")) == 0


# ------------------------------------------------------------------------------------ keyring


def test_keyring_library(session):
    session.create_login()
    with session.environment():
        from keyring.backends import SecretService
        ring = SecretService.Keyring()
        ring.set_password("my-app", "alice", "s3cr3t")
        assert ring.get_password("my-app", "alice") == "s3cr3t"
        ring.set_password("my-app", "alice", "updated")
        assert ring.get_password("my-app", "alice") == "updated"
        credential = ring.get_credential("my-app", None)
        assert credential is not None and credential.username == "alice"
        ring.delete_password("my-app", "alice")
        assert ring.get_password("my-app", "alice") is None


# ------------------------------------------------------------------------------------ locked


def test_locked_login_is_unlocked_through_the_prompt(session):
    session.create_login()
    session.secret_tool("store", "--label=L", "service", "locked-svc", input="behind-lock", check=True)
    session.native().Lock("login")

    # Attributes stay readable: the item shows as locked, not as missing.
    connection = session.jeepney()
    found = list(secretstorage.search_items(connection, {"service": "locked-svc"}))
    assert len(found) == 1 and found[0].is_locked()

    session.pinentry_answers("not-it", LOGIN_PASSWORD)
    result = session.secret_tool("lookup", "service", "locked-svc")
    assert result.stdout == b"behind-lock", result.stderr
    lines = session.pinentry_lines()
    assert sum(line == "GETPIN" for line in lines) == 2
    assert any(line.startswith("SETERROR") for line in lines)
    assert any(line.startswith("SETDESC") and "login" in line for line in lines)
    assert LOGIN_PASSWORD not in session.daemon_log()


def test_dismissed_unlock(session):
    session.create_login()
    session.secret_tool("store", "--label=L", "service", "x", input="v", check=True)
    session.native().Lock("login")
    connection = session.jeepney()
    collection = secretstorage.get_default_collection(connection)
    assert collection.is_locked()
    session.pinentry_answers(None)  # the person presses Cancel
    assert collection.unlock() is True, "secretstorage reports dismissed"
    assert collection.is_locked()
    assert session.secret_tool("lookup", "service", "x").returncode != 0
    session.pinentry_answers(LOGIN_PASSWORD)
    assert collection.unlock() is False
    assert not collection.is_locked()
    collection.lock()
    assert collection.is_locked()


# ------------------------------------------------------------------------------------ three faces


def test_one_item_through_all_three_faces(session):
    # Three programs share the items: about the faces, not access control.
    session.create_login(enforce_access=False)
    session.secret_tool("store", "--label=Shared", "service", "shared-svc", "account", "dana", input="from-secret-tool",
                        check=True)
    native = session.native()
    found = native.CopyMatching({"class": "genp", "svce": "shared-svc", "acct": "dana",
                                 "r_Data": True, "r_Attributes": True})
    assert bytes(found[0]["v_Data"]) == b"from-secret-tool"
    assert str(found[0]["labl"]) == "Shared"

    # The CLI too, when the test runner built it (KEYWELL).
    cli = os.environ.get("KEYWELL")
    if cli and os.access(cli, os.X_OK):
        result = session.run([cli, "find-generic-password", "-s", "shared-svc", "-a", "dana", "-w"])
        assert result.returncode == 0 and result.stdout.strip() == b"from-secret-tool", result.stderr

    native.Add({"class": "genp", "svce": "native-svc", "acct": "erin", "labl": "Native",
                "v_Data": dbus.ByteArray(b"from-native")})
    assert session.secret_tool("lookup", "service", "native-svc", "account", "erin").stdout == b"from-native"
    native.Add({"class": "inet", "srvr": "git.example.com", "acct": "frank", "ptcl": "htps",
                "v_Data": dbus.ByteArray(b"inet-secret")})
    assert session.secret_tool("lookup", "server", "git.example.com", "protocol", "https").stdout == b"inet-secret"
    search = session.secret_tool("search", "xdg:schema", "org.keywell.internet-password")
    assert "attribute.user = frank" in search.stdout.decode() + search.stderr.decode()  # secret-tool puts attributes on stderr

    # secret-tool clear removes native items too (one item, one record).
    session.secret_tool("clear", "service", "native-svc", "account", "erin", check=True)
    with pytest.raises(dbus.DBusException):
        native.CopyMatching({"class": "genp", "svce": "native-svc"})


# ------------------------------------------------------------------------------------ on the wire


class _Monitor:
    """dbus-monitor on the session's bus. Started once it is a monitor (the bus then takes its
    name away: NameLost), stopped once a marker call sent after everything else has shown up,
    so the transcript holds every message in between, with no sleep to guess how long that takes."""

    def __init__(self, session: KeywellBus) -> None:
        self.session = session
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.process = subprocess.Popen(["dbus-monitor", "--address", session.address], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=session.env, text=True, errors="replace")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        assert self._wait_for("member=NameLost"), "dbus-monitor never became a monitor"

    def _read(self) -> None:
        for line in self.process.stdout:
            with self.changed:
                self.lines.append(line)
                self.changed.notify_all()

    def _wait_for(self, text: str, timeout: float = 30) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: any(text in line for line in self.lines), timeout)

    def stop(self) -> str:
        marker = f"keywell.monitor.marker.{secrets.token_hex(8)}"
        subprocess.run(["dbus-send", f"--address={self.session.address}", "--print-reply", "--dest=org.freedesktop.DBus",
                        "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", f"string:{marker}"],
                       env=self.session.env, capture_output=True, timeout=30)
        seen = self._wait_for(marker)
        self.process.terminate()
        self.process.wait(timeout=10)
        self.reader.join(10)
        assert seen, "the marker call never reached dbus-monitor"
        with self.changed:
            return "".join(self.lines)


def _occurrences(secret: bytes, transcript: str) -> int:
    """How often the secret shows in dbus-monitor's output, as text or as its byte dump."""
    hex_form = " ".join(f"{b:02x}" for b in secret)
    return transcript.count(secret.decode()) + re.sub(r"\s+", " ", transcript).count(hex_form)


def test_dh_session_secrets_never_cross_the_bus_in_clear(session):
    # secret-tool stores, this process reads: about the wire, not access control.
    session.create_login(enforce_access=False)
    session.native()  # activate before watching
    secret = b"wire-secret-5821"
    monitor = _Monitor(session)
    session.secret_tool("store", "--label=W", "wire", "1", input=secret.decode(), check=True)
    assert session.secret_tool("lookup", "wire", "1").stdout == secret
    connection = session.jeepney()
    item = next(secretstorage.search_items(connection, {"wire": "1"}))
    assert item.get_secret() == secret
    transcript = monitor.stop()
    negotiated = DH in transcript and "CreateItem" in transcript and "GetSecrets" in transcript
    seen = _occurrences(secret, transcript)

    # The control: a plain session does show it, so the monitor saw everything.
    monitor = _Monitor(session)
    bus = session.dbus()
    service = dbus.Interface(bus.get_object(SECRETS, SERVICE_PATH), "org.freedesktop.Secret.Service")
    _, path = service.OpenSession("plain", dbus.String("", variant_level=1))
    service.GetSecrets([item.item_path], path)
    control = _occurrences(secret, monitor.stop())

    record("dbus-monitor on the bus while secret-tool (libsecret) and python secretstorage store and read a secret "
           "over DH sessions", f"the secret appears {seen}× in {len(transcript.splitlines())} lines of monitor output "
           f"(DH negotiated, CreateItem and GetSecrets seen: {'yes' if negotiated else 'no'}); "
           f"control, the same secret read over a plain session: {control}×", "0 (control > 0)",
           seen == 0 and control > 0 and negotiated)
    assert DH in transcript, "the clients negotiated the DH session"
    assert "CreateItem" in transcript and "GetSecrets" in transcript
    assert seen == 0
    assert control > 0


# ------------------------------------------------------------------------------------ the name


def test_another_owner_is_named_and_replace_takes_the_name():
    bus = KeywellBus(activate=False)
    holder = None
    keywelld = None
    try:
        # A stand-in Secret Service that allows replacement, like keywelld itself does.
        holder = subprocess.Popen(["/usr/bin/python3", "-c", """
from jeepney import MatchRule, message_bus
from jeepney.io.blocking import open_dbus_connection
connection = open_dbus_connection(bus="SESSION")
reply = connection.send_and_get_reply(message_bus.RequestName("org.freedesktop.secrets", 1))  # allow replacement
print(reply.body[0], flush=True)
with connection.filter(MatchRule(member="NameLost")) as lost:
    print("lost", connection.recv_until_filtered(lost).body[0], flush=True)
"""], stdout=subprocess.PIPE, env=bus.env, text=True)
        assert holder.stdout.readline().strip() == "1"
        keywelld = subprocess.Popen([str(bus.wrapper)], env=bus.env)
        connection = bus.dbus()
        _wait(lambda: connection.name_has_owner("org.keywell.Keychain"))
        _wait(lambda: "waits for the name" in bus.daemon_log())
        log = bus.daemon_log()
        assert "org.freedesktop.secrets is owned by /usr/bin/python3" in log and "keywelld --replace" in log
        keywelld.terminate()
        keywelld.wait(timeout=10)

        bus.daemon_args = "--replace"
        bus._write_wrapper()
        keywelld = subprocess.Popen([str(bus.wrapper)], env=bus.env)
        assert holder.stdout.readline().strip() == "lost org.freedesktop.secrets"
        _wait(lambda: "took over org.freedesktop.secrets" in bus.daemon_log())
        # keywelld claims its own name last, once everything it serves is in place.
        _wait(lambda: connection.name_has_owner("org.keywell.Keychain"))
        owner = connection.get_name_owner(SECRETS)
        assert owner == connection.get_name_owner("org.keywell.Keychain")
    finally:
        for process in (holder, keywelld):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(timeout=10)
        bus.close()


def test_gnome_keyring_owner_is_named():
    if subprocess.run(["which", "gnome-keyring-daemon"], capture_output=True).returncode != 0:
        pytest.fail("gnome-keyring-daemon is missing: run scripts/setup.sh")
    bus = KeywellBus(activate=False)
    gnome = None
    keywelld = None
    try:
        gnome = subprocess.Popen(["gnome-keyring-daemon", "--foreground", "--components=secrets", "--unlock"],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=bus.env)
        gnome.stdin.write(b"gk-password")
        gnome.stdin.close()
        connection = bus.dbus()
        _wait(lambda: connection.name_has_owner(SECRETS))
        keywelld = subprocess.Popen([str(bus.wrapper)], env=bus.env)
        _wait(lambda: "waits for the name" in bus.daemon_log())
        assert "org.freedesktop.secrets is owned by /usr/bin/gnome-keyring-daemon" in bus.daemon_log()
        _wait(lambda: connection.name_has_owner("org.keywell.Keychain"))
        # The native API still works.
        bus.create_login()
        # When gnome-keyring goes, the queue hands the name over.
        gnome.terminate()
        gnome.wait(timeout=10)
        _wait(lambda: "now owning org.freedesktop.secrets" in bus.daemon_log())
        assert connection.get_name_owner(SECRETS) == connection.get_name_owner("org.keywell.Keychain")
    finally:
        for process in (gnome, keywelld):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(timeout=10)
        bus.close()


def _wait(condition, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


# Every test here is a client of keywelld from this process: each body runs as the test user.
bodies_as_test_user(globals())
