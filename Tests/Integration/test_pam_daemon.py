"""pam_keywell.so with the real keywelld: the login keychain follows logins, logouts and password
changes. Checked the way a desktop would see it: through the daemon's native D-Bus API, as the
user, on a private session bus at $XDG_RUNTIME_DIR/bus.

These need the built daemon: KEYWELLD=/path/to/keywelld (scripts/test.sh sets it). Without it
they fail; they do not skip.
"""

import os
import signal
import stat
import time

import pytest

from keywell_helpers import keywelld, module, real_daemon_kit, real_daemon_stack  # noqa: F401 (fixtures)
from pam_helpers import (
    LOGIN_BOUND_S, dbus_call, ensure_runtime_dir, keywelld_pids, login, pamtester, start_session_bus,
    started_nothing,
)



@pytest.fixture
def kit(real_daemon_kit):
    return real_daemon_kit


@pytest.fixture
def stack(real_daemon_stack):
    return real_daemon_stack


def info(kit, user):
    r = dbus_call(kit, user, "info", "login")
    assert "ok" in r, r
    return r["ok"]


def locked(kit, user) -> bool:
    return info(kit, user)["locked"]


def unlocked_after_the_login(kit, user, timeout: float = 120) -> bool:
    """Waits for the daemon to finish the login's `O`. The PAM module waits PHASE_BUDGET_S for
    the answer, then the login goes on (docs/control-protocol.md, "Timing"); on a loaded machine
    the release build's Argon2id outlasts that, and the daemon creates or unlocks `login` a little
    after pamtester returned. Not there at the timeout: the password never reached it."""
    deadline = time.monotonic() + timeout
    while True:
        r = dbus_call(kit, user, "info", "login")
        if "ok" in r and r["ok"]["locked"] is False:
            return True
        if time.monotonic() > deadline:
            pytest.fail(f"login not unlocked {timeout:.0f} s after the login: {r}")
        time.sleep(0.2)


def change_password(kit, stack, user, new):
    old = user.password
    kit.secrets.append(new)
    r = pamtester(stack, user.name, "chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)", stdin=f"{old}\n{new}\n{new}\n")
    assert r.ok, r
    assert r.elapsed < LOGIN_BOUND_S, r
    user.password = new


def test_first_login_creates_the_login_keychain_before_any_session_bus(kit, stack):
    user = kit.user()
    r = login(stack, user)
    assert r.ok, r
    assert r.elapsed < LOGIN_BOUND_S, r
    folder = os.path.join(user.home, ".local/share/keywell/keychains")
    db = os.path.join(folder, "login.keychain-db")
    assert os.path.exists(db), "the daemon creates login at the first login, bus or not"
    st = os.stat(db)
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (user.uid, 0o600)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert len(keywelld_pids(user)) == 1

    start_session_bus(kit, user)  # the daemon claims its names once the bus is there
    i = info(kit, user)
    assert i["locked"] is False
    assert i["isLogin"] is True and i["isDefault"] is True
    assert dbus_call(kit, user, "default") == {"ok": "login"}
    assert dbus_call(kit, user, "searchlist")["ok"][0] == "login"


def test_close_of_the_last_session_locks_login(kit, stack):
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    assert locked(kit, user) is False
    r = pamtester(stack, user.name, "close_session")
    assert r.ok and r.elapsed < LOGIN_BOUND_S, r
    assert locked(kit, user) is True


def test_a_second_session_keeps_it_unlocked(kit, stack):
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    assert login(stack, user).ok  # the daemon is already running now
    assert len(keywelld_pids(user)) == 1
    assert pamtester(stack, user.name, "close_session").ok
    assert locked(kit, user) is False
    assert pamtester(stack, user.name, "close_session").ok
    assert locked(kit, user) is True


def test_daemon_already_running_before_the_login(kit, stack, keywelld):
    user = kit.user()
    start_session_bus(kit, user)
    env = kit.user_env(user)
    kit.spawn(["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups", "--", keywelld],
              env=env, cwd=user.home)
    deadline = time.monotonic() + 5
    while not os.path.exists(f"{user.runtime_dir}/keywell/control") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert login(stack, user).ok
    assert len(keywelld_pids(user)) == 1
    assert unlocked_after_the_login(kit, user)


def test_password_change_rewraps_login(kit, stack):
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    old = user.password
    change_password(kit, stack, user, "Changed-" + old)
    assert "ok" in dbus_call(kit, user, "lock", "login")
    r = dbus_call(kit, user, "unlock", "login", password=old)
    assert r.get("error") == "org.keywell.Keychain1.Error.AuthFailed", r
    assert "ok" in dbus_call(kit, user, "unlock", "login", password=user.password)
    # and the next login unlocks it with the new password
    assert "ok" in dbus_call(kit, user, "lock", "login")
    assert pamtester(stack, user.name, "close_session").ok
    assert login(stack, user).ok
    assert locked(kit, user) is False


def test_wrong_password_fails_and_leaves_nothing(kit, stack):
    user = kit.user()
    wrong = "Wrong-" + user.password
    kit.secrets.append(wrong)
    r, left = started_nothing(lambda: login(stack, user, password=wrong))
    assert not r.ok
    assert left == [] and keywelld_pids(user) == []
    assert not os.path.exists(os.path.join(user.home, ".local/share/keywell/keychains/login.keychain-db"))
    kit.assert_no_leaks()


def test_login_password_that_does_not_open_the_keychain(kit, stack):
    """Drift: root reset the login password, so the keychain still has the old one."""
    user = kit.user()
    start_session_bus(kit, user)
    assert pamtester(stack, user.name, "open_session").ok  # starts the daemon, no password
    keychain_pw = "Keychain-only-" + user.password
    kit.secrets.append(keychain_pw)
    assert "ok" in dbus_call(kit, user, "create", "login", password=keychain_pw)
    assert "ok" in dbus_call(kit, user, "lock", "login")
    assert pamtester(stack, user.name, "close_session").ok
    r = login(stack, user)
    assert r.ok, r
    assert r.elapsed < LOGIN_BOUND_S
    assert locked(kit, user) is True
    assert any("different password" in l for l in kit.syslog.keywell_lines())


def test_crashed_daemon_is_replaced_at_the_next_login(kit, stack):
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    (pid,) = keywelld_pids(user)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30  # a hang guard: the kill is what ends it
    while pid in keywelld_pids(user) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pid not in keywelld_pids(user), "SIGKILL did not end the daemon"
    r = login(stack, user)
    assert r.ok and r.elapsed < LOGIN_BOUND_S, r
    assert locked(kit, user) is False


def test_hung_daemon_still_lets_the_login_through(kit, stack):
    user = kit.user()
    assert login(stack, user).ok
    (pid,) = keywelld_pids(user)
    os.kill(pid, signal.SIGSTOP)
    try:
        r = login(stack, user)
        assert r.ok, r
        assert r.elapsed < LOGIN_BOUND_S, r
        r = pamtester(stack, user.name, "close_session")
        assert r.ok and r.elapsed < LOGIN_BOUND_S, r
    finally:
        os.kill(pid, signal.SIGCONT)


def test_unicode_long_password_unlocks(kit, stack):
    password = ("Ünïcødé-🔑-pässwörd-" * 20)[:300]
    user = kit.user(password=password)
    start_session_bus(kit, user)
    assert login(stack, user).ok
    assert "ok" in dbus_call(kit, user, "lock", "login")
    assert "ok" in dbus_call(kit, user, "unlock", "login", password=password)


def test_home_folder_absent_still_logs_in(kit, stack):
    user = kit.user(home=False)
    r = login(stack, user)
    assert r.ok, r
    assert r.elapsed < LOGIN_BOUND_S, r
