"""The login keychain unlocked by a login without a typed password, through a TPM
(docs/login-unlock.md): a software TPM (swtpm) started here on loopback ports, a throwaway user,
a PAM stack whose auth is pam_permit (standing in for pam_fprintd, pam_u2f or autologin), the
real keywelld started by pam_keywell, and `keywell login-unlock` run by root as an
administrator would with sudo.

These need the built daemon and CLI (KEYWELLD, KEYWELL: scripts/test.sh sets them) and swtpm
(scripts/setup.sh installs it). Without them they fail; they do not skip.
"""

import json
import os
import random
import shutil
import socket
import stat
import struct
import subprocess
import tempfile
import time

import pytest

from keywell_helpers import built, keywelld, module, real_daemon_kit, real_daemon_stack  # noqa: F401 (fixtures)
from pam_helpers import (
    CLEAN_ENV, LOGIN_BOUND_S, PAM_D, dbus_call, keywelld_pids, kill_user_processes, login, pamtester,
    start_session_bus,
)

VALUE_FOLDER = "/var/lib/keywell/login-unlock"


# ------------------------------------------------------------------------------------ swtpm


def _free_port_pair() -> int:
    """A port P with P and P+1 free on loopback: swtpm's TCTI talks to P and controls on P+1."""
    for _ in range(200):
        port = random.randrange(20000, 60000, 2)
        sockets = []
        try:
            for p in (port, port + 1):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    pytest.fail("no two free loopback ports for swtpm")


class SoftwareTPM:
    """`swtpm socket --tpm2` with its own state folder, on loopback ports chosen here."""

    def __init__(self) -> None:
        if shutil.which("swtpm") is None:
            pytest.fail("swtpm is missing: run scripts/setup.sh")
        self.state = tempfile.mkdtemp(prefix="kw-swtpm-")
        self.port = _free_port_pair()
        self.proc = subprocess.Popen(
            ["swtpm", "socket", "--tpm2",
             "--server", f"type=tcp,port={self.port},bindaddr=127.0.0.1",
             "--ctrl", f"type=tcp,port={self.port + 1},bindaddr=127.0.0.1",
             "--flags", "startup-clear", "--tpmstate", f"dir={self.state}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"swtpm did not start: {self.proc.stderr.read().decode(errors='replace')}")
                time.sleep(0.02)

    @property
    def tcti(self) -> str:
        return f"swtpm:host=127.0.0.1,port={self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.state, ignore_errors=True)


@pytest.fixture
def tpm():
    t = SoftwareTPM()
    yield t
    t.stop()


@pytest.fixture
def kit(real_daemon_kit):
    yield real_daemon_kit
    for user in real_daemon_kit.users:
        try:
            os.unlink(os.path.join(VALUE_FOLDER, str(user.uid)))
        except FileNotFoundError:
            pass


@pytest.fixture
def stack(real_daemon_stack):
    return real_daemon_stack


@pytest.fixture
def passwordless(kit, keywelld):
    """auth: pam_permit then pam_keywell (no password reaches the module), as with pam_fprintd."""
    service = f"keywell-test-{os.getpid()}-nopw"
    lines = [
        "auth     required   pam_permit.so",
        f"auth     optional   {kit.module}",
        "account  required   pam_unix.so",
        "session  required   pam_unix.so",
        f"session  optional   {kit.module} auto_start daemon={keywelld}",
    ]
    (PAM_D / service).write_text("\n".join(lines) + "\n")
    kit.services.append(service)
    return service


# ------------------------------------------------------------------------------------ helpers


def cli(kit, args, user=None, tcti=None, stdin: str = ""):
    """`keywell ARGS`, as root (an administrator through sudo) or, with `user`, as that user."""
    env = dict(CLEAN_ENV) if user is None else kit.user_env(user)
    if tcti is not None:
        env["KEYWELL_TPM_TCTI"] = tcti
    argv = [built("KEYWELL", "keywell"), *args]
    if user is None:
        return subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=60,
                              start_new_session=True)
    return kit.as_user(user, argv, env=env, input=stdin, capture_output=True, text=True, timeout=60,
                       start_new_session=True)


def enable(kit, user, tpm, *options):
    r = cli(kit, ["login-unlock", "enable", *options, user.name], tcti=tpm.tcti, stdin=user.password + "\n")
    assert r.returncode == 0, r
    assert r.stdout.splitlines()[0] == "enabled", r
    kit.secrets.append(value_of(user).hex())
    return r


def pcr_extend(tpm, index: int):
    """Measures something new into SHA-256 PCR `index`, as a firmware or boot loader update would."""
    r = subprocess.run(["tpm2_pcrextend", "--tcti", tpm.tcti, f"{index}:sha256={os.urandom(32).hex()}"],
                       env=CLEAN_ENV, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, f"tpm2_pcrextend (tpm2-tools, scripts/setup.sh) failed: {r}"


def daemon_log(user) -> str:
    """keywelld's log: the file it writes when pam_keywell starts it without a standard error."""
    path = os.path.join(user.home, ".local/state/keywell/keywelld.log")
    assert os.path.exists(path), f"no keywelld log at {path}"
    with open(path, errors="replace") as f:
        return f.read()


def value_of(user) -> bytes:
    with open(os.path.join(VALUE_FOLDER, str(user.uid)), "rb") as f:
        return f.read()


def enrolment_path(user) -> str:
    return os.path.join(user.home, ".local/share/keywell/login-unlock")


def locked(kit, user) -> bool:
    r = dbus_call(kit, user, "info", "login")
    assert "ok" in r, r
    return r["ok"]["locked"]


def logout(service, user):
    r = pamtester(service, user.name, "close_session")
    assert r.ok, r


def login_without_password(service, user):
    r = pamtester(service, user.name, "authenticate", "open_session")
    assert r.ok, r
    assert r.elapsed < LOGIN_BOUND_S, r
    return r


def enrolled_user(kit, stack, tpm):
    """A user whose first (password) login made `login`, with the login unlock enabled, logged out."""
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    enable(kit, user, tpm)
    logout(stack, user)
    assert locked(kit, user) is True
    return user


def control_request(user, op: bytes, fields: list[bytes], as_root: bool = False) -> int:
    """One control request from the user's own process (or root's, as the PAM module sends it);
    returns the status answered."""
    code = (
        "import socket,struct,sys\n"
        "s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
        "fields=[bytes.fromhex(f) for f in sys.argv[3:]]\n"
        "req=b'KWC1'+sys.argv[2].encode()+bytes([len(fields)])+b''.join(struct.pack('>I',len(f))+f for f in fields)\n"
        "s.sendall(req); head=b''\n"
        "while len(head)<12:\n"
        "    c=s.recv(12-len(head))\n"
        "    if not c: break\n"
        "    head+=c\n"
        "print(struct.unpack('>i',head[4:8])[0])\n"
    )
    who = [] if as_root else ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups", "--"]
    r = subprocess.run([*who, "/usr/bin/python3", "-c", code, f"{user.runtime_dir}/keywell/control", op.decode(),
                        *[f.hex() for f in fields]], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.strip())


# ------------------------------------------------------------------------------------ tests


def test_a_login_without_password_unlocks_login(kit, stack, passwordless, tpm):
    user = enrolled_user(kit, stack, tpm)
    folder = os.stat(VALUE_FOLDER)
    assert (stat.S_IMODE(folder.st_mode), folder.st_uid) == (0o700, 0)
    value = os.stat(os.path.join(VALUE_FOLDER, str(user.uid)))
    assert (stat.S_IMODE(value.st_mode), value.st_uid, value.st_size) == (0o600, 0, 32)
    enrolment = os.stat(enrolment_path(user))
    assert (stat.S_IMODE(enrolment.st_mode), enrolment.st_uid) == (0o600, user.uid)

    login_without_password(passwordless, user)
    assert locked(kit, user) is False
    logout(passwordless, user)
    assert locked(kit, user) is True

    # A daemon the login itself starts finds the TPM the enrolment recorded.
    kill_user_processes_but_bus(kit, user)
    login_without_password(passwordless, user)
    assert len(keywelld_pids(user)) == 1
    assert locked(kit, user) is False
    status = cli(kit, ["login-unlock", "status"], user=user)
    assert status.returncode == 0 and status.stdout.splitlines()[0] == "enabled", status


def kill_user_processes_but_bus(kit, user):
    for pid in keywelld_pids(user):
        os.kill(pid, 15)
    deadline = time.monotonic() + 5
    while keywelld_pids(user) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not keywelld_pids(user)


def test_the_users_own_processes_cannot_unseal(kit, stack, passwordless, tpm):
    user = enrolled_user(kit, stack, tpm)
    r = kit.as_user(user, ["cat", os.path.join(VALUE_FOLDER, str(user.uid))], capture_output=True)
    assert r.returncode != 0, "the user can read the authorization value"
    # Even with the value, the user's processes may not send it: only root's may.
    errSecWrPerm = -61
    assert control_request(user, b"T", [value_of(user)]) == errSecWrPerm
    assert control_request(user, b"E", [user.password.encode(), os.urandom(32), b""]) == errSecWrPerm
    assert locked(kit, user) is True
    # A login whose auth checked a password goes the password's way, as before.
    assert login(stack, user).ok
    assert locked(kit, user) is False


def test_a_copy_on_another_tpm_opens_nothing(kit, stack, passwordless, tpm):
    user = enrolled_user(kit, stack, tpm)
    other = SoftwareTPM()
    try:
        path = enrolment_path(user)
        original = open(path).read()
        copied = json.loads(original)
        copied["tcti"] = other.tcti  # the same files, the same value, another TPM
        with open(path, "w") as f:
            json.dump(copied, f)
        login_without_password(passwordless, user)
        assert locked(kit, user) is True, "another TPM unsealed the key"
        logout(passwordless, user)
        assert "did not unseal" in kit.syslog.text()
    finally:
        other.stop()
    with open(path, "w") as f:
        f.write(original)
    login_without_password(passwordless, user)
    assert locked(kit, user) is False


def test_disable_reenable_and_password_change_keep_both_ways(kit, stack, passwordless, tpm):
    user = enrolled_user(kit, stack, tpm)
    r = cli(kit, ["login-unlock", "disable"], user=user)
    assert r.returncode == 0 and r.stdout.splitlines()[0] == "disabled", r
    assert not os.path.exists(enrolment_path(user))
    assert cli(kit, ["login-unlock", "status"], user=user).stdout.splitlines()[0] == "disabled"
    login_without_password(passwordless, user)
    assert locked(kit, user) is True
    logout(passwordless, user)

    first_value = value_of(user)
    enable(kit, user, tpm)
    assert value_of(user) != first_value, "re-enabling keeps an old authorization value"
    new = "Pw-new-" + os.urandom(6).hex()
    kit.secrets.append(new)
    r = pamtester(stack, user.name, "chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)",
                  stdin=f"{user.password}\n{new}\n{new}\n")
    assert r.ok, r
    user.password = new
    login_without_password(passwordless, user)
    assert locked(kit, user) is False
    logout(passwordless, user)
    assert locked(kit, user) is True
    assert login(stack, user).ok  # the new password opens it too
    assert locked(kit, user) is False
    logout(stack, user)

    r = cli(kit, ["login-unlock", "disable", user.name])
    assert r.returncode == 0, r
    assert not os.path.exists(os.path.join(VALUE_FOLDER, str(user.uid)))
    assert not os.path.exists(enrolment_path(user))


def test_without_a_tpm_enable_fails_and_changes_nothing(kit, stack, tpm):
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    nobody = f"swtpm:host=127.0.0.1,port={_free_port_pair()}"
    r = cli(kit, ["login-unlock", "enable", user.name], tcti=nobody, stdin=user.password + "\n")
    assert r.returncode != 0, r
    assert "TPM" in r.stderr, r
    assert not os.path.exists(os.path.join(VALUE_FOLDER, str(user.uid)))
    assert not os.path.exists(enrolment_path(user))
    assert cli(kit, ["login-unlock", "status", user.name]).stdout.splitlines()[0] == "disabled"


def test_enable_needs_root_and_the_login_password(kit, stack, tpm):
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    r = cli(kit, ["login-unlock", "enable"], user=user, tcti=tpm.tcti, stdin=user.password + "\n")
    assert r.returncode != 0 and "sudo" in r.stderr, r
    r = cli(kit, ["login-unlock", "enable", user.name], tcti=tpm.tcti, stdin="not the password\n")
    assert r.returncode != 0, r
    assert not os.path.exists(os.path.join(VALUE_FOLDER, str(user.uid)))
    assert not os.path.exists(enrolment_path(user))


# ------------------------------------------------------------------------------------ boot state


def status_lines(kit, user) -> list[str]:
    r = cli(kit, ["login-unlock", "status"], user=user)
    assert r.returncode == 0, r
    return r.stdout.splitlines()


def test_a_pcr_binding_unlocks_until_a_bound_pcr_changes(kit, stack, passwordless, tpm):
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    r = enable(kit, user, tpm, "--pcrs", "7,0")
    assert "bound to the boot state: SHA-256 PCRs 0,7" in r.stdout, r
    enrolment = json.load(open(enrolment_path(user)))
    assert enrolment["pcrs"] == [0, 7] and len(enrolment["pcrDigest"]) > 0, enrolment
    lines = status_lines(kit, user)
    assert lines[0] == "enabled" and "bound to the boot state: SHA-256 PCRs 0,7" in lines, lines
    logout(stack, user)
    assert locked(kit, user) is True

    login_without_password(passwordless, user)
    assert locked(kit, user) is False, "a PCR-bound enrolment did not unlock"
    logout(passwordless, user)

    # A PCR the binding does not name may change: nothing happens.
    pcr_extend(tpm, 4)
    login_without_password(passwordless, user)
    assert locked(kit, user) is False, "a PCR outside the binding stopped the unlock"
    logout(passwordless, user)
    assert not any(line.startswith("boot state changed") for line in status_lines(kit, user))

    # An update measures something new into PCR 7: the login still succeeds, in its bound time,
    # and leaves `login` locked; the log and `status` say why and what to do.
    pcr_extend(tpm, 7)
    login_without_password(passwordless, user)
    assert locked(kit, user) is True, "the TPM unsealed after a bound PCR changed"
    assert "the boot state changed" in daemon_log(user)
    lines = status_lines(kit, user)
    assert lines[0] == "enabled", lines
    changed = [line for line in lines if line.startswith("boot state changed")]
    assert changed and "login-unlock enable" in changed[0], lines
    logout(passwordless, user)

    # The password login is unaffected.
    assert login(stack, user).ok
    assert locked(kit, user) is False
    # Enabling again seals to the PCRs' new values (the session stays open while it does).
    enable(kit, user, tpm, "--pcrs", "0,7")
    assert not any(line.startswith("boot state changed") for line in status_lines(kit, user))
    logout(stack, user)
    assert locked(kit, user) is True
    login_without_password(passwordless, user)
    assert locked(kit, user) is False, "re-enabling did not seal to the new boot state"
    logout(passwordless, user)


def test_a_pcr_binding_still_needs_the_authorization_value(kit, stack, passwordless, tpm):
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    enable(kit, user, tpm, "--pcrs", "7")
    logout(stack, user)
    errSecAuthFailed = -25293
    # Root with the right boot state but another value: the TPM refuses (PolicyAuthValue).
    assert control_request(user, b"T", [os.urandom(32)], as_root=True) == errSecAuthFailed
    assert control_request(user, b"C", [], as_root=True) == 0
    assert locked(kit, user) is True
    # An enrolment edited to drop the binding: the object's policy still holds, and the value alone
    # (an HMAC session) is not accepted for it.
    path = enrolment_path(user)
    original = open(path).read()
    stripped = json.loads(original)
    del stripped["pcrs"], stripped["pcrDigest"]
    with open(path, "w") as f:
        json.dump(stripped, f)
    login_without_password(passwordless, user)
    assert locked(kit, user) is True, "the binding was dropped by editing the user's file"
    logout(passwordless, user)
    with open(path, "w") as f:
        f.write(original)
    login_without_password(passwordless, user)
    assert locked(kit, user) is False
    logout(passwordless, user)


def test_booting_back_into_the_bound_state_unlocks_again(kit, stack, passwordless, tpm):
    """PCR 23 can be reset (tpm2_pcrreset), standing in for a reboot into the old boot chain."""
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    enable(kit, user, tpm, "--pcrs", "23")
    logout(stack, user)
    pcr_extend(tpm, 23)
    login_without_password(passwordless, user)
    assert locked(kit, user) is True
    logout(passwordless, user)
    assert any(line.startswith("boot state changed") for line in status_lines(kit, user))
    r = subprocess.run(["tpm2_pcrreset", "--tcti", tpm.tcti, "23"], env=CLEAN_ENV, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, f"tpm2_pcrreset failed: {r}"
    login_without_password(passwordless, user)
    assert locked(kit, user) is False, "the bound state is back, but the TPM did not unseal"
    logout(passwordless, user)
    assert not any(line.startswith("boot state changed") for line in status_lines(kit, user))


def test_pcr_option_is_checked_before_anything(kit, stack, tpm):
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    for bad, says in [("24", "not a PCR index"), ("0,1,2,3,4,5,6,7,8", "at most 8"), ("7,x", "not a PCR index"),
                      ("", "names no PCR"), ("-1", "not a PCR index"), ("0" * 100, "longer than")]:
        r = cli(kit, ["login-unlock", "enable", "--pcrs", bad, user.name], tcti=tpm.tcti, stdin=user.password + "\n")
        assert r.returncode != 0 and says in r.stderr, (bad, r)
    r = cli(kit, ["login-unlock", "status", "--pcrs", "7", user.name])
    assert r.returncode == 2 and "enable only" in r.stderr, r
    assert not os.path.exists(os.path.join(VALUE_FOLDER, str(user.uid)))
    assert not os.path.exists(enrolment_path(user))
    # Without the option nothing is bound (the default).
    r = enable(kit, user, tpm)
    assert "not bound to the boot state" in r.stdout, r
    assert "pcrs" not in json.load(open(enrolment_path(user)))
    assert "not bound to the boot state" in status_lines(kit, user)


def test_an_unknown_user_is_a_clear_error(kit):
    """keywell is static: a getpwnam that falls through to NSS modules (systemd, LDAP) crashed it."""
    for action in ("status", "enable", "disable"):
        r = cli(kit, ["login-unlock", action, f"kw-nobody-{os.getpid()}"], stdin="x\n")
        assert r.returncode == 1 and "no such user" in r.stderr, r
