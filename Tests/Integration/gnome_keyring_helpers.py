"""The real gnome-keyring-daemon and the clients that store into it, for the migration tests:
the daemon on a private bus with the test's HOME/XDG folders (password on stdin with
--unlock), collections made without a prompt through its internal interface (the same one
seahorse's and gnome-keyring's own tests use), and git-credential-libsecret built from the
source Debian's git ships.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

SECRETS = "org.freedesktop.secrets"
SERVICE_PATH = "/org/freedesktop/secrets"
INTERNAL_IFACE = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
GIT_LIBSECRET_SOURCE = Path("/usr/share/doc/git/contrib/credential/libsecret/git-credential-libsecret.c")

_built_helper: str | None = None


def git_credential_libsecret() -> str:
    """git's libsecret credential helper, compiled once per test run from Debian's copy."""
    global _built_helper
    if _built_helper and os.path.exists(_built_helper):
        return _built_helper
    if not GIT_LIBSECRET_SOURCE.exists():
        pytest.fail(f"{GIT_LIBSECRET_SOURCE} is missing: run scripts/setup.sh (package git)")
    folder = tempfile.mkdtemp(prefix="kw-gitlibsecret-")
    os.chmod(folder, 0o755)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libsecret-1", "glib-2.0"],
                           capture_output=True, text=True, check=True).stdout.split()
    out = os.path.join(folder, "git-credential-libsecret")
    subprocess.run(["gcc", "-O1", "-o", out, str(GIT_LIBSECRET_SOURCE), *flags], check=True, capture_output=True)
    _built_helper = out
    return out


class GnomeKeyring:
    """gnome-keyring-daemon --foreground --components=secrets --unlock on the bus in `env`."""

    def __init__(self, env: dict, password: str, run_as: list[str] | None = None) -> None:
        self.env = env
        self.prefix = run_as or []
        self.log = tempfile.NamedTemporaryFile(prefix="gkd-", suffix=".log", delete=False)
        self.process = subprocess.Popen(
            [*self.prefix, "gnome-keyring-daemon", "--foreground", "--components=secrets", "--unlock"],
            stdin=subprocess.PIPE, stdout=self.log, stderr=self.log, env=env)
        self.process.stdin.write(password.encode())
        self.process.stdin.close()
        self._wait_for_name()

    def _wait_for_name(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = subprocess.run([*self.prefix, "dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus",
                                "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", f"string:{SECRETS}"],
                               capture_output=True, text=True, env=self.env, timeout=30)
            if "boolean true" in r.stdout:
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        pytest.fail(f"gnome-keyring-daemon did not take {SECRETS}: {Path(self.log.name).read_text()}")

    def python(self, code: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
        r = subprocess.run([*self.prefix, "/usr/bin/python3", "-c", code, *args], input=input, capture_output=True,
                           text=True, env=self.env, timeout=60)
        assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\ngnome-keyring log:\n{Path(self.log.name).read_text()}"
        return r

    def create_collection(self, label: str, password: str) -> str:
        """A collection made with its password and no prompt; an empty password makes gnome-keyring
        keep it in its plaintext format. Returns its object path."""
        return self.python(CREATE_COLLECTION, label, input=password).stdout.strip()

    def unlock(self, collection_path: str, password: str) -> None:
        self.python(UNLOCK_COLLECTION, collection_path, input=password)

    def set_default(self, collection_path: str) -> None:
        self.python(SET_ALIAS, "default", collection_path)

    def store(self, collection_path: str, label: str, attributes: dict, secret: str) -> None:
        """One item in a given collection, through secretstorage (the Secret Service API)."""
        import json
        self.python(STORE_IN, collection_path, label, json.dumps(attributes), input=secret)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


CREATE_COLLECTION = r'''
import sys, dbus
bus = dbus.SessionBus()
service = bus.get_object("org.freedesktop.secrets", "/org/freedesktop/secrets")
_, session = service.OpenSession("plain", dbus.String("", variant_level=1),
                                 dbus_interface="org.freedesktop.Secret.Service")
password = sys.stdin.buffer.read()
internal = dbus.Interface(service, "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface")
path = internal.CreateWithMasterPassword(
    {"org.freedesktop.Secret.Collection.Label": dbus.String(sys.argv[1], variant_level=1)},
    (session, dbus.ByteArray(b""), dbus.ByteArray(password), "text/plain"))
print(path)
'''

UNLOCK_COLLECTION = r'''
import sys, dbus
bus = dbus.SessionBus()
service = bus.get_object("org.freedesktop.secrets", "/org/freedesktop/secrets")
_, session = service.OpenSession("plain", dbus.String("", variant_level=1),
                                 dbus_interface="org.freedesktop.Secret.Service")
internal = dbus.Interface(service, "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface")
internal.UnlockWithMasterPassword(dbus.ObjectPath(sys.argv[1]),
                                  (session, dbus.ByteArray(b""), dbus.ByteArray(sys.stdin.buffer.read()), "text/plain"))
'''

SET_ALIAS = r'''
import sys, dbus
bus = dbus.SessionBus()
service = dbus.Interface(bus.get_object("org.freedesktop.secrets", "/org/freedesktop/secrets"),
                         "org.freedesktop.Secret.Service")
service.SetAlias(sys.argv[1], dbus.ObjectPath(sys.argv[2]))
'''

STORE_IN = r'''
import json, sys, secretstorage
connection = secretstorage.dbus_init()
collection = secretstorage.Collection(connection, sys.argv[1])
collection.create_item(sys.argv[2], json.loads(sys.argv[3]), sys.stdin.buffer.read(), replace=True)
'''

# python keyring's Secret Service backend; the collection is named (both services call login's
# collection /org/freedesktop/secrets/collection/login), so a changed default does not move it.
KEYRING_SET = r'''
import sys, keyring
from keyring.backends.SecretService import Keyring
k = Keyring()
k.preferred_collection = "/org/freedesktop/secrets/collection/login"
k.set_password(sys.argv[1], sys.argv[2], sys.stdin.read())
'''

KEYRING_GET = r'''
import sys, keyring
from keyring.backends.SecretService import Keyring
k = Keyring()
k.preferred_collection = "/org/freedesktop/secrets/collection/login"
value = k.get_password(sys.argv[1], sys.argv[2])
print("NONE" if value is None else "VALUE=" + value)
'''


def tree_digest(folder: str | Path) -> dict[str, str]:
    """Every file under `folder` by relative path: its SHA-256 (the sources must never change)."""
    result = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            result[os.path.relpath(path, folder)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return result
