"""Pieces the integration tests share whatever they test: the built binaries they are pointed at,
the private session bus configuration, and (for the PAM tests) the `module` fixture and the
body of their `kit` fixture.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import json
import os
import pwd
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

import security_figures
from pam_helpers import Kit, SyslogCapture, kill_user_processes, module_path, require_root_and_tools


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


# ------------------------------------------------------------------------------ the test user

HERE = Path(__file__).resolve().parent
# Where the binaries a test user runs may come from (scripts/test.sh sets them).
BINARY_VARIABLES = ("KEYWELLD", "KEYWELL", "KEYWELL_BIN_DIR", "KEYWELLD_RELEASE")
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4


@dataclass(frozen=True)
class Owner:
    """The user a private account's bus, keywelld and clients run as. `uid` None: root (a test
    that opted out with `as_root=True`, for the reason it states)."""
    uid: int | None = None
    gid: int | None = None
    name: str = "root"

    @property
    def spawn(self) -> dict:
        """Keyword arguments for subprocess.Popen/run that start a program as this user: the
        child drops to it before exec, so the program is the user's own, as on a desktop."""
        if self.uid is None or os.geteuid() == self.uid:  # root, or already the user (Owner.call)
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}

    def give(self, *paths: str | Path) -> None:
        """Hands files and folders (with what they hold) that root made to this user."""
        if self.uid is None or os.geteuid() != 0:
            return
        for path in paths:
            os.chown(path, self.uid, self.gid, follow_symlinks=False)
            if os.path.isdir(path) and not os.path.islink(path):
                for folder, folders, files in os.walk(path):
                    for name in folders + files:
                        os.chown(os.path.join(folder, name), self.uid, self.gid, follow_symlinks=False)

    def call(self, function, *args, timeout: float = 900, **kwargs):
        """Runs `function` in a forked child that is this user (for tests whose body talks to
        keywelld from this python process: keywelld serves its own user only). The child is made
        dumpable again, as an exec would, so keywelld can read its /proc entry like any of the
        user's programs'. A failure or skip in the child becomes the test's."""
        if self.uid is None or os.geteuid() == self.uid:  # root's account, or already the user
            function(*args, **kwargs)
            return
        security_figures.hold_open()
        sys.stdout.flush()
        sys.stderr.flush()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns to pytest
            outcome = ["failed", "the test body did not report"]
            try:
                os.close(read)
                os.setgroups([])
                os.setgid(self.gid)
                os.setuid(self.uid)
                libc = ctypes.CDLL(None, use_errno=True)
                # Dumpable again, and ended with pytest (a credential change cleared both).
                for option, value in ((PR_SET_DUMPABLE, 1), (PR_SET_PDEATHSIG, signal.SIGKILL)):
                    if libc.prctl(option, int(value), 0, 0, 0) != 0:
                        raise OSError(ctypes.get_errno(), f"prctl({option})")
                function(*args, **kwargs)
                outcome = ["passed", ""]
            except pytest.skip.Exception as skipped:
                outcome = ["skipped", str(skipped)]
            except BaseException:
                outcome = ["failed", traceback.format_exc()]
            finally:
                try:
                    os.write(write, json.dumps(outcome).encode())
                finally:
                    os._exit(0)
        os.close(write)
        report = b""
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([read], [], [], left)[0]:
                    # SIGABRT first: faulthandler (inherited from pytest) prints the body's stacks.
                    os.kill(pid, signal.SIGABRT)
                    if not select.select([read], [], [], 10)[0]:
                        os.kill(pid, signal.SIGKILL)
                    pytest.fail(f"the test body (as {self.name}) ran over {timeout} s")
                chunk = os.read(read, 65536)
                if not chunk:
                    break
                report += chunk
        finally:
            os.close(read)
            os.waitpid(pid, 0)
        kind, text = json.loads(report) if report else ["failed", "the test body died without a report"]
        if kind == "skipped":
            pytest.skip(text)
        if kind == "failed":
            pytest.fail(f"(as {self.name})\n{text}", pytrace=False)


ROOT = Owner()
_throwaway_user: list[Owner] = []


def throwaway_user() -> Owner:
    """The throwaway non-root user this test session runs keywelld and its clients as, made at
    first use (useradd, no home: each account brings its own HOME) and removed with whatever it
    still runs when the session ends. Fails when the built binaries are out of its reach."""
    if _throwaway_user:
        return _throwaway_user[0]
    if os.geteuid() != 0:
        pytest.fail("the integration tests run as root: they run keywelld as a throwaway user they make")
    name = "kwtest" + secrets.token_hex(4)
    made = subprocess.run(["useradd", "-M", "-d", f"/nonexistent/{name}", "-s", "/usr/sbin/nologin", "-U", name],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.fail(f"useradd {name} failed: {made.stderr}")
    entry = pwd.getpwnam(name)
    owner = Owner(entry.pw_uid, entry.pw_gid, name)
    _throwaway_user.append(owner)
    atexit.register(_remove_throwaway_user, owner)
    # The user reaches the built binaries (and this folder's helper scripts) through folders it
    # may enter: checked as the user, so a 0700 folder on the way fails here, not in a daemon.
    for path in [str(HERE / "scripted_pinentry.py")] + [os.environ[v] for v in BINARY_VARIABLES if os.environ.get(v)]:
        reach = subprocess.run(["test", "-r", path, "-a", "-x", path], **owner.spawn)
        if reach.returncode != 0:
            pytest.fail(f"{path} is out of the test user's reach: every folder on its way must be enterable "
                        "by others (0755); build or copy the binaries there")
    return owner


def _remove_throwaway_user(owner: Owner) -> None:
    kill_user_processes(owner.uid)
    subprocess.run(["userdel", "-f", owner.name], capture_output=True)


def owner_of(as_root: bool) -> Owner:
    """Root when a test opted out (`as_root=True`, with its reason), else the test user."""
    return ROOT if as_root else throwaway_user()


def as_test_user(test):
    """Runs the decorated test's body as the test user (Owner.call): for tests that are
    keywelld's clients from this python process (python-dbus, jeepney, secretstorage)."""
    @functools.wraps(test)
    def body(*args, **kwargs):
        return throwaway_user().call(test, *args, **kwargs)
    return body


def bodies_as_test_user(namespace: dict, as_root: dict[str, str] | None = None) -> None:
    """`as_test_user` on every test function of a module (`bodies_as_test_user(globals())` at its
    end), but those named in `as_root`, each with the reason its body needs root."""
    for name, value in list(namespace.items()):
        if name.startswith("test_") and callable(value) and not isinstance(value, type):
            if name not in (as_root or {}):
                namespace[name] = as_test_user(value)
    unknown = set(as_root or {}) - set(namespace)
    assert not unknown, f"as_root names no test: {unknown}"


@pytest.fixture
def user_tmp():
    """A fresh folder of the test user's (for files its programs write or read)."""
    path = Path(tempfile.mkdtemp(prefix="kwtest-tmp-"))
    throwaway_user().give(path)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


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
    is added to the environment the account's programs get. They all run as the throwaway test
    user (`owner`), as a desktop runs them as its user; `as_root=True` keeps them root for a test
    that states why it needs root."""

    def __init__(self, keywelld: str, prefix: str, bin_dir: bool = False, extra_env: dict | None = None,
                 as_root: bool = False) -> None:
        if shutil.which("dbus-daemon") is None:
            pytest.fail("dbus-daemon is needed: run scripts/setup.sh")
        self.owner = owner_of(as_root)
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
        self.log.touch(mode=0o600)
        self.owner.give(self.root)
        with open(self.log, "wb") as log:
            self.bus = subprocess.Popen(
                ["dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile", "--print-address=1"],
                stdout=subprocess.PIPE, stderr=log, env=self.env, start_new_session=True, **self.owner.spawn)
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

    def __init__(self, keywell: str, keywelld: str, prefix: str, extra_env: dict | None = None,
                 as_root: bool = False) -> None:
        super().__init__(keywelld, prefix=prefix, extra_env=extra_env, as_root=as_root)
        self.keywell = keywell

    def run(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run([self.keywell, *args], capture_output=True, text=True, env=self.env,
                                input=input, stdin=None if input is not None else subprocess.DEVNULL, timeout=120,
                                **self.owner.spawn)
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
