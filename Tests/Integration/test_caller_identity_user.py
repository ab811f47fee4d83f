"""Caller identities when keywelld and its callers run as an ordinary user, as on a desktop: the
daemon reads its callers' /proc entries with a user's rights, not root's (which pass every
check). A throwaway user runs keywelld on their own session bus; their dbus-send and python
script are identified exactly as for root, and a program the user owns keeps its hash.

Needs root (to make the user) and KEYWELLD (scripts/test.sh sets it).
"""

from __future__ import annotations

import os
import shutil

import pytest

from identity_helpers import PY_CALLER, PYTHON, Answer, exe, sha256
from pam_helpers import Kit, SyslogCapture, module_path, require_root_and_tools, start_session_bus
from test_other_users import start_daemon, stop_daemon

WHO_AM_I = ["dbus-send", "--session", "--print-reply=literal", "--dest=org.keywell.Keychain", "/org/keywell/Keychain",
            "org.keywell.Keychain1.WhoAmI"]


@pytest.fixture
def kit():
    require_root_and_tools()
    k = Kit(module_path(), SyslogCapture())
    try:
        yield k
    finally:
        k.close()


def test_an_ordinary_users_callers_are_identified(kit):
    keywelld = os.environ.get("KEYWELLD")
    if not keywelld or not os.access(keywelld, os.X_OK):
        pytest.fail("KEYWELLD is not set to the built keywelld (scripts/test.sh sets it)")
    user = kit.user()
    start_session_bus(kit, user)
    daemon = start_daemon(kit, user, keywelld)
    try:
        env = kit.user_env(user)
        sent = kit.as_user(user, WHO_AM_I, env=env, capture_output=True, text=True, timeout=120)
        assert sent.returncode == 0, sent
        assert sent.stdout.split()[0] == exe(shutil.which("dbus-send"))
        # The same program as a copy the user owns: the user could replace it, so it keeps its hash.
        own_copy = os.path.join(user.home, "dbus-send")
        shutil.copyfile(shutil.which("dbus-send"), own_copy)
        os.chmod(own_copy, 0o755)
        os.chown(own_copy, user.uid, user.gid)
        copied = kit.as_user(user, [own_copy, *WHO_AM_I[1:]], env=env, capture_output=True, text=True, timeout=120)
        assert copied.returncode == 0, copied
        assert copied.stdout.split()[0] == exe(own_copy) == f"exe:{own_copy};sha256={sha256(own_copy)}"

        script = os.path.join(user.home, "tool.py")
        with open(script, "w") as f:
            f.write(PY_CALLER)
        os.chown(script, user.uid, user.gid)
        ran = kit.as_user(user, [PYTHON, "tool.py"], env=env, cwd=user.home, capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0, ran
        answer = Answer.parse(ran.stdout)
        assert answer.identity == f"{exe(os.path.realpath(PYTHON))};script={script};script-sha256={sha256(script)}"
    finally:
        stop_daemon(daemon)
