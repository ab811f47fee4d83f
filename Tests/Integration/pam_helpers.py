"""Shared pieces of the PAM integration tests (test_pam.py, test_pam_daemon.py).

Everything here runs as root: it makes throwaway users, writes /etc/pam.d/keywell-test-<pid>, drives
the real PAM stack with pamtester and listens to syslog. All of it is undone afterwards, also
when a test fails.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import grp
import hashlib
import json
import os
import pty
import pwd
import secrets
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import syslog_relay

import pytest

REPO = Path(__file__).resolve().parents[2]
# One PAM service per test process: test runs side by side (several worktrees on one machine)
# would otherwise rewrite each other's stack between a test's writing it and its login.
SERVICE = f"keywell-test-{os.getpid()}"
PAM_D = Path("/etc/pam.d")
# What PAM sees as the process environment: nothing that points at the caller's runtime folder.
CLEAN_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}

# What the module may spend on the daemon in one PAM phase (docs/control-protocol.md).
PHASE_BUDGET_S = 3.0
# A login, a password change or a close must never take longer than this, whatever the daemon
# does: the budget once, plus ample slack for pam_unix's hashing and starting processes on a busy
# 2-core machine. A module that waited without its budget would hang on the hung stubs (they live
# 120 s) until pamtester's 30 s guard, so the bound still tells the two apart. How long a login
# takes is measured by keywell-bench, not here.
LOGIN_BOUND_S = PHASE_BUDGET_S + 6.0


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def module_path() -> str:
    """The built module, loaded by absolute path so that no `make install` is needed."""
    env = os.environ.get("PAM_KEYWELL_SO")
    if env:
        return env
    subprocess.run(["make", "-s", "-C", str(REPO / "pam")], check=True)
    return str(REPO / "pam" / "build" / "pam_keywell.so")


def require_root_and_tools() -> None:
    if os.geteuid() != 0:
        pytest.fail("the PAM integration tests need root (they create users and a PAM service)")
    for tool in ("pamtester", "useradd", "userdel", "chpasswd", "setpriv"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing: run scripts/setup.sh")


# ------------------------------------------------------------------------------------ syslog


class SyslogCapture:
    """Collects what PAM modules log. With journald or rsyslog we read what they stored; in
    containers and CI nothing listens on /dev/log, so one relay process (syslog_relay.py) binds
    it for every test run on the machine and appends each message to a file that each capture
    reads from where it started."""

    RELAY_FOLDER = "/run/keywell-test-syslog"
    RELAY = Path(__file__).with_name("syslog_relay.py")

    def __init__(self) -> None:
        self.mode = None
        self._cursor = None
        if not self._dev_log_alive():
            self._start_relay()
        relay_file = Path(self.RELAY_FOLDER, "messages")
        if self._relay_running():
            self.mode = "relay"
            self._relay_file = relay_file
            self._offset = relay_file.stat().st_size if relay_file.exists() else 0
        elif shutil.which("journalctl") and self._journal_cursor() is not None:
            self.mode = "journal"
            self._cursor = self._journal_cursor()
        else:
            self.mode = "file"
            self._files = {p: p.stat().st_size for p in map(Path, ("/var/log/auth.log", "/var/log/syslog", "/var/log/secure")) if p.exists()}

    @staticmethod
    def _dev_log_alive() -> bool:
        return syslog_relay.dev_log_alive()

    @classmethod
    def _relay_running(cls) -> bool:
        """Whether the relay holds its lock (then /dev/log is its socket)."""
        try:
            lock = open(os.path.join(cls.RELAY_FOLDER, "lock"), "w")
        except FileNotFoundError:
            return False
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(lock, fcntl.LOCK_UN)
            return False

    @classmethod
    def _start_relay(cls) -> None:
        subprocess.Popen([sys.executable, str(cls.RELAY), cls.RELAY_FOLDER], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30  # a hang guard: the relay binds within milliseconds
        while not (cls._dev_log_alive() and cls._relay_running()):
            if time.monotonic() > deadline:
                raise RuntimeError("the syslog relay did not start (Tests/Integration/syslog_relay.py)")
            time.sleep(0.01)

    @staticmethod
    def _journal_cursor():
        r = subprocess.run(["journalctl", "-n", "0", "--show-cursor", "-q"], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            if line.startswith("-- cursor: "):
                return line[len("-- cursor: "):]
        return None

    def _relay_text(self) -> str:
        """Everything logged since this capture began. A marker sent now arrives after every
        message already queued (a module's syslog() returns once its datagram is queued, and the
        socket keeps their order), so once the marker is in the file, so is everything before."""
        marker = f"keywell-test-sync {os.getpid()} {time.monotonic_ns()}"
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(f"<15>{marker}".encode(), "/dev/log")
        deadline = time.monotonic() + 30  # a hang guard only
        while True:
            with open(self._relay_file, "rb") as f:
                f.seek(self._offset)
                text = f.read().decode("utf-8", "replace")
            if marker in text:
                return "\n".join(line for line in text.splitlines() if "keywell-test-sync" not in line)
            if time.monotonic() > deadline:
                raise RuntimeError("the syslog relay stopped writing (Tests/Integration/syslog_relay.py)")
            time.sleep(0.005)

    def text(self) -> str:
        if self.mode == "relay":
            return self._relay_text()
        if self.mode == "journal":
            subprocess.run(["journalctl", "--sync"], capture_output=True)
            r = subprocess.run(["journalctl", "--after-cursor", self._cursor, "-o", "short", "--no-pager"],
                               capture_output=True, text=True, errors="replace")
            return r.stdout
        time.sleep(0.2)  # rsyslog writes in its own time; nothing here can tell when
        out = []
        for p, size in self._files.items():
            with open(p, "rb") as f:
                f.seek(size)
                out.append(f.read().decode("utf-8", "replace"))
        return "\n".join(out)

    def keywell_lines(self) -> list[str]:
        return [line for line in self.text().splitlines() if "pam_keywell" in line]

    def close(self) -> None:
        pass  # the relay serves other runs too; it leaves when idle


# ------------------------------------------------------------------------------------ users


@dataclass
class User:
    name: str
    uid: int
    gid: int
    home: str
    password: str

    @property
    def runtime_dir(self) -> str:
        return f"/run/user/{self.uid}"

    def groups(self) -> list[int]:
        return sorted(os.getgrouplist(self.name, self.gid))


def pids_of_uid(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            # A zombie is gone already; whoever adopted it reaps it in its own time.
            if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
                pids.append(int(entry))
        except (OSError, KeyError, ValueError):
            pass
    return pids


def kill_user_processes(uid: int) -> None:
    """Ends what a test started as the throwaway user (the daemon), one pid at a time."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = pids_of_uid(uid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and pids_of_uid(uid):
            time.sleep(0.05)


# ------------------------------------------------------------------------------------ pamtester


@dataclass
class PamResult:
    rc: int
    stdout: str
    stderr: str
    elapsed: float
    pid: int

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def __str__(self) -> str:
        return f"rc={self.rc} in {self.elapsed:.2f}s\nstdout: {self.stdout}\nstderr: {self.stderr}"


def pam_host_env(env: dict) -> dict:
    """`env` for a process that loads the PAM module. Under scripts/sanitize.sh --asan
    (docs/contributing.md, "Sanitizers") PAM_KEYWELL_SO is the AddressSanitizer build, whose
    runtime must be the first library of the process that dlopens it: pamtester gets it
    preloaded, with the run's ASAN_OPTIONS/UBSAN_OPTIONS (which log to files the script checks).
    The daemon the module starts never inherits them: the module gives it an environment of its
    own making."""
    preload = os.environ.get("KEYWELL_SANITIZER_PRELOAD")
    if not preload:
        return env
    passed = {k: os.environ[k] for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS") if k in os.environ}
    return {**env, "LD_PRELOAD": preload, **passed}


def pamtester(service: str, user: str, *ops: str, stdin: str = "", pam_env: dict | None = None,
              env: dict | None = None, timeout: float = 30, preexec=None) -> PamResult:
    """Runs pamtester with the password(s) on stdin. A new session (no controlling terminal)
    makes its prompts read stdin instead of /dev/tty."""
    env = pam_host_env(env if env is not None else dict(CLEAN_ENV))
    args = ["pamtester", "-v"]
    for k, v in (pam_env or {}).items():
        args += ["-E", f"{k}={v}"]
    args += [service, user, *ops]
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, start_new_session=True,
                         preexec_fn=preexec)
    out, err = p.communicate(stdin.encode(), timeout=timeout)
    return PamResult(p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                     time.monotonic() - t0, p.pid)


def login(service: str, user: User, password: str | None = None, **kw) -> PamResult:
    pw = user.password if password is None else password
    return pamtester(service, user.name, "authenticate", "open_session", stdin=pw + "\n", **kw)


# ------------------------------------------------------------------------------------ a terminal


class Terminal:
    """A program on a pseudo-terminal of its own (its controlling terminal, as in a login)."""

    def __init__(self, argv: list[str], env: dict):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: nothing but exec
            try:
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.transcript = b""
        self.status = None

    def _read(self, timeout: float) -> bool:
        """Reads what is there within `timeout`; False at end of output."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 4096)
        except OSError as e:  # EIO: the other side is closed
            if e.errno != errno.EIO:
                raise
            return False
        if not data:
            return False
        self.transcript += data
        return True

    def expect(self, text: bytes, timeout: float = 30) -> None:
        start = len(self.transcript)
        deadline = time.monotonic() + timeout
        while text not in self.transcript[start:]:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._read(min(remaining, 0.2)) and text not in self.transcript[start:]:
                pytest.fail(f"never saw {text!r} on the terminal; it shows {self.transcript!r}")

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def wait(self, timeout: float = 30) -> int:
        """The exit status, once the program ended (reading its output meanwhile)."""
        deadline = time.monotonic() + timeout
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                pytest.fail(f"still running after {timeout} s; the terminal shows {self.transcript!r}")
            if not self._read(0.1):
                time.sleep(0.05)
        return self.status

    def close(self) -> None:
        if self.status is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)  # its own session and process group
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.status = -signal.SIGKILL
        os.close(self.fd)



PR_SET_CHILD_SUBREAPER = 36


def _children() -> set[int]:
    found = set()
    for task in os.listdir("/proc/self/task"):
        try:
            found.update(int(p) for p in Path(f"/proc/self/task/{task}/children").read_text().split())
        except OSError:
            pass
    return found


def started_nothing(run):
    """Runs `run()` (a pamtester call) and returns (its result, the pids of every process it left
    behind). The module starts the daemon detached (fork, fork, the middle child exits and is
    waited for), so once pamtester has exited, a daemon it started already exists; while this
    test process is a child subreaper, that orphan is re-parented here instead of to init. An
    exact check of "nothing was started", with no sleep and no guess at how long a start takes."""
    libc = ctypes.CDLL(None, use_errno=True)
    before = _children()
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    try:
        result = run()
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    left = sorted(_children() - before)
    for pid in left:  # adopted: ours to end and reap
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    return result, left


# ------------------------------------------------------------------------------------ the stub


STUB_TEMPLATE = r'''#!/usr/bin/python3 -I
# Records how pam_keywell started it and what it sent. A check of the module, not a daemon.
import hashlib, json, os, socket, struct, sys, time

OUT = __OUT__
MODE = __MODE__          # serve | hang | nosocket
STATUS = __STATUS__
MESSAGE = __MESSAGE__
LIFETIME = 120

def proc_status():
    d = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            d[k] = v.strip()
    return d

fds = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        fds[fd] = os.readlink("/proc/self/fd/" + fd)
    except OSError:
        pass
st = proc_status()
with open("/proc/self/environ", "rb") as f:
    environ = [e.decode("utf-8", "replace") for e in f.read().split(b"\0") if e]
with open("/proc/self/cmdline", "rb") as f:
    cmdline = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
info = dict(pid=os.getpid(), ppid=os.getppid(), sid=os.getsid(0), pgid=os.getpgid(0),
            resuid=list(os.getresuid()), resgid=list(os.getresgid()), groups=sorted(os.getgroups()),
            cwd=os.getcwd(), environ=environ, cmdline=cmdline, fds=fds,
            sigblk=st.get("SigBlk"), sigign=st.get("SigIgn"), umask=st.get("Umask"))
tmp = os.path.join(OUT, ".start-%d" % os.getpid())
with open(tmp, "w") as f:
    json.dump(info, f)
os.rename(tmp, os.path.join(OUT, "start-%d.json" % os.getpid()))

if MODE == "nosocket":
    time.sleep(LIFETIME)
    sys.exit(0)

folder = os.path.join(os.environ["XDG_RUNTIME_DIR"], "keywell")
os.makedirs(folder, 0o700, exist_ok=True)
path = os.path.join(folder, "control")
try:
    os.unlink(path)   # stale socket of a crashed predecessor
except FileNotFoundError:
    pass
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
os.chmod(path, 0o600)
srv.listen(8)
srv.settimeout(LIFETIME)

def read_exact(c, n):
    buf = b""
    while len(buf) < n:
        chunk = c.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf

held = []
while True:
    try:
        conn, _ = srv.accept()
    except socket.timeout:
        sys.exit(0)
    pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if MODE == "hang":
        held.append(conn)   # read nothing back, answer nothing, keep it open
        continue
    conn.settimeout(5)
    try:
        head = read_exact(conn, 6)
        fields = []
        for _ in range(head[5]):
            (n,) = struct.unpack(">I", read_exact(conn, 4))
            fields.append(read_exact(conn, n))
        rec = dict(magic=head[:4].decode(), op=chr(head[4]), count=head[5],
                   lengths=[len(x) for x in fields],
                   sha256=[hashlib.sha256(x).hexdigest() for x in fields],
                   peer_uid=uid, time=time.time())
        with open(os.path.join(OUT, "requests.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")
        msg = MESSAGE.encode()
        conn.sendall(b"KWC1" + struct.pack(">iI", STATUS, len(msg)) + msg)
    except (EOFError, OSError):
        pass
    conn.close()
'''


@dataclass
class Stub:
    """A fake `daemon=` program: it dumps how it was started and records the requests."""
    path: str
    out: str

    def starts(self) -> list[dict]:
        found = []
        for p in sorted(Path(self.out).glob("start-*.json")):
            found.append(json.loads(p.read_text()))
        return found

    def wait_starts(self, n: int, timeout: float = 5) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.starts()
            if len(s) >= n:
                return s
            time.sleep(0.05)
        return self.starts()

    def requests(self) -> list[dict]:
        p = Path(self.out) / "requests.jsonl"
        if not p.exists():
            return []
        return [json.loads(line) for line in p.read_text().splitlines() if line]


# ------------------------------------------------------------------------------------ the kit


@dataclass
class Kit:
    """Per-test state: users, PAM services, stubs and the syslog capture, all undone at the end."""
    module: str
    syslog: SyslogCapture
    users: list = field(default_factory=list)
    services: list = field(default_factory=list)
    paths: list = field(default_factory=list)
    procs: list = field(default_factory=list)
    secrets: list = field(default_factory=list)
    runtime_dirs: list = field(default_factory=list)

    # -- users
    def user(self, password: str | None = None, home: bool = True, groups: tuple = ()) -> User:
        name = "kwpam" + secrets.token_hex(4)
        password = password if password is not None else "Pw-" + secrets.token_urlsafe(12)
        args = ["useradd", "-s", "/bin/sh", "-U"]
        if home:
            args += ["-m"]
        else:
            args += ["-M", "-d", f"/nonexistent/{name}"]
        if groups:
            args += ["-G", ",".join(groups)]
        subprocess.run(args + [name], check=True, capture_output=True)
        pw = pwd.getpwnam(name)
        u = User(name, pw.pw_uid, pw.pw_gid, pw.pw_dir, password)
        self.users.append(u)
        self.runtime_dirs.append(u.runtime_dir)
        self.set_password(u, password)
        return u

    def set_password(self, user: User, password: str) -> None:
        subprocess.run(["chpasswd"], input=f"{user.name}:{password}\n".encode(), check=True,
                       capture_output=True)
        user.password = password
        self.secrets.append(password)

    # -- PAM stacks
    def stack(self, service: str = SERVICE, *, with_module: bool = True, daemon: str | None = None,
              auth: str = "", session: str = "auto_start", password: str = "auto_start") -> str:
        """/etc/pam.d/<service>: pam_unix first, pam_keywell after it in every phase."""
        extra = f" daemon={daemon}" if daemon else ""
        lines = ["auth     requisite  pam_unix.so"]
        if with_module:
            lines.append(f"auth     optional   {self.module} {auth}{extra}".rstrip())
        lines.append("account  required   pam_unix.so")
        lines.append("session  required   pam_unix.so")
        if with_module:
            lines.append(f"session  optional   {self.module} {session}{extra}".rstrip())
        lines.append("password requisite  pam_unix.so")
        if with_module:
            lines.append(f"password optional   {self.module} {password}{extra}".rstrip())
        path = PAM_D / service
        path.write_text("\n".join(lines) + "\n")
        if service not in self.services:
            self.services.append(service)
        return service

    def session_stack_file(self, daemon: str) -> str:
        """A stack file outside /etc/pam.d (for a private mount namespace to put in place of su's
        or sudo's): pam_unix, then pam_keywell in auth and session, the shape of
        common-auth/common-session with the module enabled."""
        lines = [
            "auth     requisite  pam_unix.so",
            f"auth     optional   {self.module}",
            "account  required   pam_unix.so",
            "session  required   pam_unix.so",
            f"session  optional   {self.module} auto_start daemon={daemon}",
        ]
        path = os.path.join(self.bindir(), "stack")
        Path(path).write_text("\n".join(lines) + "\n")
        os.chmod(path, 0o644)
        return path

    # -- fake daemon programs
    def bindir(self) -> str:
        """A root-owned folder every user can enter, for programs the module starts."""
        d = tempfile.mkdtemp(prefix="kwpam-bin-")
        os.chmod(d, 0o755)
        self.paths.append(d)
        return d

    def stub(self, owner: User, mode: str = "serve", status: int = 0, message: str = "") -> Stub:
        d = self.bindir()
        out = os.path.join(d, "out")
        os.mkdir(out, 0o700)
        os.chown(out, owner.uid, owner.gid)
        src = (STUB_TEMPLATE.replace("__OUT__", repr(out)).replace("__MODE__", repr(mode))
               .replace("__STATUS__", str(int(status))).replace("__MESSAGE__", repr(message)))
        path = os.path.join(d, "keywelld-stub")
        Path(path).write_text(src)
        os.chmod(path, 0o755)
        return Stub(path, out)

    def script(self, body: str, mode: int = 0o755) -> str:
        d = self.bindir()
        path = os.path.join(d, "prog")
        Path(path).write_text(body)
        os.chmod(path, mode)
        return path

    def spawn(self, args, **kw) -> subprocess.Popen:
        p = subprocess.Popen(args, **kw)
        self.procs.append(p)
        return p

    def as_user(self, user: User, args, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
        cmd = ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups", "--"] + list(args)
        return subprocess.run(cmd, env=env if env is not None else self.user_env(user), **kw)

    def user_env(self, user: User) -> dict:
        return {"HOME": user.home, "USER": user.name, "LOGNAME": user.name, "PATH": CLEAN_ENV["PATH"],
                "LANG": "C.UTF-8", "XDG_RUNTIME_DIR": user.runtime_dir,
                "DBUS_SESSION_BUS_ADDRESS": f"unix:path={user.runtime_dir}/bus"}

    # -- checks
    def assert_no_leaks(self, extra: list[str] | tuple = ()) -> None:
        text = self.syslog.text()
        for s in list(self.secrets) + list(extra):
            assert s not in text, "a password reached syslog"
            assert s.encode().hex() not in text.lower(), "a password reached syslog (hex)"

    # -- cleanup
    def close(self) -> None:
        errors = []
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for u in self.users:
            kill_user_processes(u.uid)
            r = subprocess.run(["userdel", "-r", "-f", u.name], capture_output=True, text=True)
            if r.returncode not in (0, 6, 12):  # 12: could not remove home (absent); fine
                errors.append(f"userdel {u.name}: {r.stderr.strip()}")
            if os.path.isdir(u.home) and u.home.startswith("/home/kwpam"):
                shutil.rmtree(u.home, ignore_errors=True)
        for d in self.runtime_dirs:
            if os.path.islink(d) or os.path.isfile(d):
                os.unlink(d)
            elif os.path.isdir(d):
                shutil.rmtree(d, ignore_errors=True)
        for s in self.services:
            try:
                (PAM_D / s).unlink()
            except FileNotFoundError:
                pass
        for d in self.paths:
            shutil.rmtree(d, ignore_errors=True)
        self.syslog.close()
        assert not errors, errors


def status_bits(hexmask: str) -> set[int]:
    """Signal numbers set in a /proc/<pid>/status mask such as SigIgn."""
    v = int(hexmask, 16)
    return {i + 1 for i in range(64) if v >> i & 1}


def mode_of(path: str) -> tuple[int, int, int]:
    st = os.lstat(path)
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def group_id(name: str) -> int:
    return grp.getgrnam(name).gr_gid


# ------------------------------------------------------------------------------------ the real daemon

# Runs as the user (python3 -c) and asks keywelld over its native D-Bus API. Passwords come on
# stdin, never in argv. Prints one JSON object: {"ok": result} or {"error": name, "message": text}.
DBUS_CLIENT = r'''
import json, sys, time
import dbus

def plain(v):
    if isinstance(v, dbus.Boolean):
        return bool(v)
    if isinstance(v, (dbus.String, dbus.ObjectPath)):
        return str(v)
    if isinstance(v, (dbus.Int16, dbus.Int32, dbus.Int64, dbus.UInt16, dbus.UInt32, dbus.UInt64, dbus.Byte)):
        return int(v)
    if isinstance(v, dbus.Dictionary):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (dbus.Array, list)):
        return [plain(x) for x in v]
    return v

cmd, args, wait = sys.argv[1], sys.argv[2:], 15.0
bus = dbus.SessionBus()
deadline = time.time() + wait
while not bus.name_has_owner("org.keywell.Keychain"):
    if time.time() > deadline:
        print(json.dumps({"error": "NoOwner", "message": "org.keywell.Keychain never appeared"}))
        sys.exit(0)
    time.sleep(0.05)
kc = dbus.Interface(bus.get_object("org.keywell.Keychain", "/org/keywell/Keychain", introspect=False),
                    "org.keywell.Keychain1")
try:
    if cmd == "info":
        out = kc.GetInfo(args[0])
    elif cmd == "unlock":
        out = kc.Unlock(args[0], dbus.ByteArray(sys.stdin.buffer.read()))
    elif cmd == "lock":
        out = kc.Lock(args[0])
    elif cmd == "create":
        out = kc.CreateKeychain(args[0], dbus.ByteArray(sys.stdin.buffer.read()))
    elif cmd == "default":
        out = kc.GetDefaultKeychain()
    elif cmd == "searchlist":
        out = kc.GetSearchList()
    else:
        raise SystemExit("unknown command " + cmd)
    print(json.dumps({"ok": plain(out)}))
except dbus.DBusException as e:
    print(json.dumps({"error": e.get_dbus_name(), "message": e.get_dbus_message()}))
'''


def keywelld_pids(user: User) -> list[int]:
    pids = []
    for pid in pids_of_uid(user.uid):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "keywelld":
                pids.append(pid)
        except OSError:
            pass
    return pids


def ensure_runtime_dir(user: User) -> str:
    """What logind does at the first login; the tests do it where a session bus must come first."""
    os.makedirs("/run/user", 0o755, exist_ok=True)
    if not os.path.isdir(user.runtime_dir):
        os.mkdir(user.runtime_dir, 0o700)
        os.chown(user.runtime_dir, user.uid, user.gid)
    return user.runtime_dir


def start_session_bus(kit: Kit, user: User) -> str:
    """A private dbus-daemon for the user at $XDG_RUNTIME_DIR/bus, as a desktop session has."""
    ensure_runtime_dir(user)
    address = f"unix:path={user.runtime_dir}/bus"
    p = kit.spawn(["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups", "--",
                   "dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={address}",
                   "--print-address"], stdout=subprocess.PIPE, env=kit.user_env(user))
    line = p.stdout.readline().decode().strip()
    if not line:
        pytest.fail("the private session bus did not start")
    return address


def dbus_call(kit: Kit, user: User, cmd: str, *args: str, password: str | None = None) -> dict:
    r = kit.as_user(user, ["/usr/bin/python3", "-c", DBUS_CLIENT, cmd, *args],
                    input=(password or "").encode(), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout.decode().strip().splitlines()[-1])
