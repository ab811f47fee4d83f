"""Prompts that reach the user or say why not (docs/prompts.md), with the real programs:
secret-tool (libsecret) as the client; no display at all; the real pinentry-curses on a terminal
the daemon was configured for; gcr's own password dialog under Xvfb, answered by xdotool typing
the password.

Needs KEYWELLD (scripts/test.sh sets it).
"""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import time
from pathlib import Path

import dbus
import pytest

from keywell_helpers import bodies_as_test_user, wait_for
from secret_service_helpers import LOGIN_PASSWORD, SERVICE_PATH, KeywellBus, session  # noqa: F401 (fixture)
from test_seahorse import artifacts, display  # noqa: F401 (fixtures: Xvfb, screenshot folder)

SERVICE_IFACE = "org.freedesktop.Secret.Service"
LOGIN = "/org/freedesktop/secrets/collection/login"
# Hang guards only (a busy 2-core machine); no test asserts on time.
GUARD = 120


def _locked_login(bus: KeywellBus) -> None:
    """login with one item, then locked."""
    bus.create_login()
    bus.secret_tool("store", "--label=Mail", "service", "imap", input="hunter2", check=True)
    bus.native().Lock("login")


def _login_locked(bus: KeywellBus) -> bool:
    return bool(bus.native().GetInfo("login")["locked"])



def test_locked_lookup_without_any_display_fails_at_once_and_says_why():
    bus = KeywellBus(scripted_pinentry=False)
    try:
        _locked_login(bus)
        lookup = bus.run(["secret-tool", "lookup", "service", "imap"], timeout=GUARD)
        stderr = lookup.stderr.decode()
        assert lookup.returncode != 0 and lookup.stdout == b""
        assert "No password prompt can be shown to unlock the keychain “login”" in stderr, stderr
        assert "no display" in stderr and "keywell unlock-keychain" in stderr, stderr
        # The daemon says so too, at the normal level (the line is an error, not debug).
        assert "error: cannot ask for the password to unlock keychain “login”" in bus.daemon_log(), bus.daemon_log()[-2000:]

        # On the bus: Unlock itself fails with IsLocked (no prompt that could only be dismissed).
        service = dbus.Interface(bus.dbus().get_object("org.freedesktop.secrets", SERVICE_PATH), SERVICE_IFACE)
        with pytest.raises(dbus.DBusException) as failure:
            service.Unlock([dbus.ObjectPath(LOGIN)])
        assert failure.value.get_dbus_name() == "org.freedesktop.Secret.Error.IsLocked"
        assert _login_locked(bus)
    finally:
        bus.close()


def test_terminal_pinentry_on_the_configured_terminal():
    """KEYWELL_PINENTRY_TTY names a terminal: with no display, the real pinentry-curses asks there."""
    if shutil.which("pinentry-curses") is None:
        pytest.fail("pinentry-curses is missing: run scripts/setup.sh")
    master, slave = pty.openpty()
    terminal = os.ttyname(slave)
    bus = KeywellBus(scripted_pinentry=False, daemon_env={"KEYWELL_PINENTRY_TTY": terminal})
    try:
        _locked_login(bus)
        lookup = subprocess.Popen(["secret-tool", "lookup", "service", "imap"], env=bus.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        seen = b""
        answered = 0
        deadline = time.monotonic() + GUARD
        # Wrong password once (the dialog asks again), then the right one.
        while lookup.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                continue
            seen += os.read(master, 4096)
            if seen.count(b"Password:") > answered:
                # Return as a terminal sends it (pinentry-curses reads the terminal raw).
                os.write(master, (b"wrong\r" if answered == 0 else LOGIN_PASSWORD.encode() + b"\r"))
                answered += 1
        out, err = lookup.communicate(timeout=GUARD)
        assert out == b"hunter2", (err.decode(), seen.decode(errors="replace"), bus.daemon_log()[-2000:])
        assert answered == 2
        assert b"not correct" in seen, seen.decode(errors="replace")
        assert not _login_locked(bus)
    finally:
        bus.close()
        os.close(master)
        os.close(slave)


def test_gnome_dialog_under_xvfb_answered_by_typing(display, artifacts):
    """A display, no KEYWELL_PINENTRY and gcr's system prompter activatable on the session bus,
    as under GNOME: the daemon shows gcr's password dialog itself (no pinentry runs), the
    password coming back through gcr's secret exchange; xdotool types it."""
    folder, passed = artifacts
    for tool in ("pinentry-gnome3", "/usr/libexec/gcr-prompter", "xdotool", "import"):
        if shutil.which(tool) is None and not Path(tool).exists():
            pytest.fail(f"{tool} is missing: run scripts/setup.sh")
    bus = KeywellBus(scripted_pinentry=False, daemon_env={"DISPLAY": display})
    try:
        # gcr's prompter is D-Bus activated, as on a desktop, whose session exports DISPLAY to
        # what the bus starts (dbus-update-activation-environment).
        shutil.copy("/usr/share/dbus-1/services/org.gnome.keyring.SystemPrompter.service", bus.services)
        driver = dbus.Interface(bus.dbus().get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"), "org.freedesktop.DBus")
        driver.UpdateActivationEnvironment({"DISPLAY": display})
        driver.ReloadConfig()
        _locked_login(bus)
        x_env = {**bus.env, "DISPLAY": display}
        lookup = subprocess.Popen(["secret-tool", "lookup", "service", "imap"], env=bus.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        def prompter_window():
            # The dialog's title is the one the daemon sets (PromptWork's "Unlock Keychain").
            found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "Unlock Keychain"], env=x_env,
                                   capture_output=True, text=True, timeout=GUARD)
            return found.stdout.split()[0] if found.stdout.split() else None
        window = wait_for(prompter_window, "gcr's prompter window", GUARD)
        # keywelld speaks to gcr's prompter itself: no pinentry stands between them.
        daemon = int(driver.GetConnectionUnixProcessID("org.keywell.Keychain"))
        children = subprocess.run(["ps", "-o", "comm=", "--ppid", str(daemon)], capture_output=True, text=True, timeout=GUARD)
        assert "pinentry" not in children.stdout, children.stdout
        # No window manager: focus it by hand, then type as a person would.
        subprocess.run(["xdotool", "windowfocus", "--sync", window], env=x_env, timeout=GUARD, check=True)
        subprocess.run(["xdotool", "type", "--delay", "30", LOGIN_PASSWORD], env=x_env, timeout=GUARD, check=True)
        subprocess.run(["import", "-window", "root", str(folder / "gcr-prompter.png")], env=x_env, timeout=GUARD, check=False)
        subprocess.run(["xdotool", "key", "Return"], env=x_env, timeout=GUARD, check=True)
        out, err = lookup.communicate(timeout=GUARD)
        assert out == b"hunter2", (err.decode(), bus.daemon_log()[-3000:])
        assert "pinentry-gnome3" not in err.decode()
        assert not _login_locked(bus)
        passed.append(True)
    finally:
        bus.close()


def _run_on_terminal(argv: list[str], env: dict, answers: list[bytes]) -> tuple[int, bytes]:
    """Runs `argv` on a new pseudo-terminal (its controlling terminal, as in a shell) and types
    each answer when a password prompt appears; returns the exit status and all it showed."""
    pid, master = pty.fork()
    if pid == 0:
        os.execve(argv[0], argv, env)
    shown = b""
    typed = 0
    deadline = time.monotonic() + GUARD
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal (EIO)
                    break
                if not chunk:
                    break
                shown += chunk
                if shown.count(b"password to unlock") > typed and typed < len(answers):
                    os.write(master, answers[typed] + b"\n")
                    typed += 1
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(master)
    return os.waitstatus_to_exitcode(status), shown


def test_cli_at_a_terminal_asks_for_the_locked_keychains_password(session):
    """`keywell find-generic-password -w` with login locked: on a terminal it asks for login's
    password (a wrong one first, then the right one) and answers; in a script it keeps exit 36."""
    keywell = os.environ.get("KEYWELL") or pytest.fail("KEYWELL is not set (scripts/test.sh sets it)")
    session.create_login()
    session.run([keywell, "add-generic-password", "-s", "S", "-a", "me", "-w", "the-secret"], check=True)
    session.native().Lock("login")

    scripted = session.run([keywell, "find-generic-password", "-s", "S", "-w"])
    # What `security` does in a script: exit 36 (errSecInteractionNotAllowed), no secret.
    assert scripted.returncode == 36 and scripted.stdout == b""
    assert _login_locked(session)

    status, shown = _run_on_terminal([keywell, "find-generic-password", "-s", "S", "-w"], session.env,
                                     [b"not-the-password", LOGIN_PASSWORD.encode()])
    text = shown.decode(errors="replace")
    assert status == 0, text
    assert text.count("password to unlock login: ") == 2, text
    assert "passphrase you entered is not correct" in text, text
    assert "the-secret" in text and LOGIN_PASSWORD not in text and "not-the-password" not in text, text
    assert not _login_locked(session)


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
