"""pam_keywell.so under the real `su`, driven through a pseudo-terminal the way a person uses it:
an unprivileged user runs `su <target>`, su prompts on the terminal, the test types the target's
password, and the target's login keychain is then created / unlocked by pam_keywell and the
target's keywelld, checked through the `keywell` CLI as the target.

Root's `su` skips authentication (pam_rootok), so su runs as an unprivileged helper user.

su has no option to pick a PAM service: util-linux su always reads /etc/pam.d/su (su-l for
`su -l`), both shipped by the distribution. So the machine's file is never edited: su runs in a
private mount namespace (`unshare --mount`) in which a test stack is bind-mounted over
/etc/pam.d/su. Nothing outside that namespace sees it, and it vanishes with the namespace's last
process (su, and the keywelld that pam_keywell starts), also when a test fails or is killed.

Needs: root, KEYWELLD and KEYWELL (the built daemon and CLI; scripts/test.sh sets them),
PAM_KEYWELL_SO or `make -C pam`. Without them the tests fail; they do not skip.
"""

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from keywell_helpers import built, open_kit
from pam_helpers import (
    CLEAN_ENV, Kit, Terminal, User, dbus_call, keywelld_pids, module_path, require_root_and_tools,
    start_session_bus,
)

PAM_SU = Path("/etc/pam.d/su")


@pytest.fixture(scope="session")
def module():
    require_root_and_tools()
    for tool in ("su", "unshare", "mount"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing")
    return module_path()


@pytest.fixture(scope="session")
def keywelld():
    return built("KEYWELLD", refuse_writable=True)


@pytest.fixture(scope="session")
def keywell():
    return built("KEYWELL", refuse_writable=True)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def host_mounts_over_pam_su() -> list[str]:
    """Mount points on /etc/pam.d/su as this (the host's) namespace sees them."""
    with open("/proc/self/mountinfo") as f:
        return [line for line in f if line.split()[4] == str(PAM_SU)]


@pytest.fixture
def kit(module, keywelld):
    before = file_digest(PAM_SU)
    try:
        yield from open_kit(module)
    finally:
        # The machine's PAM configuration is exactly as it was, whatever happened in the test.
        assert file_digest(PAM_SU) == before
        assert host_mounts_over_pam_su() == []


@pytest.fixture
def su_stack(kit, keywelld) -> str:
    """The stack su reads in its namespace: pam_unix checks the password, pam_keywell after it."""
    return kit.session_stack_file(keywelld)


def run_su(kit: Kit, stack: str, caller: User, target: User, command: str) -> Terminal:
    """`su <target> -c <command>` as `caller`, on a new terminal, with `stack` as /etc/pam.d/su
    in a mount namespace of its own."""
    inner = ('mount --bind "$1" /etc/pam.d/su && exec setpriv --reuid="$2" --regid="$3" --init-groups -- '
             'su "$4" -c "$5"')
    argv = ["/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", inner, "sh",
            stack, str(caller.uid), str(caller.gid), target.name, command]
    env = {"PATH": CLEAN_ENV["PATH"], "LANG": "C.UTF-8", "TERM": "dumb", "HOME": caller.home,
           "USER": caller.name, "LOGNAME": caller.name}
    return Terminal(argv, env)


def keywell_cli(kit: Kit, keywell: str, user: User, *args: str) -> tuple[int, str, str]:
    r = kit.as_user(user, [keywell, *args], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def keychain_info(kit: Kit, keywell: str, user: User) -> dict:
    rc, out, err = keywell_cli(kit, keywell, user, "show-keychain-info", "login", "--json")
    assert rc == 0, err
    return json.loads(out)


def wait_for_daemon_on_bus(kit: Kit, user: User) -> None:
    """The pam-started keywelld owns its name (dbus_call waits for that before it asks)."""
    r = dbus_call(kit, user, "info", "login")
    assert "ok" in r, r


def test_su_in_a_terminal_creates_then_unlocks_the_login_keychain(kit, su_stack, keywelld, keywell):
    caller, target = kit.user(), kit.user()
    start_session_bus(kit, target)  # a desktop session of the target's, where its keywelld goes
    db = Path(target.home) / ".local/share/keywell/keychains/login.keychain-db"
    assert not db.exists()

    # First su: pam_keywell starts the target's keywelld, which creates the login keychain.
    term = run_su(kit, su_stack, caller, target, "echo KW-IN-SESSION; read answer")
    try:
        term.expect(b"Password:")
        term.type(target.password + "\n")
        term.expect(b"KW-IN-SESSION")
        assert target.password.encode() not in term.transcript  # typed with echo off
        # The session is open: the machine's own /etc/pam.d/su has not changed meanwhile.
        assert host_mounts_over_pam_su() == []
        wait_for_daemon_on_bus(kit, target)
        assert db.exists() and db.stat().st_uid == target.uid
        daemons = keywelld_pids(target)
        assert len(daemons) == 1
        assert os.path.realpath(f"/proc/{daemons[0]}/exe") == os.path.realpath(keywelld)
        info = keychain_info(kit, keywell, target)
        assert info["locked"] is False and info["isDefault"] is True, info
        rc, _, err = keywell_cli(kit, keywell, target, "add-generic-password", "-a", "kwtest", "-s", "su-test",
                                 "-w", "stored-during-su")
        assert rc == 0, err
        term.type("\n")  # ends the command: su closes the PAM session
        assert term.wait() == 0, term.transcript
    finally:
        term.close()
    # The last session closed: pam_keywell had the daemon lock the login keychain.
    assert keychain_info(kit, keywell, target)["locked"] is True
    rc, _, _ = keywell_cli(kit, keywell, target, "find-generic-password", "-s", "su-test", "-w")
    assert rc == 36  # errSecInteractionNotAllowed / locked, as macOS `security` exits

    # Second su: the same daemon unlocks the existing keychain with the password typed at su.
    term = run_su(kit, su_stack, caller, target, "echo KW-IN-SESSION; read answer")
    try:
        term.expect(b"Password:")
        term.type(target.password + "\n")
        term.expect(b"KW-IN-SESSION")
        assert keychain_info(kit, keywell, target)["locked"] is False
        rc, out, err = keywell_cli(kit, keywell, target, "find-generic-password", "-s", "su-test", "-w")
        assert (rc, out.strip()) == (0, "stored-during-su"), err
        assert keywelld_pids(target) == daemons
        term.type("\n")
        assert term.wait() == 0, term.transcript
    finally:
        term.close()
    assert keychain_info(kit, keywell, target)["locked"] is True


def test_su_with_a_wrong_password_fails_and_leaves_the_keychain_alone(kit, su_stack, keywell):
    caller, target = kit.user(), kit.user()
    start_session_bus(kit, target)
    term = run_su(kit, su_stack, caller, target, "echo KW-IN-SESSION")
    try:
        term.expect(b"Password:")
        term.type("not-" + target.password + "\n")
        assert term.wait() != 0
        assert b"KW-IN-SESSION" not in term.transcript
    finally:
        term.close()
    # No session was opened: nothing started, nothing created.
    assert keywelld_pids(target) == []
    assert not (Path(target.home) / ".local/share/keywell").exists()
