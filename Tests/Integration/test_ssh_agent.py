"""keywelld's SSH agent (docs/ssh.md) with real OpenSSH: `ssh-add` stores ed25519, ECDSA and RSA
keys in the login keychain, `ssh` logs in through the agent to a private `sshd` on loopback, the
keys survive a restart of keywelld (and a PAM login unlocks them), a locked keychain lists but
does not sign (and does not hang), `ssh-add -d/-D/-x/-X` behave as with OpenSSH's agent (each
step run against a real `ssh-agent` too, and compared), a certificate is kept in its key's one
item and logs in to an sshd that trusts its CA, another user cannot use the socket, a program not
on a key's list is refused when nobody allows it, no private key byte reaches the keychain file,
git signs commits through it, and bad frames fail without harming the agent.

Needs root (the private sshd and throwaway users), KEYWELL, KEYWELLD and PAM_KEYWELL_SO
(scripts/test.sh sets them), openssh-client, openssh-server, pamtester and git (scripts/setup.sh).
"""

from __future__ import annotations

import base64
import os
import pwd
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from access_control_helpers import PASSWORD, AccessAccount
from keywell_helpers import ROOT, bodies_as_test_user, built, keywelld, module, real_daemon_kit, wait_for  # noqa: F401 (fixtures)
from pam_helpers import ensure_runtime_dir, keywelld_pids
from pam_helpers import login as pam_login
from skip_helpers import cannot_run

SSHD = "/usr/sbin/sshd"


@pytest.fixture
def account():
    if os.geteuid() != 0:
        cannot_run("needs root: a private sshd and a throwaway user")
    for tool in ("ssh", "ssh-add", "ssh-keygen", SSHD, "git"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is needed: run scripts/setup.sh")
    a = AccessAccount(built("KEYWELL", "keywell"), built("KEYWELLD", "keywelld"))
    a.agent = Path(a.env["XDG_RUNTIME_DIR"]) / "keywell" / "ssh-agent"
    a.env["SSH_AUTH_SOCK"] = str(a.agent)
    a.keys = a.root / "keys"
    a.keys.mkdir(mode=0o700)
    a.owner.give(a.keys)
    try:
        wait_for(a.agent.is_socket, "keywelld's agent socket")
        yield a
    finally:
        a.close()


def run(account, *args, input=None, timeout=60, env=None):
    return subprocess.run(list(args), env=dict(account.env, **(env or {})), input=input, capture_output=True,
                          text=True, timeout=timeout, **account.owner.spawn)


def make_key(account, kind: str, bits: str | None = None) -> Path:
    path = account.keys / f"id_{kind}{bits or ''}"
    r = run(account, "ssh-keygen", "-q", "-t", kind, *(["-b", bits] if bits else []), "-N", "", "-C", f"{kind} key",
            "-f", str(path))
    assert r.returncode == 0, r.stderr
    return path


def listed(account) -> list[str]:
    r = run(account, "ssh-add", "-l")
    return r.stdout.splitlines() if r.returncode == 0 else []


def fingerprint(path: Path) -> str:
    return subprocess.run(["ssh-keygen", "-lf", str(path)], capture_output=True, text=True, check=True).stdout.split()[1]


def keywelld_pid(account) -> int:
    return int((Path(account.env["XDG_RUNTIME_DIR"]) / "keywell" / "keywelld.lock").read_text().split()[0])


def sign(account, program: str, key: Path, data: Path, timeout=60):
    return run(account, program, "-Y", "sign", "-n", "file", "-f", f"{key}.pub", str(data), timeout=timeout)


class Sshd:
    """A private sshd on a loopback port, as root, with its own host key and config."""

    def __init__(self, folder: Path, owner=ROOT):
        folder.mkdir(mode=0o700, exist_ok=True)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self.authorized = folder / "authorized_keys"
        self.host_key = folder / "host_ed25519"
        # A user certificate authority: keys it signs log in without authorized_keys.
        self.ca = folder / "user_ca"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.ca)], check=True)
        self.authorized.write_text("")
        host_key = folder / "host_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)], check=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = folder / "sshd_config"
        config.write_text(f"""ListenAddress 127.0.0.1
Port {self.port}
HostKey {self.host_key}
UsePAM no
AuthorizedKeysFile {self.authorized}
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
PidFile none
TrustedUserCAKeys {self.ca}.pub
""")
        self.log = folder / "sshd.log"
        self.log.touch()
        # Root's sshd reads these wherever they are; the test user's tests write and sign with them.
        owner.give(self.authorized, self.ca, Path(f"{self.ca}.pub"), Path(f"{self.host_key}.pub"), self.log, folder)
        self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=open(self.log, "wb"))
        wait_for(self.listening, "sshd to listen")

    def listening(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def trust_only(self, key: Path) -> None:
        self.authorized.write_text(Path(f"{key}.pub").read_text())

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def sshd(account):
    server = Sshd(account.root / "sshd", account.owner)
    try:
        yield server
    finally:
        server.close()


def ssh_command(agent: Path, sshd: Sshd, program="ssh") -> list[str]:
    """ssh to root at the private sshd, with `agent` as its only source of keys."""
    return [program, "-F", "/dev/null", "-o", f"IdentityAgent={agent}", "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-p", str(sshd.port), "root@127.0.0.1", "echo logged-in"]


def login(account, sshd: Sshd, timeout=60, program="ssh"):
    return run(account, *ssh_command(account.agent, sshd, program), timeout=timeout)


def test_keys_of_every_type_are_stored_and_log_in_through_the_agent(account, sshd):
    keys = [make_key(account, "ed25519"), make_key(account, "ecdsa", "256"), make_key(account, "ecdsa", "384"),
            make_key(account, "ecdsa", "521"), make_key(account, "rsa", "3072")]
    for key in keys:
        r = run(account, "ssh-add", str(key))
        assert r.returncode == 0, r.stderr
    assert len(listed(account)) == len(keys)
    # Stored as `keys` items in the login keychain.
    dump = run(account, built("KEYWELL", "keywell"), "dump-keychain", "login").stdout
    assert dump.count('class: "keys"') == len(keys), dump
    for key in keys:
        assert f'"fprt"<blob>="{fingerprint(key)}"' in dump, dump
        kind = next(kind for kind in ("ed25519", "ecdsa", "rsa") if kind in key.name)
        assert f'0x00000007 <blob>="{kind} key"' in dump, dump
    for key in keys:
        sshd.trust_only(key)
        r = login(account, sshd)
        assert r.stdout.strip() == "logged-in", f"{key.name}: {r.stderr} {sshd.log.read_text()[-2000:]}"


def test_keys_survive_a_restart_and_sign_once_login_is_unlocked(account, sshd):
    key = make_key(account, "ed25519")
    assert run(account, "ssh-add", str(key)).returncode == 0
    os.kill(keywelld_pid(account), signal.SIGTERM)
    wait_for(lambda: not account.agent.exists(), "keywelld to exit")
    # The next call starts keywelld again (bus activation); login starts locked.
    r = run(account, built("KEYWELL", "keywell"), "unlock-keychain", "-p", PASSWORD, "login")
    assert r.returncode == 0, r.stderr
    wait_for(account.agent.is_socket, "the agent socket after the restart")
    assert fingerprint(key) in "\n".join(listed(account))
    sshd.trust_only(key)
    assert login(account, sshd).stdout.strip() == "logged-in"


def test_a_pam_login_after_a_restart_serves_keys_without_their_passphrase(real_daemon_kit, keywelld):
    """The whole way a desktop takes: a PAM login starts keywelld and unlocks `login`; a key added
    with its passphrase once is, after keywelld restarts and the next PAM login, listed and
    signs, with no passphrase and no key file."""
    kit = real_daemon_kit
    if shutil.which("ssh-add") is None or not Path(SSHD).exists():
        pytest.fail("openssh-client and openssh-server are needed: run scripts/setup.sh")
    stack = kit.stack(daemon=keywelld)
    user = kit.user()
    ensure_runtime_dir(user)
    assert pam_login(stack, user).ok
    agent = Path(user.runtime_dir) / "keywell" / "ssh-agent"
    wait_for(agent.is_socket, "keywelld's agent socket after the PAM login")
    env = dict(kit.user_env(user), SSH_AUTH_SOCK=str(agent))

    def as_user(*args, extra=None):
        return kit.as_user(user, list(args), env=dict(env, **(extra or {})), capture_output=True, text=True, timeout=60)

    keys = Path(user.home) / "keys"
    keys.mkdir(mode=0o700)
    os.chown(keys, user.uid, user.gid)
    key = keys / "id_ed25519"
    passphrase = "Ph-" + secrets.token_urlsafe(12)
    kit.secrets.append(passphrase)
    r = as_user("ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "pam key", "-f", str(key))
    assert r.returncode == 0, r.stderr
    askpass = Path(kit.script(f"#!/bin/sh\necho '{passphrase}'\n"))
    r = as_user("ssh-add", str(key), extra={"SSH_ASKPASS": str(askpass), "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"})
    assert r.returncode == 0, r.stderr
    key.unlink()  # the keychain's copy is the only one now
    askpass.unlink()
    sshd = Sshd(Path(kit.bindir()) / "sshd")
    try:
        sshd.trust_only(key)
        assert as_user(*ssh_command(agent, sshd)).stdout.strip() == "logged-in"
        for pid in keywelld_pids(user):
            os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not keywelld_pids(user) and not agent.exists(), "keywelld to exit")
        # The next login starts keywelld again and unlocks `login` with the login password.
        assert pam_login(stack, user).ok
        wait_for(agent.is_socket, "the agent socket after the second PAM login")
        r = as_user("ssh-add", "-l")
        assert r.returncode == 0 and fingerprint(Path(f"{key}.pub")) in r.stdout, r
        # No askpass, no display, no terminal: nothing could type a passphrase.
        r = as_user(*ssh_command(agent, sshd))
        assert r.stdout.strip() == "logged-in", f"{r.stderr} {sshd.log.read_text()[-2000:]}"
    finally:
        sshd.close()


def test_a_locked_keychain_lists_its_keys_but_does_not_sign_and_does_not_hang(account):
    key = make_key(account, "ed25519")
    assert run(account, "ssh-add", str(key)).returncode == 0
    assert run(account, built("KEYWELL", "keywell"), "lock-keychain", "login").returncode == 0
    assert fingerprint(key) in "\n".join(listed(account))
    data = account.keys / "data"
    data.write_text("to sign\n")
    # The password dialog is cancelled: no signature, at once.
    account.answer([])
    started = time.monotonic()
    r = sign(account, "ssh-keygen", key, data, timeout=30)
    assert r.returncode != 0
    assert time.monotonic() - started < 10
    assert account.questions == 1
    # The right password in the dialog unlocks the keychain, then the signature is made.
    account.answer([PASSWORD])
    r = sign(account, "ssh-keygen", key, data, timeout=60)
    assert r.returncode == 0, r.stderr
    assert account.questions == 2
    # Unlocked as unlock-keychain leaves it: the next signature asks nothing.
    account.answer([])
    assert sign(account, "ssh-keygen", key, data).returncode == 0
    assert account.questions == 2


def test_delete_delete_all_lock_and_unlock_as_openssh_does(account, openssh_agent):
    """Each step against keywelld and OpenSSH's ssh-agent: same exit status, same output."""
    first, second = make_key(account, "ed25519"), make_key(account, "ecdsa", "256")
    for key in (first, second):
        ssh_add_both(account, openssh_agent, str(key))
    assert ssh_add_both(account, openssh_agent, "-d", f"{first}.pub").returncode == 0
    assert [fingerprint(second)] == [line.split()[1] for line in listings_match(account, openssh_agent)]
    assert ssh_add_both(account, openssh_agent, "-d", f"{first}.pub").returncode != 0
    # -x / -X: the passphrase comes from SSH_ASKPASS when there is no terminal.
    env = askpass(account, "agent-lock", "agent-lock")
    assert ssh_add_both(account, openssh_agent, "-x", env=env).returncode == 0
    assert listings_match(account, openssh_agent) == []
    # Locked: no signature, no add, no removal.
    assert ssh_add_both(account, openssh_agent, str(first)).returncode != 0
    assert ssh_add_both(account, openssh_agent, "-D").returncode != 0
    wrong = askpass(account, "not-it", "not-it")
    assert ssh_add_both(account, openssh_agent, "-X", env=wrong).returncode != 0
    assert ssh_add_both(account, openssh_agent, "-X", env=env).returncode == 0
    assert len(listings_match(account, openssh_agent)) == 1
    assert ssh_add_both(account, openssh_agent, "-D").returncode == 0
    assert listings_match(account, openssh_agent) == []
    assert key_items(account) == 0


def test_constrained_keys_stay_in_memory(account):
    key = make_key(account, "ed25519")
    assert run(account, "ssh-add", "-t", "600", str(key)).returncode == 0
    assert len(listed(account)) == 1
    dump = run(account, built("KEYWELL", "keywell"), "dump-keychain", "login").stdout
    assert 'class: "keys"' not in dump


def test_a_program_not_on_the_list_is_refused_while_ssh_keygen_signs(account):
    key = make_key(account, "ed25519")
    assert run(account, "ssh-add", str(key)).returncode == 0
    data = account.keys / "data"
    data.write_text("to sign\n")
    copy = account.scratch / "other-signer"
    shutil.copyfile("/usr/bin/ssh-keygen", copy)
    copy.chmod(0o755)
    account.answer([])  # nobody allows it: Deny
    r = sign(account, str(copy), key, data)
    assert r.returncode != 0
    assert account.questions == 1
    r = sign(account, "/usr/bin/ssh-keygen", key, data)
    assert r.returncode == 0, r.stderr
    assert account.questions == 1


def test_no_private_key_byte_is_in_the_keychain_file(account):
    key = make_key(account, "ed25519")
    assert run(account, "ssh-add", str(key)).returncode == 0
    seed = ed25519_seed(key)
    for path in account.keychains.iterdir():
        content = path.read_bytes()
        assert seed not in content, f"{path.name} holds the private key"
        assert seed[:16] not in content


def ed25519_seed(key: Path) -> bytes:
    """The 32-byte seed of an unencrypted OpenSSH Ed25519 private key file."""
    return ed25519_secret(key)[:32]


def ed25519_secret(key: Path) -> bytes:
    """The 64-byte secret key (seed, then public key) of an unencrypted OpenSSH Ed25519 private key file."""
    lines = key.read_text().splitlines()
    blob = base64.b64decode("".join(lines[1:-1]))
    offset = len(b"openssh-key-v1\0")

    def string():
        nonlocal offset
        (length,) = struct.unpack(">I", blob[offset:offset + 4])
        offset += 4 + length
        return blob[offset - length:offset]

    string(), string(), string()  # cipher, kdf, kdf options
    offset += 4  # number of keys
    string()  # public key
    private = string()
    offset = 8  # the two check numbers
    blob = private
    string(), string()  # type, public key
    return string()


def wire_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def test_git_signs_commits_through_the_agent(account):
    key = make_key(account, "ed25519")
    assert run(account, "ssh-add", str(key)).returncode == 0
    repo = account.root / "repo"
    signers = account.keys / "allowed_signers"
    signers.write_text(f"tester@example.com {Path(f'{key}.pub').read_text()}")
    git = ["git", "-C", str(repo)]
    assert run(account, "git", "init", "-q", str(repo)).returncode == 0
    for name, value in (("user.name", "Tester"), ("user.email", "tester@example.com"), ("gpg.format", "ssh"),
                        ("user.signingkey", f"{key}.pub"), ("gpg.ssh.allowedSignersFile", str(signers))):
        assert run(account, *git, "config", name, value).returncode == 0
    r = run(account, *git, "commit", "-q", "-S", "--allow-empty", "-m", "signed")
    assert r.returncode == 0, r.stderr
    r = run(account, *git, "verify-commit", "HEAD")
    assert r.returncode == 0, r.stderr
    assert "Good" in r.stderr


def frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def request(agent: Path, body: bytes) -> bytes:
    """One request on a connection kept open until its reply came: the reply's body."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(15)
        s.connect(str(agent))
        s.sendall(frame(body))
        reply = b""
        while len(reply) < 4 or len(reply) < 4 + struct.unpack(">I", reply[:4])[0]:
            chunk = s.recv(4096)
            assert chunk, "the agent closed the connection without a whole reply"
            reply += chunk
        return reply[4:]


def exchange(account, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(15)
        s.connect(str(account.agent))
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
        return reply


def test_malformed_and_oversized_frames_fail_and_the_agent_lives(account):
    key = make_key(account, "ed25519")
    assert run(account, "ssh-add", str(key)).returncode == 0
    failure = frame(bytes([5]))
    assert exchange(account, struct.pack(">I", 256 * 1024 + 1) + b"\x0b") == failure
    assert exchange(account, frame(bytes([17]) + b"\x00\x00\x00\x0bssh-ed25519\x00\x00")) == failure
    assert exchange(account, frame(bytes([17]) + b"\x00\x00\x00\x07ssh-dss" + b"\x00" * 8)) == failure
    assert exchange(account, frame(b"")) == failure
    assert exchange(account, frame(bytes([13]) + b"\xff\xff\xff\xff")) == failure
    # A truncated frame: the agent waits for the rest, then the connection ends without a reply.
    assert exchange(account, struct.pack(">I", 100) + b"\x0b") == b""
    assert len(listed(account)) == 1


def test_another_user_cannot_use_the_socket(account):
    name = "kwssh" + secrets.token_hex(4)
    subprocess.run(["useradd", "-M", "-s", "/bin/sh", name], check=True, capture_output=True)
    runtime = Path(account.env["XDG_RUNTIME_DIR"])
    try:
        user = pwd.getpwnam(name)
        as_user = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--"]
        env = {"PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": str(account.agent), "HOME": "/"}
        r = subprocess.run([*as_user, "ssh-add", "-l"], env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, r  # cannot connect: the folders are private
        # Even with the folders opened up, keywelld closes a stranger's connection unanswered.
        modes = [(p, p.stat().st_mode & 0o7777) for p in (account.root, runtime, runtime / "keywell", account.agent)]
        for path, _ in modes:
            path.chmod(0o777 if path == account.agent else 0o711)
        try:
            r = subprocess.run([*as_user, "ssh-add", "-l"], env=env, capture_output=True, text=True, timeout=30)
            assert r.returncode != 0 and "ED25519" not in r.stdout, r
        finally:
            for path, mode in modes:
                path.chmod(mode)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def test_print_socket_and_doctor_name_the_agent(account):
    keywell = built("KEYWELL", "keywell")
    r = run(account, keywell, "ssh-agent", "--print-socket")
    assert r.returncode == 0 and r.stdout.strip() == str(account.agent), r
    doctor = run(account, keywell, "doctor").stdout
    assert f"ok      SSH agent: SSH_AUTH_SOCK is Keywell's agent, {account.agent}" in doctor, doctor
    elsewhere = run(account, keywell, "doctor", env={"SSH_AUTH_SOCK": "/tmp/another-agent"}).stdout
    assert "note    SSH agent: SSH_AUTH_SOCK is /tmp/another-agent, another agent" in elsewhere, elsewhere


def askpass(account, name: str, passphrase: str) -> dict:
    script = account.keys / name
    script.write_text(f"#!/bin/sh\necho '{passphrase}'\n")
    script.chmod(0o700)
    return {"SSH_ASKPASS": str(script), "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"}


def test_keywell_ssh_add_imports_key_files(account):
    keywell = built("KEYWELL", "keywell")
    assert run(account, keywell, "create-keychain", "-p", "work-pw", "work").returncode == 0
    plain = make_key(account, "ecdsa", "384")
    r = run(account, keywell, "ssh-add", "-k", "work", "-T", "/usr/bin/true", str(plain))
    assert r.returncode == 0, r.stderr
    dump = run(account, keywell, "dump-keychain", "-a", "work").stdout
    # Programs only root can replace are named by their path alone (docs/access-control.md).
    assert 'class: "keys"' in dump and ": exe:/usr/bin/true\n" in dump and ": exe:/usr/bin/ssh\n" in dump, dump
    assert "ssh-add" not in dump  # an import trusts ssh, ssh-keygen and -T, not the importer
    # A file with a passphrase: asked as ssh-add asks (here through SSH_ASKPASS).
    locked = account.keys / "id_locked"
    assert run(account, "ssh-keygen", "-q", "-t", "ed25519", "-N", "pass phrase", "-C", "locked key", "-f",
               str(locked)).returncode == 0
    r = run(account, keywell, "ssh-add", str(locked), env=askpass(account, "wrong-pass", "not it"))
    assert r.returncode == 1 and "wrong passphrase" in r.stderr, r
    assert listed(account) == []
    r = run(account, keywell, "ssh-add", str(locked), env=askpass(account, "right-pass", "pass phrase"))
    assert r.returncode == 0, r.stderr
    assert [fingerprint(locked)] == [line.split()[1] for line in listed(account)]
    # No decrypted copy is left behind.
    assert not list(Path(account.env["XDG_RUNTIME_DIR"]).glob("keywell-ssh-add.*"))
    not_a_key = account.keys / "not-a-key"
    not_a_key.write_text("hello\n")
    r = run(account, keywell, "ssh-add", str(not_a_key))
    assert r.returncode == 1 and "not an OpenSSH private key file" in r.stderr, r


def test_keywell_ssh_add_imports_certificates_beside_their_keys(account, sshd, openssh_agent):
    keywell = built("KEYWELL", "keywell")
    keys = [make_key(account, "ed25519"), make_key(account, "ecdsa", "384"), make_key(account, "rsa", "2048")]
    for key in keys:
        certify(sshd.ca, key)
        r = run(account, keywell, "ssh-add", str(key))
        assert r.returncode == 0 and f"Certificate added to the default keychain: {key}-cert.pub" in r.stderr, r
        assert run(account, "ssh-add", str(key), env={"SSH_AUTH_SOCK": str(openssh_agent.socket)}).returncode == 0
    # The same keys and certificates as OpenSSH's agent holds from `ssh-add`, one item per key.
    ours, theirs = (sorted(run(account, "ssh-add", "-L", env=env).stdout.splitlines())
                    for env in ({}, {"SSH_AUTH_SOCK": str(openssh_agent.socket)}))
    assert ours == theirs and len(ours) == 6, (ours, theirs)
    assert key_items(account) == 3
    sshd.authorized.write_text("")
    assert login(account, sshd).stdout.strip() == "logged-in"
    # A certificate of another key: the key is imported, the certificate refused with a clear error.
    other = account.keys / "id_other"
    assert run(account, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)).returncode == 0
    Path(f"{other}-cert.pub").write_text(Path(f"{keys[0]}-cert.pub").read_text())
    r = run(account, keywell, "ssh-add", str(other))
    assert r.returncode == 1 and "did not store the certificate" in r.stderr, r
    assert key_items(account) == 4 and len(listed(account)) == 7
    # One of another type: refused before it is sent.
    Path(f"{other}-cert.pub").write_text(Path(f"{keys[1]}-cert.pub").read_text())
    r = run(account, keywell, "ssh-add", str(other))
    assert r.returncode == 1 and "the certificate is of type ecdsa-sha2-nistp384, the key of type ssh-ed25519" in r.stderr, r
    assert key_items(account) == 4 and len(listed(account)) == 7


def test_a_program_not_on_the_list_is_asked_with_the_host_ssh_bound(account, sshd):
    key = make_key(account, "ed25519")
    assert run(account, "ssh-add", str(key)).returncode == 0
    sshd.trust_only(key)
    other_ssh = account.scratch / "other-ssh"
    shutil.copyfile("/usr/bin/ssh", other_ssh)
    other_ssh.chmod(0o755)
    account.answer(["allow"])
    r = login(account, sshd, program=str(other_ssh))
    assert r.stdout.strip() == "logged-in", r.stderr
    assert account.questions == 1
    # ssh bound the connection to the host (session-bind, its signature checked): the question names it.
    host = fingerprint(Path(f"{sshd.host_key}.pub"))
    assert any(host in text for text in account.descriptions()), account.descriptions()


class OpenSSHAgent:
    """OpenSSH's own ssh-agent on a private socket: what `ssh-add` should print against ours."""

    def __init__(self, account, folder: Path):
        folder.mkdir(mode=0o700, exist_ok=True)
        account.owner.give(folder)
        self.socket = folder / "agent.sock"
        self.process = subprocess.Popen(["ssh-agent", "-D", "-a", str(self.socket)], env=account.env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **account.owner.spawn)
        wait_for(self.socket.is_socket, "OpenSSH's ssh-agent to listen")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def openssh_agent(account):
    agent = OpenSSHAgent(account, account.root / "openssh-agent")
    try:
        yield agent
    finally:
        agent.close()


def ssh_add_both(account, openssh_agent, *args, env=None):
    """Runs `ssh-add ARGS` against keywelld, then against OpenSSH's agent, and checks that both
    answered alike (exit status and output). Returns keywelld's result."""
    ours = run(account, "ssh-add", *args, env=env)
    theirs = run(account, "ssh-add", *args, env=dict(env or {}, SSH_AUTH_SOCK=str(openssh_agent.socket)))
    assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr), \
        f"ssh-add {' '.join(args)}: keywelld {ours} / ssh-agent {theirs}"
    return ours


def listings_match(account, openssh_agent) -> list[str]:
    """`ssh-add -l` and `-L` print the same against both agents; returns keywelld's `-l` lines."""
    ssh_add_both(account, openssh_agent, "-L")
    r = ssh_add_both(account, openssh_agent, "-l")
    return r.stdout.splitlines() if r.returncode == 0 else []


def key_items(account) -> int:
    dump = run(account, built("KEYWELL", "keywell"), "dump-keychain", "login").stdout
    return dump.count('class: "keys"')


def restart_keywelld(account) -> None:
    """Stops keywelld; the next call starts it again (bus activation) and unlocks `login`."""
    os.kill(keywelld_pid(account), signal.SIGTERM)
    wait_for(lambda: not account.agent.exists(), "keywelld to exit")
    r = run(account, built("KEYWELL", "keywell"), "unlock-keychain", "-p", PASSWORD, "login")
    assert r.returncode == 0, r.stderr
    wait_for(account.agent.is_socket, "the agent socket after the restart")


def certify(ca: Path, key: Path) -> Path:
    """key-cert.pub beside the key: a user certificate for root, signed by `ca`."""
    r = subprocess.run(["ssh-keygen", "-q", "-s", str(ca), "-I", "tester", "-n", "root", f"{key}.pub"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return Path(f"{key}-cert.pub")


@pytest.mark.parametrize("kind,bits", [("ed25519", None), ("ecdsa", "256"), ("rsa", "2048")])
def test_a_certificate_is_kept_with_its_keys_item_logs_in_and_survives_a_restart(account, sshd, openssh_agent, kind, bits):
    key = make_key(account, kind, bits)
    certify(sshd.ca, key)
    # ssh-add adds the key and, beside it, key-cert.pub: both listed, as OpenSSH's agent lists them.
    r = ssh_add_both(account, openssh_agent, str(key))
    assert "Certificate added" in r.stderr, r.stderr
    lines = listings_match(account, openssh_agent)
    assert len(lines) == 2 and lines[1].endswith("-CERT)"), lines
    assert {line.split()[1] for line in lines} == {fingerprint(key)}
    # One `keys` item holds the key and its certificate.
    assert key_items(account) == 1
    sshd.authorized.write_text("")  # only the certificate can log in
    r = login(account, sshd)
    assert r.stdout.strip() == "logged-in", f"{r.stderr} {sshd.log.read_text()[-2000:]}"
    # After a restart and an unlock, the certificate is served again from that item.
    restart_keywelld(account)
    assert listings_match(account, openssh_agent) == lines
    r = login(account, sshd)
    assert r.stdout.strip() == "logged-in", f"{r.stderr} {sshd.log.read_text()[-2000:]}"
    assert key_items(account) == 1
    # Adding the same key and certificate again changes nothing.
    ssh_add_both(account, openssh_agent, str(key))
    assert listings_match(account, openssh_agent) == lines and key_items(account) == 1


def test_removing_a_certificate_or_its_key_as_openssh_does(account, sshd, openssh_agent):
    key = make_key(account, "ed25519")
    cert = certify(sshd.ca, key)
    ssh_add_both(account, openssh_agent, str(key))
    # The certificate alone: the plain key stays.
    ssh_add_both(account, openssh_agent, "-d", str(cert))
    assert [line.endswith("(ED25519)") for line in listings_match(account, openssh_agent)] == [True]
    assert key_items(account) == 1
    ssh_add_both(account, openssh_agent, "-d", str(cert))  # gone already: a failure, alike
    # Added again: it joins the same item.
    ssh_add_both(account, openssh_agent, str(key))
    assert len(listings_match(account, openssh_agent)) == 2 and key_items(account) == 1
    # The plain key alone (-k skips certificates): the certificate is still listed and logs in.
    ssh_add_both(account, openssh_agent, "-k", "-d", str(key))
    assert [line.endswith("(ED25519-CERT)") for line in listings_match(account, openssh_agent)] == [True]
    assert key_items(account) == 1
    sshd.authorized.write_text("")
    assert login(account, sshd).stdout.strip() == "logged-in"
    # Only the certificate's identity signs: the plain key was removed (and its file is away, so
    # that ssh-keygen cannot sign with the file itself).
    data = account.keys / "data"
    data.write_text("to sign\n")
    key.rename(account.keys / "moved")
    assert sign(account, "ssh-keygen", key, data).returncode != 0
    (account.keys / "moved").rename(key)
    restart_keywelld(account)
    assert [line.endswith("(ED25519-CERT)") for line in listings_match(account, openssh_agent)] == [True]
    # -d of the key file removes the key (absent now) and then its certificate: nothing is left.
    ssh_add_both(account, openssh_agent, "-d", str(key))
    assert listings_match(account, openssh_agent) == [] and key_items(account) == 0
    # -D removes keys and certificates alike.
    ssh_add_both(account, openssh_agent, str(key))
    ssh_add_both(account, openssh_agent, "-D")
    assert listings_match(account, openssh_agent) == [] and key_items(account) == 0


def test_a_certificate_added_alone_gets_an_item_the_key_then_joins(account, sshd, openssh_agent):
    """A client may add a certificate without its plain key (one ADD_IDENTITY with the cert's
    type): listed alone, as OpenSSH's agent lists it; the key added later joins the same item."""
    key = make_key(account, "ed25519")
    cert = certify(sshd.ca, key)
    secret = ed25519_secret(key)
    message = bytes([17]) + wire_string(b"ssh-ed25519-cert-v01@openssh.com") \
        + wire_string(base64.b64decode(cert.read_text().split()[1])) + wire_string(secret[32:]) + wire_string(secret) \
        + wire_string(b"ed25519 key")
    for agent in (account.agent, openssh_agent.socket):
        assert request(agent, message) == bytes([6]), agent
    assert [line.endswith("(ED25519-CERT)") for line in listings_match(account, openssh_agent)] == [True]
    assert key_items(account) == 1
    sshd.authorized.write_text("")
    assert login(account, sshd).stdout.strip() == "logged-in"
    # OpenSSH lists in the order keys came; keywelld lists a key's item plain key first.
    ssh_add_both(account, openssh_agent, "-k", str(key))
    ours, theirs = (sorted(run(account, "ssh-add", "-l", env=env).stdout.splitlines())
                    for env in ({}, {"SSH_AUTH_SOCK": str(openssh_agent.socket)}))
    assert ours == theirs and len(ours) == 2, (ours, theirs)
    assert key_items(account) == 1
    for path in account.keychains.iterdir():
        assert secret[:32] not in path.read_bytes(), f"{path.name} holds the private key"


def test_a_key_keeps_at_most_eight_certificates_and_expired_ones_make_room(account):
    key = make_key(account, "ed25519")
    ca = account.keys / "ca"
    assert run(account, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ca)).returncode == 0

    def add_certificate(serial: int, validity: str) -> subprocess.CompletedProcess:
        r = run(account, "ssh-keygen", "-q", "-s", str(ca), "-I", f"cert {serial}", "-n", "root", "-z", str(serial),
                "-V", validity, f"{key}.pub")
        assert r.returncode == 0, r.stderr
        return run(account, "ssh-add", str(key))

    # One that expired long ago, then seven that have not: eight certificates beside the key.
    assert "Certificate added" in add_certificate(1, "20200101:20200102").stderr
    for serial in range(2, 9):
        assert "Certificate added" in add_certificate(serial, "-1d:+1d").stderr
    assert len(listed(account)) == 9
    # A ninth: the expired one makes room.
    expired = run(account, "ssh-add", "-L").stdout.splitlines()[1]
    assert "Certificate added" in add_certificate(9, "-1d:+1d").stderr
    after = run(account, "ssh-add", "-L").stdout.splitlines()
    assert len(after) == 9 and expired not in after
    # A tenth, with none expired: refused, and the item is as it was.
    r = add_certificate(10, "-1d:+1d")
    assert "Certificate added" not in r.stderr, r.stderr
    assert run(account, "ssh-add", "-L").stdout.splitlines() == after
    assert key_items(account) == 1


def test_a_certificate_that_does_not_verify_is_refused(account, sshd, openssh_agent):
    key = make_key(account, "ecdsa", "256")
    cert = certify(sshd.ca, key)
    kind, blob, *rest = cert.read_text().split()
    raw = bytearray(base64.b64decode(blob))
    raw[-5] ^= 1  # inside the CA's signature
    cert.write_text(" ".join([kind, base64.b64encode(bytes(raw)).decode(), *rest]) + "\n")
    r = ssh_add_both(account, openssh_agent, str(key))
    assert "Certificate added" not in r.stderr, r.stderr
    assert len(listings_match(account, openssh_agent)) == 1
    dump = run(account, built("KEYWELL", "keywell"), "dump-keychain", "login").stdout
    assert dump.count('class: "keys"') == 1 and '"cert"' not in dump, dump


def test_backup_export_and_import_carry_key_items_and_their_certificates(account):
    keywell = built("KEYWELL", "keywell")
    key = make_key(account, "ed25519")
    ca = account.keys / "ca"
    assert run(account, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ca)).returncode == 0
    certify(ca, key)
    assert run(account, "ssh-add", str(key)).returncode == 0
    before = listed(account)
    assert len(before) == 2 and key_items(account) == 1, before
    # A backup is the keychain file: restored, it serves the key and its certificate again.
    backup = account.keys / "login.backup"
    assert run(account, keywell, "backup", "-k", "login", str(backup)).returncode == 0
    assert run(account, "ssh-add", "-D").returncode == 0 and listed(account) == []
    r = run(account, keywell, "restore", "-f", str(backup), "login")
    assert r.returncode == 0, r.stderr
    assert listed(account) == before
    assert run(account, keywell, "unlock-keychain", "-p", PASSWORD, "login").returncode == 0
    exported = account.keys / "keys.export"
    # keywell is not on the key's list: exporting its secret is asked about like any read.
    account.answer(["allow"])
    r = run(account, keywell, "export", "-k", "login", str(exported), input="export pass\n")
    assert r.returncode == 0, r.stderr
    assert run(account, keywell, "create-keychain", "-p", "other-pw", "other").returncode == 0
    r = run(account, keywell, "import", "-k", "other", str(exported), input="export pass\n")
    assert r.returncode == 0, r.stderr
    dump = run(account, keywell, "dump-keychain", "other").stdout
    assert f'"fprt"<blob>="{fingerprint(key)}"' in dump and dump.count('class: "keys"') == 1, dump
    # Served from the imported copy alone, still trusting ssh-keygen.
    assert run(account, keywell, "delete-keychain", "login").returncode == 0
    assert run(account, keywell, "list-keychains", "-s", "other").returncode == 0
    # The key and its certificate, from the one imported item.
    assert listed(account) == before
    data = account.keys / "data"
    data.write_text("to sign\n")
    asked = account.questions
    account.answer([])
    r = sign(account, "ssh-keygen", key, data)
    assert r.returncode == 0, r.stderr
    assert account.questions == asked


# The tests' bodies run as the test user (its ssh, ssh-add, git and key files), but these two:
bodies_as_test_user(globals(), as_root={
    "test_a_pam_login_after_a_restart_serves_keys_without_their_passphrase": "a PAM login needs root",
    "test_another_user_cannot_use_the_socket": "root makes the second user and opens the folders to it",
})
