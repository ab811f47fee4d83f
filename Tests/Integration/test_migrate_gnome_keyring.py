"""Migration from the real gnome-keyring-daemon (docs/migration.md): keyrings it wrote with
items stored by secret-tool, python keyring and git-credential-libsecret, imported by
`keywell migrate` (and, in test_migrate_gnome_keyring_login.py, at a real PAM login), then the
same lookups against keywelld; a plaintext keyring, a second named keyring, the `default` file,
re-runs that import nothing new, source files byte-identical; and the way back through
`keywell export --format gnome-keyring` opened by a fresh gnome-keyring-daemon.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gnome_keyring_helpers import (KEYRING_GET, KEYRING_SET, GnomeKeyring, git_credential_libsecret,
                                   tree_digest)
from keywell_helpers import bodies_as_test_user, built, user_tmp  # noqa: F401 (user_tmp: a fixture)
from secret_service_helpers import KeywellBus

LOGIN_PW = "gk-login-pw"
WORK_PW = "gk-work-pw"
OPEN_NEW_PW = "open-keychain-pw"
GENERIC = "org.freedesktop.Secret.Generic"
GIT_REQUEST = "protocol=https\nhost=git.example.com\nusername=carol\n\n"


def keywell() -> str:
    return built("KEYWELL", "keywell")


def fill_gnome_keyring(bus: KeywellBus, gk: GnomeKeyring) -> dict:
    """The items of the tests, stored the way each client stores them. Returns the collection paths."""
    bus.secret_tool("store", "--label", "My app", "service", "myapp", "account", "alice", input="app-secret", check=True)
    gk.python(KEYRING_SET, "pysvc", "bob", input="py-secret")
    bus.run([git_credential_libsecret(), "store"], input=GIT_REQUEST.rstrip("\n") + "\npassword=git-secret\n\n", check=True)
    work = gk.create_collection("work", WORK_PW)
    gk.store(work, "Work VPN", {"service": "vpn", "account": "dave"}, "vpn-secret")
    opened = gk.create_collection("open", "")
    gk.store(opened, "Open note", {"service": "note", "account": "erin"}, "note-secret")
    return {"work": work, "open": opened}


def lookups(bus: KeywellBus) -> dict:
    """What each client finds, with nothing asked (no terminal, no prompter)."""
    keyring = bus.run(["/usr/bin/python3", "-c", KEYRING_GET, "pysvc", "bob"])
    git = bus.run(["git", "-c", f"credential.helper={git_credential_libsecret()}", "credential", "fill"],
                  input=GIT_REQUEST, env={"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/false"})
    return {
        "secret-tool": bus.secret_tool("lookup", "service", "myapp", "account", "alice").stdout.decode(),
        "keyring": keyring.stdout.decode().strip(),
        "git": dict(line.split("=", 1) for line in git.stdout.decode().splitlines() if "=" in line).get("password"),
        "work": bus.secret_tool("lookup", "service", "vpn", "account", "dave").stdout.decode(),
        "open": bus.secret_tool("lookup", "service", "note", "account", "erin").stdout.decode(),
    }


EXPECTED = {"secret-tool": "app-secret", "keyring": "VALUE=py-secret", "git": "git-secret", "work": "vpn-secret",
            "open": "note-secret"}


@pytest.fixture
def bus():
    session = KeywellBus(activate=False)
    try:
        yield session
    finally:
        session.close()


def test_keywell_migrate_brings_every_keyring_over_and_the_export_goes_back(bus, user_tmp):
    gk = GnomeKeyring(bus.env, LOGIN_PW)
    try:
        paths = fill_gnome_keyring(bus, gk)
        gk.set_default(paths["work"])
    finally:
        gk.stop()
    # gnome-keyring's own answers from its files (a restart reads them), to compare Keywell's with.
    gk = GnomeKeyring(bus.env, LOGIN_PW)
    try:
        gk.unlock(paths["work"], WORK_PW)
        assert lookups(bus) == EXPECTED
        items_in_gnome_keyring = every_item(bus)
    finally:
        gk.stop()
    keyrings = bus.home / ".local/share/keyrings"
    assert (keyrings / "open.keyring").read_bytes().startswith(b"[keyring]"), "an empty password is the plaintext format"
    assert (keyrings / "login.keyring").read_bytes().startswith(b"GnomeKeyring\n\r\x00\n\x00\x00")
    assert (keyrings / "default").read_text().strip() == "work"
    before = tree_digest(keyrings)

    bus.install_activation()
    # One line of standard input per password asked: login's, the new keychain `open`'s, work's.
    run = bus.run([keywell(), "migrate"], input=f"{LOGIN_PW}\n{OPEN_NEW_PW}\n{WORK_PW}\n", timeout=120)
    out = run.stdout.decode()
    assert run.returncode == 0, f"{out}\n{run.stderr.decode()}\n{bus.daemon_log()[-3000:]}"
    assert "login.keyring → login: imported (3 added, 0 updated, 0 unchanged)" in out, out
    assert "open.keyring → open: imported (1 added" in out, out
    assert "work.keyring → work: imported (1 added" in out, out
    assert LOGIN_PW not in bus.daemon_log() and "app-secret" not in bus.daemon_log()

    assert lookups(bus) == EXPECTED
    assert bus.native().GetDefaultKeychain() == "work", "gnome-keyring's default file names work"

    # Every item as gnome-keyring showed it: label, attributes, secret, content type, created and
    # modified times. One difference, on purpose (docs/migration.md): gnome-keyring shows the
    # implicit schema of an item stored without one as an `xdg:schema` attribute it does not
    # keep (a store with the same attributes replaces the item); Keywell keeps it as the type.
    in_keywell = every_item(bus)
    by_label = {item["label"]: item for item in in_keywell}
    for item in items_in_gnome_keyring:
        if item["attributes"].get("xdg:schema") == GENERIC and "xdg:schema" not in by_label[item["label"]]["attributes"]:
            del item["attributes"]["xdg:schema"]
    assert sum("xdg:schema" in item["attributes"] for item in in_keywell) >= 1, "git's own schema stays an attribute"
    assert in_keywell == items_in_gnome_keyring

    # A second run imports nothing and asks nothing.
    again = bus.run([keywell(), "migrate"], input="")
    assert again.returncode == 0, again.stderr.decode()
    assert again.stdout.decode().count(": unchanged (0 added, 0 updated") == 3, again.stdout.decode()
    status = bus.run([keywell(), "migrate", "--status"], check=True).stdout.decode()
    assert "login.keyring (gnome-keyring) → keychain login: 3 items" in status, status
    assert "open.keyring (gnome-keyring-plaintext) → keychain open: 1 items" in status, status
    assert tree_digest(keyrings) == before, "the source files must never change"
    state = bus.home / ".local/share/keywell/migration.json"
    assert state.stat().st_mode & 0o777 == 0o600
    assert b"app-secret" not in state.read_bytes()

    # The way back: the export opens in a fresh gnome-keyring as its login keyring.
    exported = user_tmp / "login.keyring"
    back = bus.run([keywell(), "export", "--format", "gnome-keyring", "-k", "login", str(exported)], input="back-pw\n")
    assert back.returncode == 0, back.stderr.decode()
    assert exported.stat().st_mode & 0o777 == 0o600
    written = exported.read_bytes()
    refused = bus.run([keywell(), "export", "--format", "gnome-keyring", "-k", "login", str(exported)], input="other\n")
    assert refused.returncode != 0 and exported.read_bytes() == written, "an existing file is kept without -f"
    fresh = KeywellBus(activate=False)
    try:
        folder = fresh.home / ".local/share/keyrings"
        folder.mkdir(parents=True)
        shutil.copy(exported, folder / "login.keyring")
        gk2 = GnomeKeyring(fresh.env, "back-pw")
        try:
            found = lookups(fresh)
        finally:
            gk2.stop()
        assert {k: found[k] for k in ("secret-tool", "keyring", "git")} == \
            {k: EXPECTED[k] for k in ("secret-tool", "keyring", "git")}
    finally:
        fresh.close()


EVERY_ITEM = r'''
import json, secretstorage
connection = secretstorage.dbus_init()
found = []
for collection in secretstorage.get_all_collections(connection):
    for item in collection.get_all_items():
        found.append({"label": item.get_label(), "attributes": item.get_attributes(),
                      "secret": item.get_secret().decode(), "type": item.get_secret_content_type(),
                      "created": item.get_created(), "modified": item.get_modified()})
print(json.dumps(sorted(found, key=lambda i: i["label"])))
'''


def every_item(bus: KeywellBus) -> list:
    run = bus.run(["/usr/bin/python3", "-c", EVERY_ITEM], check=True)
    return json.loads(run.stdout.decode())


def test_wrong_password_is_said_and_nothing_changes(bus):
    gk = GnomeKeyring(bus.env, LOGIN_PW)
    try:
        bus.secret_tool("store", "--label", "My app", "service", "myapp", "account", "alice", input="app-secret", check=True)
    finally:
        gk.stop()
    keyrings = bus.home / ".local/share/keyrings"
    before = tree_digest(keyrings)
    bus.install_activation()
    run = bus.run([keywell(), "migrate", "--keyring", "login"], input="not-the-password\n")
    assert run.returncode != 0
    assert "wrong password for keyring login" in run.stdout.decode() + run.stderr.decode()
    assert bus.secret_tool("lookup", "service", "myapp", "account", "alice").stdout == b""
    assert tree_digest(keyrings) == before
    # Then the right one.
    ok = bus.run([keywell(), "migrate", "--keyring", "login"], input=f"{LOGIN_PW}\n")
    assert ok.returncode == 0, ok.stdout.decode() + ok.stderr.decode()
    assert bus.secret_tool("lookup", "service", "myapp", "account", "alice").stdout == b"app-secret"


def test_libsecret_file_written_by_libsecret_itself(bus):
    """libsecret's file backend (the v1 format oo7 uses), written by the real libsecret."""
    v1 = bus.home / ".local/share/keyrings/v1"
    v1.mkdir(parents=True)
    writer = subprocess.run(["/usr/bin/python3", "-c", LIBSECRET_STORE], capture_output=True, text=True, env={
        **bus.env, "SECRET_BACKEND": "file", "SECRET_FILE_TEST_PATH": str(v1 / "login.keyring"),
        "SECRET_FILE_TEST_PASSWORD": LOGIN_PW}, timeout=60)
    assert writer.returncode == 0, writer.stderr
    before = tree_digest(v1)
    bus.install_activation()
    run = bus.run([keywell(), "migrate"], input=f"{LOGIN_PW}\n")
    assert run.returncode == 0, run.stdout.decode() + run.stderr.decode() + bus.daemon_log()[-2000:]
    assert "v1/login.keyring → login: imported (2 added" in run.stdout.decode()
    assert bus.secret_tool("lookup", "service", "oo7app", "account", "frank").stdout == b"v1-secret"
    assert bus.secret_tool("lookup", "service", "oo7app", "account", "gina").stdout == "ünïcode".encode()
    assert tree_digest(v1) == before


LIBSECRET_STORE = r'''
import gi
gi.require_version("Secret", "1")
from gi.repository import Secret
schema = Secret.Schema.new("org.example.Oo7App", Secret.SchemaFlags.NONE,
                           {"service": Secret.SchemaAttributeType.STRING, "account": Secret.SchemaAttributeType.STRING})
assert Secret.password_store_sync(schema, {"service": "oo7app", "account": "frank"}, None, "frank", "v1-secret", None)
assert Secret.password_store_sync(schema, {"service": "oo7app", "account": "gina"}, None, "gina", "ünïcode", None)
'''


def stop_keywelld(bus: KeywellBus) -> None:
    """keywelld exits (SIGTERM) so gnome-keyring can own org.freedesktop.secrets again."""
    import os
    import signal
    import time
    for pid in bus.keywelld_pids():
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while bus.keywelld_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not bus.keywelld_pids()


def next_second(after: float) -> None:
    """Item times have whole seconds: the next change must fall in a later one."""
    import time
    while time.time() < after + 1.2:
        time.sleep(0.05)


def test_a_change_in_gnome_keyring_is_imported_unless_keywell_changed_it_later(bus):
    import time
    store = ["store", "--label", "My app", "service", "myapp", "account", "alice"]
    gk = GnomeKeyring(bus.env, LOGIN_PW)
    try:
        bus.secret_tool(*store, input="v1", check=True)
        bus.secret_tool("store", "--label", "Other", "service", "other", "account", "olga", input="o1", check=True)
    finally:
        gk.stop()
    bus.install_activation()
    first = bus.run([keywell(), "migrate"], input=f"{LOGIN_PW}\n", check=True).stdout.decode()
    assert "imported (2 added, 0 updated, 0 unchanged)" in first, first

    # Back in gnome-keyring: both items change.
    stop_keywelld(bus)
    next_second(time.time() - 1)
    gk = GnomeKeyring(bus.env, LOGIN_PW)
    try:
        bus.secret_tool(*store, input="v2", check=True)
        bus.secret_tool("store", "--label", "Other", "service", "other", "account", "olga", input="o2", check=True)
    finally:
        gk.stop()
    changed_at = time.time()
    # Then, in Keywell, the user changes one of them later still.
    next_second(changed_at)
    import dbus
    bus.native().Unlock("login", dbus.ByteArray(LOGIN_PW.encode()))
    bus.secret_tool("store", "--label", "Other", "service", "other", "account", "olga", input="o3-keywell", check=True)

    second = bus.run([keywell(), "migrate"], input=f"{LOGIN_PW}\n", check=True).stdout.decode()
    assert "imported (0 added, 1 updated, 1 unchanged)" in second, second
    assert bus.secret_tool("lookup", "service", "myapp", "account", "alice").stdout == b"v2"
    assert bus.secret_tool("lookup", "service", "other", "account", "olga").stdout == b"o3-keywell"
    found = bus.secret_tool("search", "--all", "service", "myapp").stdout.decode()
    assert found.count("label = My app") == 1, found


# These tests call keywelld from this process and plant files as the user: each body runs as the test user.
bodies_as_test_user(globals())
