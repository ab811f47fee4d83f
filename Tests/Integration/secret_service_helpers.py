"""Shared pieces of the Secret Service integration tests: a private dbus-daemon whose activation
files start the built keywelld for both org.keywell.Keychain and org.freedesktop.secrets, temp
HOME/XDG folders, a scripted pinentry, and clients bound to that bus (secret-tool, secretstorage,
keyring, python-dbus for the native API).

Needs KEYWELLD=/path/to/keywelld (scripts/test.sh sets it). Without it the tests fail; they do
not skip.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from keywell_helpers import built, owner_of, session_bus_config

HERE = Path(__file__).resolve().parent
PINENTRY = HERE / "scripted_pinentry.py"
SECRETS = "org.freedesktop.secrets"
NATIVE = "org.keywell.Keychain"
NATIVE_PATH = "/org/keywell/Keychain"
NATIVE_IFACE = "org.keywell.Keychain1"
SERVICE_PATH = "/org/freedesktop/secrets"
DH = "dh-ietf1024-sha256-aes128-cbc-pkcs7"
LOGIN_PASSWORD = "login-password"


class KeywellBus:
    """One private session: dbus-daemon + (activated) keywelld + temp home, run as the throwaway
    test user (`owner`; keywell_helpers.PrivateAccount says why, and what `as_root` is for).
    Tests that call keywelld from this python process run their body as that user too
    (keywell_helpers.as_test_user)."""

    def __init__(self, keywelld: str | None = None, daemon_args: str = "", activate: bool = True,
                 daemon_env: dict | None = None, scripted_pinentry: bool = True, session_limits: bool = False,
                 as_root: bool = False) -> None:
        if shutil.which("dbus-daemon") is None:
            pytest.fail("dbus-daemon is missing: run scripts/setup.sh")
        self.owner = owner_of(as_root)
        self.keywelld = keywelld or built("KEYWELLD")
        self.root = Path(tempfile.mkdtemp(prefix="kwss-"))
        self.home = self.root / "home"
        self.runtime = self.root / "runtime"
        self.services = self.root / "services"
        for folder in (self.home, self.runtime, self.services):
            folder.mkdir(mode=0o700)
        self.log_path = self.root / "keywelld.log"
        self.pinentry_log = self.root / "pinentry.log"
        self.answers_path = self.root / "pinentry-answers.json"
        self.wrapper = self.root / "keywelld-test"
        self.daemon_args = daemon_args
        # More variables for the activated daemon (test knobs such as KEYWELL_TEST_THROTTLE_UNIT_MS).
        self.daemon_env = dict(daemon_env or {})
        # False: the daemon chooses its prompter as on a desktop (docs/prompts.md).
        self.scripted_pinentry = scripted_pinentry
        self._write_wrapper()
        if activate:
            self.install_activation()
        self.socket = self.runtime / "bus"
        self.address = f"unix:path={self.socket}"
        config = self.root / "session.conf"
        config.write_text(session_bus_config(self.socket, self.services, session_limits=session_limits))
        self.env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(self.runtime),
            "XDG_DATA_HOME": str(self.home / ".local/share"),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "DBUS_SESSION_BUS_ADDRESS": self.address,
            "LANG": "C.UTF-8",
        }
        self.owner.give(self.root)
        # The bus (and what it activates) runs in its own process group, ended as a whole.
        self.bus = subprocess.Popen(
            ["dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile", "--print-address=1"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env, start_new_session=True,
            **self.owner.spawn)
        self.bus.stdout.readline()
        self._connections = []

    def _write_wrapper(self) -> None:
        exports = "".join(f"export {key}='{value}'\n" for key, value in self.daemon_env.items())
        pinentry = f"export KEYWELL_PINENTRY='{PINENTRY}'\n" if self.scripted_pinentry else ""
        self.wrapper.write_text(f"""#!/bin/sh
{exports}export KEYWELL_TEST_FAST_KDF=1
{pinentry}export SCRIPTED_PINENTRY_ANSWERS='{self.answers_path}'
export SCRIPTED_PINENTRY_LOG='{self.pinentry_log}'
exec '{self.keywelld}' --verbose {self.daemon_args} 2>>'{self.log_path}'
""")
        self.wrapper.chmod(0o755)

    def install_activation(self) -> None:
        for name in (NATIVE, SECRETS):
            (self.services / f"{name}.service").write_text(
                f"[D-BUS Service]\nName={name}\nExec={self.wrapper}\n")

    # ---------------------------------------------------------------- pinentry

    def pinentry_answers(self, *answers) -> None:
        """What the next GETPINs answer: strings are typed passwords, None is Cancel."""
        self.answers_path.write_text(json.dumps(list(answers)))
        self.owner.give(self.answers_path)  # the pinentry (the owner's) takes answers out of it

    def pinentry_lines(self) -> list[str]:
        return self.pinentry_log.read_text().splitlines() if self.pinentry_log.exists() else []

    def daemon_log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    # ---------------------------------------------------------------- clients

    def run(self, args, input: bytes | str | None = None, timeout: float = 30, check: bool = False,
            env: dict | None = None, cwd: str | Path | None = None) -> subprocess.CompletedProcess:
        data = input.encode() if isinstance(input, str) else input
        result = subprocess.run(args, input=data, capture_output=True, timeout=timeout,
                                env={**self.env, **(env or {})}, cwd=cwd, **self.owner.spawn)
        if check and result.returncode != 0:
            raise AssertionError(f"{args} failed ({result.returncode}): {result.stderr.decode(errors='replace')}\n"
                                 f"daemon log:\n{self.daemon_log()[-3000:]}")
        return result

    def secret_tool(self, *args: str, input: str | None = None, check: bool = False) -> subprocess.CompletedProcess:
        return self.run(["secret-tool", *args], input=input, check=check)

    def dbus(self):
        """A python-dbus connection to this bus."""
        import dbus
        connection = dbus.bus.BusConnection(self.address)
        self._connections.append(connection)
        return connection

    def native(self, connection=None):
        import dbus
        connection = connection or self.dbus()
        return dbus.Interface(connection.get_object(NATIVE, NATIVE_PATH), NATIVE_IFACE)

    def jeepney(self):
        """A jeepney connection for secretstorage."""
        from jeepney.io.blocking import open_dbus_connection
        connection = open_dbus_connection(bus=self.address)
        self._connections.append(connection)
        return connection

    @contextmanager
    def environment(self):
        """This bus as the process's session bus (for libraries that only read the environment)."""
        saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def create_login(self, password: str = LOGIN_PASSWORD, enforce_access: bool = True) -> None:
        """The login keychain, as PAM would make it (default keychain, search list). It enforces
        access lists, as every new keychain does; `enforce_access=False` turns that off for tests
        where several programs share items and access control is not what they are about."""
        import dbus
        native = self.native()
        native.CreateKeychain("login", dbus.ByteArray(password.encode()))
        if not enforce_access:
            native.SetSettings("login", {"enforceAccess": dbus.Boolean(False)})

    def keywelld_pids(self) -> list[int]:
        out = subprocess.run(["pgrep", "-f", "-s", str(self.bus.pid), "keywelld"], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def close(self) -> None:
        for connection in self._connections:
            try:
                connection.close()
            except Exception:
                pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.bus.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline and self.bus.poll() is None:
                time.sleep(0.02)
        self.bus.wait(timeout=5)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def session():
    bus = KeywellBus()
    try:
        yield bus
    finally:
        bus.close()
