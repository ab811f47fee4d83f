"""A login keychain whose password the user changed on purpose (docs/login-unlock.md, "A password
changed on purpose"), with real PAM (pamtester, pam_unix + pam_keywell.so) and the real keywelld:
the next login, whose password no longer opens it, does not re-wrap it silently; the keychain
stays locked, the login is not slowed, and the user is asked through the prompter (a scripted
pinentry, KEYWELL_PINENTRY) whether to update it to the login password or keep it separate; each
answer does what it says. A password change made by PAM itself (chauthtok) stays silent.

Also the first store before any login (docs/secret-service.md, "First store"): the keychain a
`secret-tool store` made before `login` existed stops being the default at the login that makes
`login`, and stays in the search list.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest

from keywell_helpers import built, keywelld, module, real_daemon_kit, wait_for  # noqa: F401 (fixtures)
from pam_helpers import LOGIN_BOUND_S, dbus_call, keywelld_pids, login, pamtester, start_session_bus

HERE = Path(__file__).resolve().parent
QUESTION = "differs from your login password"


class Desk:
    """A user whose keywelld (started by pam_keywell) asks through a scripted pinentry: answers
    go in `answers`, each dialog's commands land in `dialog_log`, each pinentry run in `runs`."""

    def __init__(self, kit, keywelld_path: str, graphical: bool = False) -> None:
        """`graphical`: no KEYWELL_PINENTRY; the scripted pinentry is the graphical one keywelld
        looks for on its PATH (pinentry-gnome3), usable only once keywelld knows a display."""
        self.kit = kit
        self.user = kit.user()
        start_session_bus(kit, self.user)
        bin_dir = kit.bindir()
        shutil.copy(HERE / "scripted_pinentry.py", f"{bin_dir}/scripted_pinentry.py")
        out = Path(self.user.home) / "out"
        out.mkdir(mode=0o700)
        os.chown(out, self.user.uid, self.user.gid)
        self.answers, self.dialog_log, self.runs = out / "answers.json", out / "dialog.log", out / "runs"
        self.set_answers([])
        self.displays = out / "displays"
        pinentry = Path(bin_dir) / ("pinentry-gnome3" if graphical else "pinentry-scripted")
        pinentry.write_text('#!/bin/sh\nprintf "%s\\n" "$DISPLAY" >> ' f"{shlex.quote(str(self.displays))}\n"
                            f"exec /usr/bin/python3 {shlex.quote(bin_dir)}/scripted_pinentry.py\n")
        pinentry.chmod(0o755)
        daemon = Path(bin_dir) / "keywelld-with-pinentry"
        env = {"SCRIPTED_PINENTRY_ANSWERS": str(self.answers),
               "SCRIPTED_PINENTRY_LOG": str(self.dialog_log), "SCRIPTED_PINENTRY_RUNS": str(self.runs)}
        env.update({"PATH": f"{bin_dir}:/usr/bin:/bin"} if graphical else {"KEYWELL_PINENTRY": str(pinentry)})
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        daemon.write_text(f"#!/bin/sh\n{exports} exec {shlex.quote(keywelld_path)} \"$@\"\n")
        daemon.chmod(0o755)
        self.stack = kit.stack(daemon=str(daemon))
        self.log = Path(self.user.home) / ".local/state/keywell/keywelld.log"

    def set_answers(self, answers: list) -> None:
        self.answers.write_text(json.dumps(answers))
        os.chown(self.answers, self.user.uid, self.user.gid)

    def dialogs(self) -> int:
        return len(self.runs.read_text().splitlines()) if self.runs.exists() else 0

    def daemon_log(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def login(self):
        r = login(self.stack, self.user)
        assert r.ok, r
        assert r.elapsed < LOGIN_BOUND_S, r
        return r

    def logout(self) -> None:
        assert pamtester(self.stack, self.user.name, "close_session").ok

    def locked(self) -> bool:
        r = dbus_call(self.kit, self.user, "info", "login")
        assert "ok" in r, r
        return r["ok"]["locked"]

    def opens(self, password: str) -> bool:
        """Whether `password` unlocks `login` now (locked first)."""
        assert "ok" in dbus_call(self.kit, self.user, "lock", "login")
        return "ok" in dbus_call(self.kit, self.user, "unlock", "login", password=password)

    def set_keychain_password(self, old: str, new: str) -> None:
        """On purpose, as `keywell set-keychain-password` does it (passwords on stdin)."""
        self.kit.secrets.append(new)
        r = self.kit.as_user(self.user, [built("KEYWELL"), "set-keychain-password", "login"],
                             input=f"{old}\n{new}\n{new}\n", capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r


@pytest.fixture
def desk(real_daemon_kit, keywelld):
    return Desk(real_daemon_kit, keywelld)


def changed_on_purpose(desk: Desk) -> str:
    """First login makes `login`; the user changes its password on purpose and logs out."""
    desk.login()
    wait_for(lambda: len(keywelld_pids(desk.user)) == 1, "keywelld to start")
    assert desk.locked() is False
    own = "Own-" + desk.user.password
    desk.set_keychain_password(desk.user.password, own)
    desk.logout()
    assert desk.locked() is True
    return own


def test_update_asks_for_the_keychain_password_and_rewraps_to_the_login_password(desk):
    own = changed_on_purpose(desk)
    wrong = "Wrong-" + own
    desk.kit.secrets.append(wrong)
    desk.set_answers([wrong, own])
    before = desk.dialogs()
    desk.login()
    wait_for(lambda: "updated the login keychain's password" in desk.daemon_log(), "the update")
    assert desk.dialogs() == before + 1, "one dialog, asked again in it after the wrong password"
    shown = desk.dialog_log.read_text()
    assert QUESTION in shown and "SETOK Update Password" in shown and "SETCANCEL Keep Separate" in shown, shown
    assert "SETERROR The password you entered is not correct." in shown, shown
    assert desk.locked() is False, "Update unlocks it"
    assert desk.opens(desk.user.password) and not desk.opens(own), "re-wrapped to the login password"
    # The next login unlocks it at once and asks nothing.
    desk.logout()
    desk.login()
    assert desk.locked() is False
    assert desk.dialogs() == before + 1


def test_keep_separate_keeps_it_locked_and_is_not_asked_again(desk):
    own = changed_on_purpose(desk)
    desk.set_answers([None])  # the Keep Separate button (pinentry's cancel)
    before = desk.dialogs()
    desk.login()
    wait_for(lambda: "keeps the login keychain's password separate" in desk.daemon_log(), "the answer")
    assert desk.dialogs() == before + 1
    assert desk.locked() is True
    # Unlocked with its own password: nothing is re-wrapped behind the user's back.
    assert desk.opens(own)
    assert not desk.opens(desk.user.password) and desk.opens(own)
    # The next login asks nothing, changes nothing.
    desk.logout()
    desk.login()
    assert desk.locked() is True
    assert "keep its password separate" in desk.daemon_log()
    assert desk.dialogs() == before + 1
    assert desk.opens(own)


def test_unanswered_question_leaves_it_as_it_was_and_asks_at_the_next_login(desk):
    own = changed_on_purpose(desk)
    # The pinentry dies in the middle of the dialog (its script is unreadable): no answer at all.
    desk.answers.write_text("not json")
    before = desk.dialogs()
    desk.login()
    wait_for(lambda: "was not answered" in desk.daemon_log(), "the unanswered question")
    assert desk.dialogs() == before + 1
    assert desk.locked() is True
    assert desk.opens(own) and not desk.opens(desk.user.password), "not re-wrapped, not kept separate"
    # Asked again at the next login; this time Update.
    desk.logout()
    desk.set_answers([own])
    desk.login()
    wait_for(lambda: "updated the login keychain's password" in desk.daemon_log(), "the update")
    assert desk.dialogs() == before + 2
    assert desk.opens(desk.user.password)


def test_a_password_change_through_pam_stays_silent(desk):
    desk.login()
    wait_for(lambda: len(keywelld_pids(desk.user)) == 1, "keywelld to start")
    old, new = desk.user.password, "Changed-" + desk.user.password
    desk.kit.secrets.append(new)
    r = pamtester(desk.stack, desk.user.name, "chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)", stdin=f"{old}\n{new}\n{new}\n")
    assert r.ok, r
    desk.user.password = new
    desk.logout()
    desk.login()
    assert desk.locked() is False, "the login password opens it"
    assert desk.dialogs() == 0, "nothing asked"
    assert QUESTION not in (desk.dialog_log.read_text() if desk.dialog_log.exists() else "")


def test_a_first_store_before_any_login_stops_being_the_default_once_login_exists(desk):
    kit, user = desk.kit, desk.user
    # keywelld runs (a session without a password, as a display manager's greeter-less start),
    # and a program stores a secret: the prompt makes "Default keyring" the default.
    assert pamtester(desk.stack, user.name, "open_session").ok
    first = "First-" + user.password
    kit.secrets.append(first)
    desk.set_answers([first])
    r = kit.as_user(user, ["secret-tool", "store", "--label=x", "service", "s", "account", "a"],
                    input="first-secret", capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r
    made = dbus_call(kit, user, "default")["ok"]
    assert made != "login", made
    assert pamtester(desk.stack, user.name, "close_session").ok
    # The first login with a password makes `login`, and `login` becomes the default.
    desk.login()
    assert dbus_call(kit, user, "default") == {"ok": "login"}
    assert dbus_call(kit, user, "searchlist")["ok"] == ["login", made], "the first keychain stays searched"
    assert desk.locked() is False
    # New stores go to the unlocked login keychain; the first secret is still found.
    r = kit.as_user(user, ["secret-tool", "store", "--label=y", "service", "s2", "account", "a"],
                    input="second-secret", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r
    assert desk.dialogs() == 1, "the second store asked nothing"
    assert "login is the default keychain now" in desk.daemon_log()


SEAHORSE_CHANGE = r'''
import sys
import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
service = bus.get_object("org.freedesktop.secrets", "/org/freedesktop/secrets")
internal = dbus.Interface(service, "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface")
prompt_path = internal.ChangeWithPrompt(dbus.ObjectPath("/org/freedesktop/secrets/collection/login"))
loop, outcome = GLib.MainLoop(), {}
def completed(dismissed, result):
    outcome["dismissed"] = bool(dismissed)
    loop.quit()
prompt = bus.get_object("org.freedesktop.secrets", prompt_path)
prompt.connect_to_signal("Completed", completed, dbus_interface="org.freedesktop.Secret.Prompt")
dbus.Interface(prompt, "org.freedesktop.Secret.Prompt").Prompt("")
GLib.timeout_add_seconds(60, loop.quit)
loop.run()
print("dismissed" if outcome.get("dismissed", True) else "changed")
'''


def test_a_change_through_seahorses_interface_is_on_purpose_too(desk):
    """Seahorse's "Change Password" (gnome-keyring's ChangeWithPrompt) marks it as well."""
    desk.login()
    wait_for(lambda: len(keywelld_pids(desk.user)) == 1, "keywelld to start")
    own = "Seahorse-" + desk.user.password
    desk.kit.secrets.append(own)
    desk.set_answers([desk.user.password, own])  # the current password, then the new one
    r = desk.kit.as_user(desk.user, ["/usr/bin/python3", "-c", SEAHORSE_CHANGE], capture_output=True, text=True, timeout=90)
    assert r.returncode == 0 and r.stdout.strip() == "changed", r
    desk.logout()
    desk.set_answers([None])
    desk.login()
    wait_for(lambda: "keeps the login keychain's password separate" in desk.daemon_log(), "the question and its answer")
    assert QUESTION in desk.dialog_log.read_text()
    assert desk.locked() is True
    assert desk.opens(own)


def test_a_login_before_the_desktop_asks_once_the_session_has_a_display(real_daemon_kit, keywelld):
    """pam_keywell starts keywelld with no display: the question waits, and is shown on the
    display of the session that starts after the login (docs/prompts.md, "A daemon started
    before the desktop"), by the same keywelld."""
    from test_session_display import desktop_exec, start_xvfb

    desk = Desk(real_daemon_kit, keywelld, graphical=True)
    own = changed_on_purpose(desk)
    pid = keywelld_pids(desk.user)
    desk.set_answers([own])
    desk.login()
    wait_for(lambda: "cannot ask about the login keychain's password yet" in desk.daemon_log(), "the question to wait")
    assert desk.dialogs() == 0 and desk.locked() is True

    display = start_xvfb(desk.kit)
    xauthority = Path(desk.user.home) / ".Xauthority"
    xauthority.write_bytes(b"")
    os.chown(xauthority, desk.user.uid, desk.user.gid)
    command = desktop_exec(str(Path(built("KEYWELL")).parent))
    r = desk.kit.as_user(desk.user, command, env={**desk.kit.user_env(desk.user), "DISPLAY": display,
                                                   "XAUTHORITY": str(xauthority)},
                         capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r
    wait_for(lambda: "updated the login keychain's password" in desk.daemon_log(), "the question on the session's display")
    assert desk.displays.read_text().splitlines() == [display]
    assert keywelld_pids(desk.user) == pid, "the same keywelld asked"
    assert desk.locked() is False and desk.opens(desk.user.password)
