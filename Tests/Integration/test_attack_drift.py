"""Attack: choosing the login keychain's password through the drift remedy.

When the login password does not open `login` (root reset it), the daemon keeps the login
password and re-wraps `login` to it once the user proves the old one by unlocking. Only a
password that came from root (the PAM module, after the PAM stack accepted it) may be kept: a
process of the user itself could otherwise send `O` or `P` with a password of its choosing,
wait for the user's next unlock, and own the keychain's password. The real daemon runs as a
throwaway user, started by pam_keywell.so through pamtester, on a private session bus.

Needs KEYWELLD (scripts/test.sh sets it) and root.
"""

from __future__ import annotations

import json

import pytest

from keywell_helpers import keywelld, module, real_daemon_kit, real_daemon_stack  # noqa: F401 (fixtures)
from pam_helpers import dbus_call, login, pamtester, start_session_bus
from security_figures import record

AUTH_FAILED = "org.keywell.Keychain1.Error.AuthFailed"

# Runs as the user: one control request with the password(s) from stdin (never argv), one per line.
CONTROL_CLIENT = r'''
import json, socket, struct, sys
op, path = sys.argv[1], sys.argv[2]
fields = [line.encode() for line in sys.stdin.read().split("\n") if line]
request = b"KWC1" + op.encode() + bytes([len(fields)])
for field in fields:
    request += struct.pack(">I", len(field)) + field
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
s.connect(path)
s.sendall(request)
answer = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    answer += chunk
status, length = struct.unpack(">iI", answer[4:12])
print(json.dumps({"status": status, "message": answer[12:12 + length].decode()}))
'''


@pytest.fixture
def kit(real_daemon_kit):
    return real_daemon_kit


@pytest.fixture
def stack(real_daemon_stack):
    return real_daemon_stack


def as_user_control(kit, user, op: str, *passwords: str) -> dict:
    r = kit.as_user(user, ["/usr/bin/python3", "-c", CONTROL_CLIENT, op, f"{user.runtime_dir}/keywell/control"],
                    input="\n".join(passwords).encode(), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout.decode().strip().splitlines()[-1])


def unlock(kit, user, password: str) -> dict:
    return dbus_call(kit, user, "unlock", "login", password=password)


def test_a_process_of_the_user_cannot_choose_logins_password(kit, stack):
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok  # creates login with the login password
    assert "ok" in dbus_call(kit, user, "lock", "login")
    chosen = "Attacker-" + user.password
    kit.secrets.append(chosen)

    # The attack: a process of the user sends the password it wants, as O and as P.
    opened = as_user_control(kit, user, "O", chosen)
    changed = as_user_control(kit, user, "P", chosen, chosen)
    assert opened["status"] == -25293 and changed["status"] == -25293, (opened, changed)

    # The user unlocks login with its real password, as every day.
    assert "ok" in unlock(kit, user, user.password)
    assert "ok" in dbus_call(kit, user, "lock", "login")
    attacker = unlock(kit, user, chosen)
    kept = attacker.get("error") == AUTH_FAILED and "ok" in unlock(kit, user, user.password)
    record("a process of the user sends O and P with a password of its choosing, then the user unlocks login",
           "login re-wrapped to the chosen password: " + ("no" if kept else "YES"), "no", kept)
    assert attacker.get("error") == AUTH_FAILED, f"login now opens with the attacker's password: {attacker}"
    assert kept, "login no longer opens with the user's own password"


def test_drift_after_root_reset_the_password_is_still_repaired(kit, stack):
    """The remedy itself: root resets the login password (no P is sent), the next login's O
    from root does not open login; the user unlocks with the old password and login follows
    the login password from then on."""
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    old = user.password
    assert pamtester(stack, user.name, "close_session").ok
    kit.set_password(user, "Reset-by-root-" + old)

    r = login(stack, user)
    assert r.ok, r
    assert dbus_call(kit, user, "info", "login")["ok"]["locked"] is True  # drifted: O did not open it
    assert "ok" in unlock(kit, user, old)  # proves the old password: re-wrapped to the login password
    assert "ok" in dbus_call(kit, user, "lock", "login")
    assert unlock(kit, user, old).get("error") == AUTH_FAILED
    assert "ok" in unlock(kit, user, user.password)
    # and the next login opens it by itself
    assert "ok" in dbus_call(kit, user, "lock", "login")
    assert pamtester(stack, user.name, "close_session").ok
    assert login(stack, user).ok
    assert dbus_call(kit, user, "info", "login")["ok"]["locked"] is False
