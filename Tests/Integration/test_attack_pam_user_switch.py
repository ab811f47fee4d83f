"""Attack: the password checked for one user handed to another user's keywelld.

A PAM application may change PAM_USER between pam_authenticate and pam_open_session. sudo does
exactly that: it authenticates the caller (A types A's password), then sets PAM_USER to the target
(B) and opens B's session; Debian's `sudo-i` service includes common-session, where pam_keywell
sits. A module that kept A's password at auth and sent it at open_session to whoever PAM_USER is
then would give A's password to B's daemon, and B's login keychain would be created with it.

pam_keywell binds the kept password to the uid and name it was checked for and drops it when
PAM_USER no longer resolves to them (docs/control-protocol.md, "Secrets"). Checked here with:
- the libpam sequence itself (fixtures/pam_user_switch.c, compiled by the test), against a
  recording `daemon=` program and against the real keywelld;
- the real `sudo -i -u` and `su -`, typed into a pseudo-terminal, both ways between two users.
  `su - B` asks for B's password: that one must still reach B.

sudo and su read fixed files (/etc/sudoers, /etc/pam.d/sudo-i, /etc/pam.d/su-l), so they run in a
private mount namespace with test files bind-mounted over those; the machine's files are never
edited (the same approach as test_pam_su.py).

Run as root with KEYWELLD and KEYWELL set (scripts/test.sh); needs gcc, libpam0g-dev and sudo.
"""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from keywell_helpers import built, module, open_kit  # noqa: F401 (module: a fixture)
from pam_helpers import CLEAN_ENV, Kit, Stub, Terminal, User, dbus_call, sha256, start_session_bus
from security_figures import record

HERE = Path(__file__).resolve().parent
SWITCHER_SOURCE = HERE / "fixtures" / "pam_user_switch.c"
NAMESPACED = ("/etc/sudoers", "/etc/pam.d/sudo", "/etc/pam.d/sudo-i", "/etc/pam.d/su-l")


@pytest.fixture(scope="session")
def keywelld():
    return built("KEYWELLD", "keywelld", refuse_writable=True)


@pytest.fixture(scope="session")
def tools(module):
    for tool in ("gcc", "sudo", "su", "unshare", "mount"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing: run scripts/setup.sh")


@pytest.fixture(scope="session")
def switcher(tools, tmp_path_factory) -> str:
    """pam_user_switch, built from its source for this run."""
    out = tmp_path_factory.mktemp("switcher") / "pam_user_switch"
    subprocess.run(["gcc", "-Wall", "-Wextra", "-Werror", "-o", str(out), str(SWITCHER_SOURCE), "-lpam"],
                   check=True)
    return str(out)


@pytest.fixture(scope="module")
def tally():
    """One SECURITY.md row for the whole file: every attempt and whether it delivered."""
    attempts: list[bool] = []
    yield attempts
    if attempts:
        delivered = sum(attempts)
        record("PAM: password of the authenticated user handed to another PAM_USER "
               "(libpam sequence with a recorder and with keywelld, sudo -i -u both ways)",
               f"{delivered} of {len(attempts)} attempts delivered", "0", delivered == 0)


@pytest.fixture
def kit(module):
    digests = {p: file_digest(p) for p in NAMESPACED}
    try:
        yield from open_kit(module)
    finally:
        # The machine's sudo and su configuration is exactly as it was, whatever happened.
        assert {p: file_digest(p) for p in NAMESPACED} == digests
        assert host_mounts_over(NAMESPACED) == []


@pytest.fixture
def sudo_kit(kit):
    """A kit whose users' sudo timestamps (when each last authenticated) go with them."""
    yield kit
    for u in kit.users:
        Path(f"/run/sudo/ts/{u.name}").unlink(missing_ok=True)


def file_digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def host_mounts_over(paths) -> list[str]:
    with open("/proc/self/mountinfo") as f:
        return [line for line in f if line.split()[4] in paths]


def stubs_per_user(kit: Kit, *users: User) -> tuple[str, dict[int, Stub]]:
    """One recorder per user behind one `daemon=` program, since a PAM stack names a single
    program and each user's daemon must record what reached *that* user."""
    stubs = {u.uid: kit.stub(u) for u in users}
    cases = "".join(f"  {uid}) exec {s.path} ;;\n" for uid, s in stubs.items())
    path = kit.script(f'#!/bin/sh\ncase "$(/usr/bin/id -u)" in\n{cases}esac\nexit 1\n')
    return path, stubs


def sudoers_file(kit: Kit, a: User, b: User) -> str:
    path = os.path.join(kit.bindir(), "sudoers")
    Path(path).write_text("Defaults !lecture, !fqdn, passwd_tries=1\n"
                          f"{a.name} ALL=({b.name}) ALL\n{b.name} ALL=({a.name}) ALL\n")
    os.chmod(path, 0o440)
    return path


def in_namespace(binds: dict[str, str], caller: User, command: list[str]) -> Terminal:
    """`command` as `caller` on a terminal of its own, in a mount namespace where each
    file of `binds` (source: target) is bind-mounted over its target."""
    inner = ('uid=$1 gid=$2; shift 2; '
             'while [ "$1" != "--" ]; do mount --bind "$1" "$2" || exit 99; shift 2; done; shift; '
             'exec setpriv --reuid="$uid" --regid="$gid" --init-groups -- "$@"')
    pairs = [x for src, dst in binds.items() for x in (src, dst)]
    argv = ["/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", inner, "sh",
            str(caller.uid), str(caller.gid), *pairs, "--", *command]
    env = {"PATH": CLEAN_ENV["PATH"], "LANG": "C.UTF-8", "TERM": "dumb", "HOME": caller.home,
           "USER": caller.name, "LOGNAME": caller.name}
    return Terminal(argv, env)


def run_switcher(switcher: str, service: str, auth_user: User, session_user: User) -> subprocess.CompletedProcess:
    r = subprocess.run([switcher, service, auth_user.name, session_user.name],
                       input=(auth_user.password + "\n").encode(), capture_output=True, env=dict(CLEAN_ENV),
                       start_new_session=True, timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr)
    return r


def hashes_received(stub: Stub) -> list[str]:
    return [h for req in stub.requests() for h in req["sha256"]]


def assert_session_counted(stub: Stub) -> None:
    """The positive signal that open_session has run for this user: its daemon got 'O'."""
    assert "O" in [req["op"] for req in stub.requests()], stub.requests()


# ------------------------------------------------------------------------------------ libpam


def test_libpam_sequence_hands_nothing_to_the_new_pam_user(kit, switcher, tally):
    a, b = kit.user(), kit.user()
    daemon, stubs = stubs_per_user(kit, a, b)
    svc = kit.stack(daemon=daemon)

    run_switcher(switcher, svc, a, b)  # pam_start(A), authenticate, PAM_USER=B, open and close

    assert_session_counted(stubs[b.uid])  # B's session is still opened and counted...
    delivered = sha256(a.password) in hashes_received(stubs[b.uid])
    tally.append(delivered)
    assert not delivered, "B's daemon received A's password"
    assert [req["count"] for req in stubs[b.uid].requests() if req["op"] == "O"] == [0]  # ...without one
    assert stubs[a.uid].requests() == [], "A has no session here"
    assert any("checked for " + a.name in line and "dropped" in line for line in kit.syslog.keywell_lines())


def test_libpam_sequence_without_a_switch_still_hands_the_password_over(kit, switcher):
    """The control: the same program, PAM_USER left as it was, delivers. So the recorder above
    would have seen A's password had the module sent it."""
    a = kit.user()
    daemon, stubs = stubs_per_user(kit, a)
    svc = kit.stack(daemon=daemon)
    run_switcher(switcher, svc, a, a)
    assert hashes_received(stubs[a.uid]) == [sha256(a.password)]


def test_libpam_sequence_creates_no_keychain_for_the_new_user_with_the_old_users_password(
        kit, switcher, keywelld, tally):
    a, b = kit.user(), kit.user()
    start_session_bus(kit, b)
    svc = kit.stack(daemon=keywelld)

    run_switcher(switcher, svc, a, b)

    db = Path(b.home) / ".local/share/keywell/keychains/login.keychain-db"
    # B's keywelld ran for the session (it answered open_session), so it is on B's bus now.
    reply = dbus_call(kit, b, "unlock", "login", password=a.password)
    delivered = db.exists() and "ok" in reply
    tally.append(delivered)
    assert not delivered, "B's login keychain was created with A's password"
    assert "error" in reply and reply["error"] != "NoOwner", reply  # B's keywelld answered, and refused


# ------------------------------------------------------------------------------------ sudo -i, su -


@pytest.mark.parametrize("direction", ["A->B", "B->A"])
def test_sudo_login_shell_hands_the_callers_password_to_nobody(sudo_kit, tools, tally, direction):
    kit = sudo_kit
    a, b = kit.user(), kit.user()
    caller, target = (a, b) if direction == "A->B" else (b, a)
    daemon, stubs = stubs_per_user(kit, a, b)
    stack = kit.session_stack_file(daemon)
    binds = {sudoers_file(kit, a, b): "/etc/sudoers", stack: "/etc/pam.d/sudo-i"}
    binds[kit.session_stack_file(daemon)] = "/etc/pam.d/sudo"  # in case sudo -i used the plain service

    term = in_namespace(binds, caller, ["sudo", "-i", "-u", target.name, "echo", "KW-IN-SESSION"])
    try:
        term.expect(b"password for")
        term.type(caller.password + "\n")  # sudo asks for the caller's own password
        term.expect(b"KW-IN-SESSION")
        assert term.wait() == 0, term.transcript
    finally:
        term.close()

    assert_session_counted(stubs[target.uid])
    delivered = sha256(caller.password) in hashes_received(stubs[target.uid])
    tally.append(delivered)
    assert not delivered, "the target's daemon received the caller's password"
    assert hashes_received(stubs[target.uid]) == []
    assert stubs[caller.uid].requests() == [], "the caller has no session here"


@pytest.mark.parametrize("direction", ["A->B", "B->A"])
def test_su_login_shell_still_hands_the_targets_password_to_the_target(kit, tools, direction):
    a, b = kit.user(), kit.user()
    caller, target = (a, b) if direction == "A->B" else (b, a)
    daemon, stubs = stubs_per_user(kit, a, b)
    binds = {kit.session_stack_file(daemon): "/etc/pam.d/su-l"}

    term = in_namespace(binds, caller, ["su", "-", target.name, "-c", "echo KW-IN-SESSION"])
    try:
        term.expect(b"Password:")
        term.type(target.password + "\n")  # su asks for the target's password: it is the target's
        term.expect(b"KW-IN-SESSION")
        assert term.wait() == 0, term.transcript
    finally:
        term.close()

    assert hashes_received(stubs[target.uid]) == [sha256(target.password)]
    assert stubs[caller.uid].requests() == []
