"""pam_keywell.so in a real PAM stack, driven by pamtester, without the real daemon.

These tests check the module itself: that it never breaks or slows down a login whatever the
daemon does, leaks no password, starts the daemon as the user with a clean environment, finds
the right runtime folder, checks who listens on the socket, and sends the control protocol of
docs/control-protocol.md. The `daemon=` programs here are small recorders that dump how they
were started and what they received; the tests against the real keywelld are in
test_pam_daemon.py.

Run as root: /usr/bin/python3 -m pytest Tests/Integration/test_pam.py
"""

import os
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from keywell_helpers import module, open_kit  # noqa: F401 (module: a fixture)
from pam_helpers import (LOGIN_BOUND_S, SERVICE, CLEAN_ENV, login, mode_of, pam_host_env, pamtester, pids_of_uid, sha256,
                         started_nothing, status_bits)

ERR_AUTH_FAILED = -25293


@pytest.fixture
def kit(module):
    yield from open_kit(module)


def ops(stub):
    return [r["op"] for r in stub.requests()]


# ------------------------------------------------------------------------------------ build


def test_module_links_no_swift_and_exports_only_pam_entry_points(module):
    ldd = subprocess.run(["ldd", module], capture_output=True, text=True, check=True).stdout
    assert "libpam.so" in ldd
    assert "swift" not in ldd.lower() and "foundation" not in ldd.lower()
    nm = subprocess.run(["nm", "-D", "--defined-only", module], capture_output=True, text=True, check=True).stdout
    exported = sorted(line.split()[-1] for line in nm.splitlines() if " T " in line)
    assert exported == ["pam_sm_authenticate", "pam_sm_chauthtok", "pam_sm_close_session",
                        "pam_sm_open_session", "pam_sm_setcred"]


def test_make_install_puts_module_and_profile_in_place(module, tmp_path):
    pamdir = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(Path(module).parents[1]),
                             "print-pamdir"], capture_output=True, text=True, check=True).stdout.strip()
    assert os.path.exists(os.path.join(pamdir, "pam_unix.so")), pamdir
    subprocess.run(["make", "-s", "-C", str(Path(module).parents[1]), "install", f"DESTDIR={tmp_path}"],
                   check=True, capture_output=True)
    so = tmp_path / pamdir.lstrip("/") / "pam_keywell.so"
    assert stat.S_IMODE(so.stat().st_mode) == 0o644
    profile = tmp_path / "usr/share/pam-configs/keywell"
    text = profile.read_text()
    for key in ("Name:", "Default:", "Priority:", "Auth-Type: Additional", "Session-Type: Additional",
                "Password-Type: Additional", "pam_keywell.so auto_start"):
        assert key in text
    subprocess.run(["make", "-s", "-C", str(Path(module).parents[1]), "uninstall", f"DESTDIR={tmp_path}"],
                   check=True, capture_output=True)
    assert not so.exists() and not profile.exists()


# ------------------------------------------------------------------------------------ broken daemons


def test_login_succeeds_when_daemon_binary_is_missing(kit):
    user = kit.user()
    svc = kit.stack(daemon="/nonexistent/keywelld")
    r = login(svc, user)
    assert r.ok, r
    assert "successfully opened a session" in r.stdout
    r = pamtester(svc, user.name, "close_session")
    assert r.ok, r
    lines = kit.syslog.keywell_lines()
    assert any("cannot start keywelld /nonexistent/keywelld" in l for l in lines), lines
    # A missing binary must not make the module wait out its budget for a socket.
    assert not any("did not open its socket in time" in l for l in lines), lines


def test_default_daemon_path_is_compiled_in(module):
    # test.sh builds with the default PREFIX; `daemon=` overrides it everywhere else here.
    data = Path(module).read_bytes()
    assert b"/bin/keywelld\0" in data


def test_hung_daemon_cannot_hang_the_login(kit):
    user = kit.user()
    stub = kit.stub(user, mode="hang")
    svc = kit.stack(daemon=stub.path)
    r = login(svc, user)
    assert r.ok, r
    assert r.elapsed < LOGIN_BOUND_S, r
    assert len(stub.starts()) == 1
    r = pamtester(svc, user.name, "close_session")
    assert r.ok and r.elapsed < LOGIN_BOUND_S, r
    r = pamtester(svc, user.name, "chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)",
                  stdin=f"{user.password}\nNew-{user.password}\nNew-{user.password}\n")
    kit.secrets.append(f"New-{user.password}")
    assert r.ok and r.elapsed < LOGIN_BOUND_S, r
    assert any("no answer from keywelld: timed out" in l for l in kit.syslog.keywell_lines())


def test_daemon_that_never_opens_its_socket_costs_at_most_the_budget(kit):
    user = kit.user()
    stub = kit.stub(user, mode="nosocket")
    svc = kit.stack(daemon=stub.path)
    r = login(svc, user)
    assert r.ok, r
    assert r.elapsed < LOGIN_BOUND_S, r
    assert any("did not open its socket in time" in l for l in kit.syslog.keywell_lines())


def test_daemon_that_fails_to_exec_is_reported_at_once(kit):
    user = kit.user()
    prog = kit.script("this is not a program\n")  # executable bit, but exec gives ENOEXEC
    svc = kit.stack(daemon=prog)
    r = login(svc, user)
    assert r.ok, r
    lines = kit.syslog.keywell_lines()
    assert any("exec failed" in l for l in lines), lines
    # Reported at once: the module does not wait out its budget for a socket.
    assert not any("did not open its socket in time" in l for l in lines), lines


def test_daemon_others_can_write_is_not_started(kit):
    user = kit.user()
    stub = kit.stub(user)
    os.chmod(stub.path, 0o777)
    svc = kit.stack(daemon=stub.path)
    r, left = started_nothing(lambda: login(svc, user))
    assert r.ok, r
    assert left == [] and stub.starts() == []
    assert any("others can write" in l for l in kit.syslog.keywell_lines())


def test_crashed_daemon_is_started_again(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    assert login(svc, user).ok
    (first,) = stub.starts()
    os.kill(first["pid"], 9)
    deadline = time.monotonic() + 30  # a hang guard: the kill is what ends it
    while first["pid"] in pids_of_uid(user.uid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert first["pid"] not in pids_of_uid(user.uid), "SIGKILL did not end the stub"
    assert os.path.exists(f"{user.runtime_dir}/keywell/control"), "the crash leaves a stale socket"
    r = login(svc, user)
    assert r.ok, r
    assert len(stub.starts()) == 2
    assert ops(stub) == ["O", "O"]


# ------------------------------------------------------------------------------------ passwords


def test_wrong_password_fails_in_pam_unix_and_goes_nowhere(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path, auth="debug", session="auto_start debug")
    wrong = "Wrong-" + user.password
    kit.secrets.append(wrong)
    r, left = started_nothing(lambda: login(svc, user, password=wrong))
    assert not r.ok
    assert "Authentication failure" in r.stderr
    assert left == [] and stub.starts() == [] and stub.requests() == []
    assert not os.path.exists(user.runtime_dir)
    kit.assert_no_leaks()


def test_login_hands_the_password_over_once(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    r = login(svc, user)
    assert r.ok, r
    (req,) = stub.requests()
    assert req["magic"] == "KWC1" and req["op"] == "O" and req["count"] == 1
    assert req["sha256"] == [sha256(user.password)]
    assert req["lengths"] == [len(user.password.encode())]
    assert req["peer_uid"] == 0, "the login process (root) talks to the daemon"


def test_unicode_and_long_password(kit):
    password = ("Ünïcødé-🔑-pässwörd-" * 20)[:300]
    assert len(password.encode()) > 400
    user = kit.user(password=password)
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    r = login(svc, user)
    assert r.ok, r
    (req,) = stub.requests()
    assert req["sha256"] == [sha256(password)] and req["lengths"] == [len(password.encode())]
    new = "Nöw-" + password[:200]
    kit.secrets.append(new)
    r = pamtester(svc, user.name, "chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)", stdin=f"{password}\n{new}\n{new}\n")
    assert r.ok, r
    assert stub.requests()[-1]["sha256"] == [sha256(password), sha256(new)]


def test_open_session_without_password_still_counts(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    r = pamtester(svc, user.name, "open_session")  # ssh keys, su from root: no auth phase
    assert r.ok, r
    (req,) = stub.requests()
    assert req["op"] == "O" and req["count"] == 0


def test_drift_between_login_and_keychain_password_still_logs_in(kit):
    user = kit.user()
    stub = kit.stub(user, status=ERR_AUTH_FAILED,
                    message="-25293: The user name or passphrase you entered is not correct.")
    svc = kit.stack(daemon=stub.path)
    r = login(svc, user)
    assert r.ok, r
    assert "successfully opened a session" in r.stdout
    lines = kit.syslog.keywell_lines()
    assert any("different password" in l and "-25293" in l for l in lines), lines


def test_daemon_error_message_is_logged_as_one_clean_line(kit):
    user = kit.user()
    stub = kit.stub(user, status=-25291, message="line one\nforged: line two\x1b[31m")
    svc = kit.stack(daemon=stub.path)
    assert login(svc, user).ok
    lines = kit.syslog.keywell_lines()
    assert any("keywelld answered -25291: line one?forged: line two?[31m" in l for l in lines), lines


def test_daemon_message_bytes_above_ascii_are_replaced_in_the_log(kit):
    user = kit.user()
    # U+009B is the one-byte CSI of C1 terminals (0xc2 0x9b in UTF-8); U+202E reverses the line.
    stub = kit.stub(user, status=-25291, message="caf\u00e9 \u009b31m \u202etxt.exe")
    svc = kit.stack(daemon=stub.path)
    assert login(svc, user).ok
    lines = [l for l in kit.syslog.keywell_lines() if "keywelld answered -25291" in l]
    assert any("keywelld answered -25291: caf?? ??31m ???txt.exe" in l for l in lines), lines
    assert all(l.isascii() for l in lines), lines


# ------------------------------------------------------------------------------------ sessions


def test_sessions_are_counted_open_and_close(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    assert login(svc, user).ok
    assert login(svc, user).ok  # second concurrent session: daemon already running
    assert len(stub.starts()) == 1
    assert pamtester(svc, user.name, "close_session").ok
    assert pamtester(svc, user.name, "close_session").ok
    assert ops(stub) == ["O", "O", "C", "C"]
    assert all(r["count"] == 0 for r in stub.requests()[2:])


def test_a_started_daemon_is_seen_as_left_behind(kit):
    """The control for every `started_nothing` check below: a login that does start the daemon
    must show up, so a check that saw nothing did look."""
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    r, left = started_nothing(lambda: login(svc, user))
    assert r.ok, r
    (start,) = stub.starts()
    assert left == [start["pid"]]


def test_close_session_never_starts_the_daemon(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    r, left = started_nothing(lambda: pamtester(svc, user.name, "close_session"))
    assert r.ok, r
    assert left == [] and stub.starts() == []
    assert not os.path.exists(user.runtime_dir)


def test_without_auto_start_nothing_is_started(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path, session="", password="")
    r, left = started_nothing(lambda: login(svc, user))
    assert r.ok, r
    assert left == [] and stub.starts() == []


# ------------------------------------------------------------------------------------ chauthtok


def test_chauthtok_sends_old_and_new_password(kit):
    user = kit.user()
    old = user.password
    new = "New-" + old
    kit.secrets.append(new)
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    r = pamtester(svc, user.name, "chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)", stdin=f"{old}\n{new}\n{new}\n")
    assert r.ok, r
    (req,) = stub.requests()  # the preliminary phase sends nothing
    assert req["op"] == "P" and req["count"] == 2
    assert req["sha256"] == [sha256(old), sha256(new)]
    assert pamtester(svc, user.name, "authenticate", stdin=new + "\n").ok
    assert not pamtester(svc, user.name, "authenticate", stdin=old + "\n").ok


def test_chauthtok_by_root_without_old_password_sends_nothing(kit):
    user = kit.user()
    new = "Reset-" + user.password
    kit.secrets.append(new)
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    # As root, pam_unix asks for no current password, as with `passwd alice`.
    r, left = started_nothing(lambda: pamtester(svc, user.name, "chauthtok", stdin=f"{new}\n{new}\n"))
    assert r.ok, r
    # The module sends its request before pamtester exits, so none can come later.
    assert left == [] and stub.requests() == []
    assert any("old or new password not available" in l for l in kit.syslog.keywell_lines())


def test_expired_password_changed_during_login_unlocks_with_the_new_one(kit):
    user = kit.user()
    old = user.password
    new = "Fresh-" + old
    kit.secrets.append(new)
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    r = pamtester(svc, user.name, "authenticate", "chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)", "open_session",
                  stdin=f"{old}\n{old}\n{new}\n{new}\n")
    assert r.ok, r
    p, o = stub.requests()
    assert p["op"] == "P" and p["sha256"] == [sha256(old), sha256(new)]
    assert o["op"] == "O" and o["sha256"] == [sha256(new)]


# ------------------------------------------------------------------------------------ the daemon's start


def test_daemon_runs_as_the_user_with_a_clean_environment(kit):
    user = kit.user(groups=("users", "audio"))
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    env = dict(CLEAN_ENV, SECRET_SHOULD_NOT_PASS="x", DBUS_SESSION_BUS_ADDRESS="unix:path=/nowhere")
    r = login(svc, user, env=env)
    assert r.ok, r
    (s,) = stub.starts()
    assert s["resuid"] == [user.uid] * 3
    assert s["resgid"] == [user.gid] * 3
    assert s["groups"] == user.groups() and len(s["groups"]) == 3
    assert s["sid"] == s["pid"], "the daemon leads a session of its own"
    assert s["ppid"] != r.pid, "the login process is not the daemon's parent"
    assert s["cwd"] == user.home
    assert s["umask"] == "0077"
    env_seen = dict(e.split("=", 1) for e in s["environ"])
    assert env_seen == {
        "HOME": user.home, "USER": user.name, "LOGNAME": user.name, "SHELL": "/bin/sh",
        "PATH": "/usr/local/bin:/usr/bin:/bin", "XDG_RUNTIME_DIR": user.runtime_dir,
    }
    assert s["cmdline"][-1] == stub.path, "no arguments after the program"
    fds = {int(k): v for k, v in s["fds"].items() if not v.startswith("/proc/")}
    assert fds == {0: "/dev/null", 1: "/dev/null", 2: "/dev/null"}
    assert int(s["sigblk"], 16) == 0
    assert status_bits(s["sigign"]) <= {13, 25}, "only what python3 ignores by itself"
    # The running process, as anyone on the machine could read it:
    for name in ("environ", "cmdline"):
        data = Path(f"/proc/{s['pid']}/{name}").read_bytes()
        assert user.password.encode() not in data


def test_daemon_gets_closed_stdio_when_dev_null_cannot_be_opened(kit):
    """Never the login process's fds 0-2 (here pamtester's pipes): /dev/null is made unopenable
    for the user by bind-mounting a root-only file over it in a private mount namespace."""
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    blocker = os.path.join(kit.bindir(), "not-null")
    Path(blocker).write_text("")
    os.chmod(blocker, 0o600)
    inner = 'mount --bind "$1" /dev/null && exec pamtester -v "$2" "$3" open_session'
    # Files, not pipes, for the login's stdio: a daemon holding them must not hang this test.
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out:
        p = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", inner,
                            "sh", blocker, svc, user.name], stdin=stdin, stdout=out, stderr=out,
                           env=pam_host_env(dict(CLEAN_ENV)), start_new_session=True, timeout=60)
        out.seek(0)
        assert p.returncode == 0, out.read()
    (req,) = stub.requests()  # the daemon started and answered: its fds were recorded before
    assert req["op"] == "O"
    (s,) = stub.starts()
    fds = {int(k): v for k, v in s["fds"].items() if not v.startswith("/proc/")}
    assert fds == {}, "stdio is closed, not inherited"


def _ignore_and_block_signals():
    # Inherited across exec: pamtester starts with these, as a login process with odd signal
    # handling would run the module.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, signal.SIGUSR1})


def test_login_process_signal_state_neither_breaks_the_start_nor_reaches_the_daemon(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    # pamtester's 30 s timeout is the guard against a waitpid that hangs with SIGCHLD ignored.
    r = login(svc, user, preexec=_ignore_and_block_signals)
    assert r.ok, r
    assert not any("did not open its socket in time" in l for l in kit.syslog.keywell_lines())
    (s,) = stub.starts()
    assert int(s["sigblk"], 16) == 0
    assert status_bits(s["sigign"]) <= {13, 25}
    assert ops(stub) == ["O"]


def test_pam_environment_gives_runtime_folder_and_bus(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    rt = tempfile.mkdtemp(prefix="kwpam-rt-")
    kit.paths.append(rt)
    os.chown(rt, user.uid, user.gid)
    bus = f"unix:path={rt}/bus"
    r = login(svc, user, pam_env={"XDG_RUNTIME_DIR": rt, "DBUS_SESSION_BUS_ADDRESS": bus})
    assert r.ok, r
    (s,) = stub.starts()
    env_seen = dict(e.split("=", 1) for e in s["environ"])
    assert env_seen["XDG_RUNTIME_DIR"] == rt
    assert env_seen["DBUS_SESSION_BUS_ADDRESS"] == bus
    assert os.path.exists(f"{rt}/keywell/control")
    assert ops(stub) == ["O"]
    assert not os.path.exists(user.runtime_dir), "no /run/user/<uid> needed when PAM names one"


def test_callers_runtime_folder_is_passed_over(kit):
    """su and sudo carry the caller's XDG_RUNTIME_DIR; the target user's must be used."""
    user = kit.user()
    other = kit.user()
    os.makedirs(other.runtime_dir, 0o700)
    os.chown(other.runtime_dir, other.uid, other.gid)
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    env = dict(CLEAN_ENV, XDG_RUNTIME_DIR=other.runtime_dir)
    r = login(svc, user, env=env, pam_env={"XDG_RUNTIME_DIR": "/root"})
    assert r.ok, r
    (s,) = stub.starts()
    assert s["resuid"] == [user.uid] * 3
    assert dict(e.split("=", 1) for e in s["environ"])["XDG_RUNTIME_DIR"] == user.runtime_dir
    assert not os.path.exists(f"{other.runtime_dir}/keywell")


def test_runtime_folder_is_created_private_to_the_user(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    assert not os.path.exists(user.runtime_dir)
    assert login(svc, user).ok
    assert mode_of(user.runtime_dir) == (0o700, user.uid, user.gid)
    assert ops(stub) == ["O"]


@pytest.mark.parametrize("kind", ["symlink", "root-owned", "world-writable", "file"])
def test_suspicious_runtime_folder_is_refused(kit, kind):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    target = tempfile.mkdtemp(prefix="kwpam-elsewhere-")
    kit.paths.append(target)
    os.chown(target, user.uid, user.gid)
    if kind == "symlink":
        os.symlink(target, user.runtime_dir)
    elif kind == "root-owned":
        os.mkdir(user.runtime_dir, 0o700)
    elif kind == "world-writable":
        os.mkdir(user.runtime_dir)
        os.chmod(user.runtime_dir, 0o777)
        os.chown(user.runtime_dir, user.uid, user.gid)
    else:
        Path(user.runtime_dir).write_text("")
    r, left = started_nothing(lambda: login(svc, user))
    assert r.ok, r
    assert left == [] and stub.starts() == []
    assert os.listdir(target) == []
    if kind == "symlink":
        assert os.path.islink(user.runtime_dir)
    assert any("is not usable" in l for l in kit.syslog.keywell_lines())


def test_listener_that_is_not_the_user_gets_nothing(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    folder = f"{user.runtime_dir}/keywell"
    os.makedirs(folder, 0o700)
    for d in (user.runtime_dir, folder):
        os.chown(d, user.uid, user.gid)
    path = f"{folder}/control"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # root listens, looks like the user's
    srv.bind(path)
    os.chown(path, user.uid, user.gid)
    srv.listen(4)
    srv.settimeout(0.2)
    received = []
    done = threading.Event()
    ended = threading.Event()  # a connection was accepted and its peer closed it

    def serve():
        while not done.is_set():
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                continue
            conn.settimeout(2)
            try:
                while chunk := conn.recv(4096):
                    received.append(chunk)
            except OSError:
                pass
            conn.close()
            ended.set()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        r, left = started_nothing(lambda: login(svc, user))
        assert r.ok, r
        # The module connected to learn the peer and has exited: the connection is at its end.
        assert ended.wait(30), "the module never connected to the listener"
    finally:
        done.set()
        t.join(3)
        srv.close()
    assert received == [], "nothing may be sent before the peer is known to be the user"
    assert left == [] and stub.starts() == [], "a refused peer is not a reason to start another daemon"
    assert any("listener runs as uid 0" in l for l in kit.syslog.keywell_lines())


def test_home_folder_absent(kit):
    user = kit.user(home=False)
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path)
    r = login(svc, user)
    assert r.ok, r
    (s,) = stub.starts()
    assert s["cwd"] == "/"
    assert dict(e.split("=", 1) for e in s["environ"])["HOME"] == user.home
    assert ops(stub) == ["O"]


# ------------------------------------------------------------------------------------ options


def test_only_if_skips_other_services(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path, auth="only_if=login,sshd debug",
                    session="auto_start only_if=login,sshd debug", password="auto_start only_if=login,sshd")
    r, left = started_nothing(lambda: login(svc, user))
    assert r.ok, r
    assert left == [] and stub.starts() == []
    assert not os.path.exists(user.runtime_dir)
    assert any("not in only_if" in l for l in kit.syslog.keywell_lines())

    svc = kit.stack(daemon=stub.path, auth=f"only_if=login,{SERVICE}",
                    session=f"auto_start only_if=login,{SERVICE},sshd")
    assert login(svc, user).ok
    assert ops(stub) == ["O"] and stub.requests()[0]["count"] == 1


def test_root_is_left_alone(kit):
    stub = kit.stub(kit.user())
    svc = kit.stack(daemon=stub.path, session="auto_start debug")
    had_root_rt = os.path.exists("/run/user/0")
    r, left = started_nothing(lambda: pamtester(svc, "root", "open_session", "close_session"))
    assert r.ok, r
    assert left == [] and stub.starts() == []
    if not had_root_rt:
        assert not os.path.exists("/run/user/0")
    assert any("target is root" in l for l in kit.syslog.keywell_lines())


def test_debug_logs_the_steps_but_no_secret(kit):
    user = kit.user()
    stub = kit.stub(user)
    svc = kit.stack(daemon=stub.path, auth="debug", session="auto_start debug", password="auto_start debug")
    assert login(svc, user).ok
    assert pamtester(svc, user.name, "close_session").ok
    text = "\n".join(kit.syslog.keywell_lines())
    assert "kept the password" in text and "started " in text and "keywelld: ok" in text
    kit.assert_no_leaks()


def test_unknown_option_is_logged_and_harmless(kit):
    user = kit.user()
    svc = kit.stack(daemon="/nonexistent/keywelld", session="auto_start bogus_option")
    assert login(svc, user).ok
    assert any("unknown option: bogus_option" in l for l in kit.syslog.keywell_lines())
