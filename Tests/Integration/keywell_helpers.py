"""Pieces the integration tests share whatever they test: the built binaries they are pointed at,
the private session bus configuration, and (for the PAM tests) the `module` fixture and the
body of their `kit` fixture.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from pam_helpers import Kit, SyslogCapture, module_path, require_root_and_tools


def built(variable: str, what: str = "binary", refuse_writable: bool = False) -> str:
    """The absolute path in the environment variable `variable`, which must name an executable
    file (the built `what`); with `refuse_writable`, one that others cannot write to either,
    since pam_keywell refuses to start such a program. Fails the test otherwise."""
    path = os.environ.get(variable)
    if not path:
        pytest.fail(f"{variable} is not set: point it at the built {what} (scripts/test.sh does)")
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        pytest.fail(f"{variable}={path} is not an executable file")
    if refuse_writable and os.stat(path).st_mode & 0o022:
        pytest.fail(f"{path} is writable by others; pam_keywell refuses to start it")
    return os.path.abspath(path)


# The message limits of a desktop's session bus (/usr/share/dbus-1/session.conf): without them a
# private dbus-daemon refuses messages over 32 MiB itself, which a real session bus passes on.
SESSION_MESSAGE_LIMITS = """  <limit name="max_incoming_bytes">1000000000</limit>
  <limit name="max_outgoing_bytes">1000000000</limit>
  <limit name="max_message_size">1000000000</limit>
"""


def session_bus_config(socket: str | Path, services: str | Path, doctype: bool = True,
                       allow_user: bool = False, session_limits: bool = False) -> str:
    """A session bus configuration: listening on the unix socket `socket`, activating from the
    folder `services`, letting everyone send, eavesdrop and own any name (and, with
    `allow_user`, connect whoever they are; with `session_limits`, pass messages as big as a
    desktop's session bus does)."""
    header = ('<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"\n'
              ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n') if doctype else ""
    users = '    <allow user="*"/>\n' if allow_user else ""
    limits = SESSION_MESSAGE_LIMITS if session_limits else ""
    return f"""{header}<busconfig>
  <type>session</type>
{limits}  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{services}</servicedir>
  <policy context="default">
{users}    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


@pytest.fixture(scope="session")
def module():
    """The built pam_keywell.so, once root and the tools the PAM tests need are checked."""
    require_root_and_tools()
    return module_path()


@pytest.fixture(scope="session")
def keywelld():
    """The built keywelld for PAM tests that start the real daemon (root runs it as the user, so
    a binary others could write is refused)."""
    return built("KEYWELLD", "keywelld", refuse_writable=True)


@pytest.fixture
def real_daemon_kit(module, keywelld):
    """A PAM test's Kit whose logins may start the real keywelld."""
    yield from open_kit(module)


@pytest.fixture
def real_daemon_stack(real_daemon_kit, keywelld):
    """A PAM service stack (pam_unix + pam_keywell) that starts the real keywelld."""
    return real_daemon_kit.stack(daemon=keywelld)


def open_kit(module: str):
    """The body of a PAM test's `kit` fixture (`yield from open_kit(module)`): a Kit over the
    module with syslog captured, checked for leaks after a test that passed, always closed."""
    k = Kit(module, SyslogCapture())
    try:
        yield k
        k.assert_no_leaks()
    finally:
        k.close()


class PrivateAccount:
    """A fresh user account as far as Keywell can tell: temp HOME and XDG folders and a private
    dbus-daemon whose only service is keywelld, started by D-Bus activation. The bus and
    keywelld run in their own process group; their stderr goes to `log` (a pipe nobody drains
    could fill up and stall the daemon). `bin_dir`, when given, is put first on PATH; `extra_env`
    is added to the environment the account's programs get."""

    def __init__(self, keywelld: str, prefix: str, bin_dir: bool = False, extra_env: dict | None = None) -> None:
        if shutil.which("dbus-daemon") is None:
            pytest.fail("dbus-daemon is needed: run scripts/setup.sh")
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        home = self.root / "home"
        runtime = self.root / "runtime"
        services = self.root / "services"
        self.bin = self.root / "bin" if bin_dir else None
        for folder in (home, runtime, services, *([self.bin] if self.bin else [])):
            folder.mkdir(mode=0o700)
        (services / "org.keywell.Keychain.service").write_text(
            f"[D-BUS Service]\nName=org.keywell.Keychain\nExec={keywelld}\n")
        bus_socket = runtime / "bus"
        config = self.root / "session.conf"
        config.write_text(session_bus_config(bus_socket, services, allow_user=True))
        self.keychains = home / ".local/share/keywell/keychains"
        path = "/usr/local/bin:/usr/bin:/bin"
        self.env = {
            "PATH": f"{self.bin}:{path}" if self.bin else path,
            "HOME": str(home),
            "XDG_RUNTIME_DIR": str(runtime),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={bus_socket}",
            "LANG": "C.UTF-8",
            **(extra_env or {}),
        }
        self.log = self.root / "bus.log"
        with open(self.log, "wb") as log:
            self.bus = subprocess.Popen(
                ["dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile", "--print-address=1"],
                stdout=subprocess.PIPE, stderr=log, env=self.env, start_new_session=True)
        line = self.bus.stdout.readline().decode()
        if not line.startswith("unix:"):
            log_text = self.log.read_text(errors="replace")
            self.close()
            pytest.fail(f"dbus-daemon did not start: {line!r} {log_text!r}")

    def close(self) -> None:
        try:
            os.killpg(self.bus.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.bus.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.bus.pid, signal.SIGKILL)
            self.bus.wait(timeout=5)
        try:
            os.killpg(self.bus.pid, signal.SIGKILL)  # keywelld, if it outlived the bus
        except ProcessLookupError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)


class CLIAccount(PrivateAccount):
    """A fresh account driven through the `keywell` CLI: `run` fails the test, with keywelld's
    log, when a command that should work does not."""

    def __init__(self, keywell: str, keywelld: str, prefix: str, extra_env: dict | None = None) -> None:
        super().__init__(keywelld, prefix=prefix, extra_env=extra_env)
        self.keywell = keywell

    def run(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run([self.keywell, *args], capture_output=True, text=True, env=self.env,
                                input=input, stdin=None if input is not None else subprocess.DEVNULL, timeout=120)
        if check and result.returncode != 0:
            pytest.fail(f"keywell {' '.join(args)} exited {result.returncode}: {result.stderr}\n"
                        f"{self.log.read_text(errors='replace')}")
        return result


def accounts_of(make_one):
    """The body of a fixture that hands a test a function making accounts: every account made
    is closed when the test ends (`yield from accounts_of(lambda: Account(...))`)."""
    made = []

    def make():
        made.append(make_one())
        return made[-1]

    yield make
    for account in made:
        account.close()


def wait_for(condition, what: str, timeout: float = 60):
    """Polls `condition()` and returns its first true value. The timeout only guards against a
    hang (a busy machine is slow, never wrong), so tests wait for positive signals, not sleeps."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)
