"""A keywelld started before the graphical session learns its display (docs/prompts.md, "A daemon
started before the desktop"): a PAM login (pamtester, pam_keywell.so) starts the real keywelld
with no DISPLAY and unlocks `login`; an untrusted read is then denied, no dialog being possible.
A "desktop" starts after it — Xvfb on a free display, and the autostart entry install.sh
installs, rendered from dbus/keywelld.desktop.in as install.sh renders it, its Exec line run with
the session's DISPLAY and XAUTHORITY as a session manager runs it. The same keywelld, `login`
still unlocked, then asks the same question through a graphical pinentry (a scripted one named
pinentry-gnome3, first on keywelld's PATH) started with that display; Allow lets the read
through. The last session's close makes keywelld forget the display."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from keywell_helpers import PrivateAccount, built, keywelld, module, real_daemon_kit, wait_for  # noqa: F401 (fixtures)
from pam_helpers import dbus_call, keywelld_pids, login, pamtester, start_session_bus

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
NO_DIALOG = "no dialog could be shown"


@pytest.fixture
def kit(real_daemon_kit):
    for tool in ("Xvfb", "dbus-daemon"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing: run scripts/setup.sh")
    return real_daemon_kit


def desktop_exec(bin_dir: str) -> list[str]:
    """The autostart entry's Exec, from the entry rendered as install.sh renders it (@BINDIR@)."""
    entry = (REPO / "dbus" / "keywelld.desktop.in").read_text().replace("@BINDIR@", bin_dir)
    lines = [line for line in entry.splitlines() if line.startswith("Exec=")]
    assert len(lines) == 1, entry
    return shlex.split(lines[0][len("Exec="):])


def access_questions(doctor: str) -> tuple[str, str]:
    """`keywell doctor`'s access questions line: its kind (ok, note, …) and its text."""
    for line in doctor.splitlines():
        kind, _, rest = line.strip().partition(" ")
        subject, _, text = rest.strip().partition(": ")
        if subject == "access questions":
            return kind, text
    raise AssertionError(f"no access questions line in:\n{doctor}")


def start_xvfb(kit) -> str:
    """Xvfb on a display it picks itself (-displayfd): a free one, whatever else runs."""
    read_end, write_end = os.pipe()
    kit.spawn(["Xvfb", "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0", "320x240x24"],
              pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        number = pipe.readline().strip()
    if not number.isdigit():
        pytest.fail("Xvfb did not start")
    return f":{number}"


def test_a_daemon_pam_started_learns_the_session_display_from_the_autostart_entry(kit, keywelld):
    user = kit.user()
    start_session_bus(kit, user)

    # keywelld's PATH starts with a folder holding a scripted pinentry-gnome3 (the first graphical
    # pinentry keywelld looks for), which notes the display it was started with.
    bin_dir = kit.bindir()
    shutil.copy(HERE / "scripted_pinentry.py", f"{bin_dir}/scripted_pinentry.py")
    out = Path(user.home) / "out"
    out.mkdir(mode=0o700)
    os.chown(out, user.uid, user.gid)
    answers, displays = out / "answers.json", out / "displays"
    pinentry = Path(bin_dir) / "pinentry-gnome3"
    pinentry.write_text('#!/bin/sh\nprintf "DISPLAY=%s XAUTHORITY=%s\\n" "$DISPLAY" "$XAUTHORITY" >> '
                        f'{shlex.quote(str(displays))}\nexec /usr/bin/python3 {shlex.quote(bin_dir)}/scripted_pinentry.py\n')
    pinentry.chmod(0o755)
    daemon = Path(bin_dir) / "keywelld-with-pinentry"
    daemon.write_text(f'#!/bin/sh\nPATH={shlex.quote(bin_dir)}:$PATH SCRIPTED_PINENTRY_ANSWERS={shlex.quote(str(answers))} '
                      f'exec {shlex.quote(keywelld)} "$@"\n')
    daemon.chmod(0o755)
    stack = kit.stack(daemon=str(daemon))

    env = kit.user_env(user)
    keywell = built("KEYWELL")

    def as_user(args, extra=None, check=True):
        result = kit.as_user(user, [str(a) for a in args], env={**env, **(extra or {})}, capture_output=True,
                             text=True, timeout=120)
        if check:
            assert result.returncode == 0, f"{args}: {result.stdout}{result.stderr}"
        return result

    # Two programs of the user: a writer the item trusts, a reader it does not.
    programs = Path(user.home) / "programs"
    programs.mkdir()
    for name in ("writer", "reader"):
        shutil.copy(keywell, programs / name)
    subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(programs)], check=True)
    log = Path(user.home) / ".local/state/keywell/keywelld.log"

    # The login starts keywelld (no DISPLAY anywhere) and makes `login`, unlocked.
    assert login(stack, user).ok
    wait_for(lambda: len(keywelld_pids(user)) == 1, "keywelld to start")
    pid = keywelld_pids(user)[0]
    wait_for(lambda: dbus_call(kit, user, "info", "login").get("ok", {}).get("locked") is False, "login unlocked")
    started_with = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert not [entry for entry in started_with if entry.startswith((b"DISPLAY=", b"WAYLAND_DISPLAY="))], started_with
    as_user([programs / "writer", "add-generic-password", "-s", "mail", "-a", "me", "-l", "Mail", "-w", "mail-secret"])
    answers.write_text(json.dumps(["allow"]))
    os.chown(answers, user.uid, user.gid)

    # Before the desktop: no dialog can be shown, so the read is denied, and the log says why.
    denied = as_user([programs / "reader", "find-generic-password", "-s", "mail", "-w"], check=False)
    assert denied.returncode != 0 and "mail-secret" not in denied.stdout, denied
    wait_for(lambda: log.exists() and NO_DIALOG in log.read_text(), "the denial's line in keywelld's log")
    assert not displays.exists(), "a pinentry ran without a display"
    kind, text = access_questions(as_user([keywell, "doctor"], check=False).stdout)
    assert kind == "note" and text.startswith("none can be shown (there is no display"), text

    # The desktop starts: its X server, then the autostart entry in its environment.
    display = start_xvfb(kit)
    xauthority = Path(user.home) / ".Xauthority"
    xauthority.write_bytes(b"")
    os.chown(xauthority, user.uid, user.gid)
    session = {"DISPLAY": display, "XAUTHORITY": str(xauthority)}
    command = desktop_exec(str(Path(keywell).parent))
    assert command[0] == str(Path(keywell).parent / "keywell"), command
    as_user(command, session)
    assert f"learned the session's display: DISPLAY={display} XAUTHORITY={xauthority}" in log.read_text()

    # The same read: the question is shown on the session's display, Allow lets it through.
    allowed = as_user([programs / "reader", "find-generic-password", "-s", "mail", "-w"], check=False)
    assert allowed.returncode == 0 and allowed.stdout == "mail-secret\n", f"{allowed}\nlog:\n{log.read_text()[-2000:]}"
    assert displays.read_text().splitlines() == [f"DISPLAY={display} XAUTHORITY={xauthority}"]
    assert keywelld_pids(user) == [pid], "keywelld was restarted"
    assert dbus_call(kit, user, "info", "login")["ok"]["locked"] is False
    # keywell doctor asks keywelld, which now has the display (its /proc environ still has none).
    assert access_questions(as_user([keywell, "doctor"], check=False).stdout) == (
        "ok", f"shown by {pinentry} (DISPLAY={display} passed to it)")

    # Values that are not a display are refused with the reason, and what was learned stays.
    for bad, reason in (({"DISPLAY": ":0; xterm"}, "is not an X display"),
                        ({"DISPLAY": display, "XAUTHORITY": "/etc/passwd"}, "is not a file of this user"),
                        ({"DISPLAY": "", "WAYLAND_DISPLAY": "../wayland-0"}, "WAYLAND_DISPLAY")):
        refused = as_user(command, bad, check=False)
        assert refused.returncode != 0 and reason in refused.stderr, refused

    # The last session closes: `login` locks and the display is forgotten. Unlocked again (as
    # `keywell unlock-keychain` would), the reader is asked nothing and denied as before.
    assert pamtester(stack, user.name, "close_session").ok
    wait_for(lambda: "forgot the session's display" in log.read_text(), "keywelld to forget the display")
    assert "ok" in dbus_call(kit, user, "unlock", "login", password=user.password)
    before = log.read_text().count(NO_DIALOG)
    answers.write_text(json.dumps(["allow"]))
    again = as_user([programs / "reader", "find-generic-password", "-s", "mail", "-w"], check=False)
    assert again.returncode != 0 and "mail-secret" not in again.stdout, again
    wait_for(lambda: log.read_text().count(NO_DIALOG) > before, "the second denial's line")
    assert len(displays.read_text().splitlines()) == 1, "a pinentry ran after the session ended"
    assert keywelld_pids(user) == [pid]


def test_the_autostart_entry_starts_keywelld_through_the_bus_when_none_runs():
    """No keywelld yet (no PAM login): the entry's command starts it by D-Bus activation, as the
    entry's old StartServiceByName did, and hands it the display."""
    account = PrivateAccount(built("KEYWELLD", "keywelld"), "keywell-session-display-", bin_dir=True)
    try:
        pinentry = account.bin / "pinentry-gnome3"
        pinentry.write_text("#!/bin/sh\necho OK\n")
        pinentry.chmod(0o755)
        keywell = built("KEYWELL")
        command = desktop_exec(str(Path(keywell).parent))
        started = subprocess.run(command, env={**account.env, "DISPLAY": ":5"}, capture_output=True, text=True, timeout=120,
                                 **account.owner.spawn)
        assert started.returncode == 0, started.stderr
        # doctor runs without a DISPLAY of its own; keywelld answers with what it learned.
        doctor = subprocess.run([keywell, "doctor"], env=account.env, capture_output=True, text=True, timeout=120,
                                **account.owner.spawn)
        assert access_questions(doctor.stdout) == ("ok", f"shown by {pinentry} (DISPLAY=:5 passed to it)"), doctor.stdout
    finally:
        account.close()
