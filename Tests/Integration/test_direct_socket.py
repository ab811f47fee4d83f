"""The native API's direct socket, `$XDG_RUNTIME_DIR/keywell/native` (docs/native-api.md, "The
direct socket"), with the real keywelld on a private session bus:

- the CLI and git's helper talk to keywelld there: the bus sees no native call (dbus-monitor),
  while with KEYWELL_NO_DIRECT_SOCKET the same command's call crosses the bus;
- a caller there is identified from the socket as on the bus: another program (a copy of
  keywell elsewhere) is not trusted with an item that trusts only keywell;
- a socket in a folder others can enter is not used (a planted listener hears nothing), a socket
  left by a killed daemon is passed over for the bus, which starts a new daemon.

Needs KEYWELL and KEYWELLD (scripts/test.sh sets them), dbus-daemon and dbus-monitor.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from keywell_helpers import PrivateAccount, built, user_tmp, wait_for  # noqa: F401 (user_tmp: a fixture)
from skip_helpers import cannot_run, kernel_pins_peers

NATIVE_INTERFACE = "org.keywell.Keychain1"


@pytest.fixture
def account():
    if not kernel_pins_peers():
        cannot_run("the direct socket needs Linux 6.5 (SO_PEERPIDFD); keywelld serves the bus alone here")
    a = PrivateAccount(built("KEYWELLD", "keywelld"), "keywell-direct-", extra_env={"KEYWELL_TEST_FAST_KDF": "1"})
    try:
        yield a
    finally:
        a.close()


def keywell(account, *args, env=None, input=None):
    return subprocess.run([built("KEYWELL", "keywell"), *args], env=dict(account.env, **(env or {})), input=input,
                          capture_output=True, text=True, timeout=60, **account.owner.spawn)


def direct_socket(account) -> Path:
    return Path(account.env["XDG_RUNTIME_DIR"]) / "keywell" / "native"


def with_login_and_item(account) -> None:
    assert keywell(account, "create-keychain", "-p", "pw", "login").returncode == 0
    r = keywell(account, "add-generic-password", "-a", "me", "-s", "direct", "-w", "s3cret")
    assert r.returncode == 0, r.stderr
    wait_for(direct_socket(account).is_socket, "keywelld's direct socket")


class Monitor:
    """dbus-monitor on the account's bus, collecting the members of native calls it sees."""

    def __init__(self, account):
        self.process = subprocess.Popen(
            ["dbus-monitor", "--address", account.env["DBUS_SESSION_BUS_ADDRESS"], f"interface={NATIVE_INTERFACE}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        # dbus-monitor has become a monitor once the bus tells it it lost its name (its first output).
        wait_for(lambda: any("NameLost" in line or "NameAcquired" in line for line in self.lines), "dbus-monitor to start")

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line)

    def calls(self, member: str) -> int:
        return sum(1 for line in self.lines if "method call" in line and f"member={member}" in line)

    def close(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=10)


def test_the_cli_and_git_helper_skip_the_bus_and_the_bus_path_still_works(account, user_tmp):
    with_login_and_item(account)
    monitor = Monitor(account)
    try:
        assert keywell(account, "find-generic-password", "-s", "direct", "-w").stdout == "s3cret\n"
        helper = user_tmp / "git-credential-keywell"
        helper.symlink_to(built("KEYWELL", "keywell"))
        stored = subprocess.run([str(helper), "store"], input="protocol=https\nhost=example.com\nusername=bob\npassword=pw1\n\n",
                                env=account.env, capture_output=True, text=True, timeout=60, **account.owner.spawn)
        assert stored.returncode == 0, stored.stderr
        got = subprocess.run([str(helper), "get"], input="protocol=https\nhost=example.com\n\n",
                             env=account.env, capture_output=True, text=True, timeout=60, **account.owner.spawn)
        assert got.stdout == "username=bob\npassword=pw1\n", got.stderr
        # The same lookup told to use the bus: the monitor sees that call, and it shows calls in
        # order, so by then it would have shown the ones above too.
        over_bus = keywell(account, "find-generic-password", "-s", "direct", "-w", env={"KEYWELL_NO_DIRECT_SOCKET": "1"})
        assert over_bus.stdout == "s3cret\n", over_bus.stderr
        wait_for(lambda: monitor.calls("CopyMatching") >= 1, "the bus lookup on dbus-monitor", timeout=20)
        assert monitor.calls("CopyMatching") == 1, "".join(monitor.lines)
        assert monitor.calls("Add") == 0, "".join(monitor.lines)
    finally:
        monitor.close()


def test_another_program_is_not_trusted_on_the_direct_socket(account, user_tmp):
    with_login_and_item(account)
    other = user_tmp / "other-program"
    shutil.copy(built("KEYWELL", "keywell"), other)
    os.chmod(other, 0o755)
    monitor = Monitor(account)
    try:
        # No display and no terminal for a question: a program the item does not trust is refused.
        r = subprocess.run([str(other), "find-generic-password", "-s", "direct", "-w"], env=account.env,
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, **account.owner.spawn)
        assert r.returncode != 0 and "s3cret" not in r.stdout, r
        # keywell itself, the item's creator, still reads it there.
        assert keywell(account, "find-generic-password", "-s", "direct", "-w").stdout == "s3cret\n"
        # Neither call crossed the bus (the control: one that does shows up).
        assert keywell(account, "find-generic-password", "-s", "direct", "-w", env={"KEYWELL_NO_DIRECT_SOCKET": "1"}).returncode == 0
        wait_for(lambda: monitor.calls("CopyMatching") >= 1, "the bus lookup on dbus-monitor", timeout=20)
        assert monitor.calls("CopyMatching") == 1, "the refusal must come over the direct socket"
    finally:
        monitor.close()


def test_a_socket_in_a_folder_others_can_enter_is_not_used(account, user_tmp):
    with_login_and_item(account)
    # Another runtime folder for the client, where "keywell" is open to everyone and a listener
    # waits on "native" as a planted socket would; the bus is still the account's.
    runtime = user_tmp / "runtime"
    folder = runtime / "keywell"
    folder.mkdir(parents=True)
    os.chmod(runtime, 0o700)
    os.chmod(folder, 0o755)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / "native"))
    listener.listen(4)
    account.owner.give(runtime)  # the client's runtime folder, and the socket it may connect to, are its own
    listener.settimeout(0.2)
    try:
        r = keywell(account, "find-generic-password", "-s", "direct", "-w", env={"XDG_RUNTIME_DIR": str(runtime)})
        assert r.stdout == "s3cret\n", r.stderr
        with pytest.raises(socket.timeout):
            listener.accept()
        # The control: the same listener in a private folder is used (and, saying nothing, makes
        # the client give up on it after its authentication deadline and go to the bus).
        os.chmod(folder, 0o700)
        heard = []

        def accept_one():
            listener.settimeout(10)
            connection, _ = listener.accept()
            heard.append(connection.recv(64))
            connection.close()

        thread = threading.Thread(target=accept_one)
        thread.start()
        r = keywell(account, "find-generic-password", "-s", "direct", "-w", env={"XDG_RUNTIME_DIR": str(runtime)})
        thread.join(timeout=20)
        assert heard, "a listener in a private folder is tried"
        assert r.stdout == "s3cret\n", r.stderr
    finally:
        listener.close()


def test_a_killed_daemons_socket_is_passed_over_for_the_bus(account):
    with_login_and_item(account)
    pid = daemon_pid(account)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), "keywelld to die")
    assert direct_socket(account).is_socket(), "a killed daemon leaves its socket behind"
    # Nobody listens there: the client goes to the bus, which starts a new keywelld (the login
    # keychain is locked again, its item still there).
    r = keywell(account, "show-keychain-info", "login")
    assert r.returncode in (0, 36), r.stderr
    assert keywell(account, "unlock-keychain", "-p", "pw", "login").returncode == 0
    assert keywell(account, "find-generic-password", "-s", "direct", "-w").stdout == "s3cret\n"
    assert daemon_pid(account) != pid


def daemon_pid(account) -> int:
    """The pid keywelld writes in its instance lock."""
    lock = Path(account.env["XDG_RUNTIME_DIR"]) / "keywell" / "keywelld.lock"
    return int(wait_for(lambda: lock.exists() and lock.read_text().strip(), "keywelld's instance lock"))


def test_a_call_with_the_wrong_signature_is_param_there_too(account):
    """The direct socket serves the same generated dispatch as the bus: a call whose arguments
    do not have the method's signature is the API's Param error, and the same connection's next
    well-formed call is answered."""
    with_login_and_item(account)
    peer = f"--peer=unix:path={direct_socket(account)}"

    def send(*args):
        return subprocess.run(["dbus-send", peer, "--print-reply", "/org/keywell/Keychain", *args], env=account.env,
                              capture_output=True, text=True, timeout=30, **account.owner.spawn)

    wrong = send(f"{NATIVE_INTERFACE}.Lock", "uint32:1")
    assert wrong.returncode != 0
    assert f"{NATIVE_INTERFACE}.Error.Param" in wrong.stderr, wrong.stderr
    assert "Lock takes (s), got (u)" in wrong.stderr, wrong.stderr
    right = send(f"{NATIVE_INTERFACE}.GetSearchList")
    assert right.returncode == 0, right.stderr
    assert '"login"' in right.stdout
