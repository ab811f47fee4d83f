"""Access questions in GNOME's own dialog (docs/prompts.md, "GNOME's dialog"), for real: Xvfb,
a private session bus on which gcr's system prompter (/usr/libexec/gcr-prompter) is
D-Bus-activatable as on a GNOME desktop, keywelld for a throwaway account with no pinentry
configured, and the dialog driven through AT-SPI (at-spi-bus-launcher and atspi_driver.py, as
the Seahorse test drives Seahorse): the check box "Always allow this program" ticked, then Allow
— the program reads, and reads again after keywelld restarts with no question; Deny — no secret.

Needs KEYWELL and KEYWELLD (scripts/test.sh sets them).
"""

from __future__ import annotations

import json
import shutil
import types
import subprocess
import sys
import time
from pathlib import Path

import pytest

from access_control_helpers import AccessAccount
from keywell_helpers import bodies_as_test_user, built, user_tmp  # noqa: F401 (user_tmp: a fixture)
from ss_access_helpers import PYTHON, Client
from test_seahorse import DRIVER, AccessibilityBus, artifacts, display  # noqa: F401 (fixtures: Xvfb, screenshots)

PROMPTER = "/usr/libexec/gcr-prompter"
SERVICE_FILE = "/usr/share/dbus-1/services/org.gnome.keyring.SystemPrompter.service"
ALWAYS = "Always allow this program"
# Hang guards only (a busy 2-core machine); no test asserts on time.
GUARD = 120


class Dialog:
    """gcr's prompter as AT-SPI shows it: one driver process per command (see atspi_driver.py)."""

    def __init__(self, env: dict, log: Path) -> None:
        self.env = env
        # The bus's log: keywelld's and gcr-prompter's stderr, for a dialog that never shows.
        self.log = log

    def request(self, op: str, **selector) -> dict:
        command = json.dumps({"op": op, "app": "", **selector}) + "\n"
        done = subprocess.run([sys.executable, str(DRIVER)], input=command, env=self.env,
                              capture_output=True, text=True, timeout=GUARD)
        assert done.stdout.strip(), f"the AT-SPI driver ended ({done.returncode}): {done.stderr[-2000:]}"
        return json.loads(done.stdout.splitlines()[-1])

    def wait(self, what: str, alive, **selector) -> dict:
        deadline = time.monotonic() + GUARD
        while time.monotonic() < deadline:
            assert alive(), f"the reading program ended before {what} showed"
            reply = self.request("find", **selector)
            if reply["ok"] and reply["found"]:
                return reply["found"][0]
            time.sleep(0.3)
        raise AssertionError(f"{what} never showed within {GUARD} s:\n" + "\n".join(self.request("dump").get("lines", []))
                             + "\nbus log:\n" + self.log.read_text(errors="replace")[-4000:])

    def act(self, **selector) -> None:
        reply = self.request("do", action="click", index=0, **selector)
        assert reply["ok"] and reply.get("done", True), f"click {selector}: {reply}"


@pytest.fixture
def desktop(display):
    """An account whose bus can start gcr's prompter on `display`, and the accessibility bus."""
    for tool in (PROMPTER, SERVICE_FILE, AccessibilityBus.LAUNCHER):
        if not Path(tool).exists():
            pytest.fail(f"{tool} is missing: run scripts/setup.sh")
    # The bus's environment is what it starts programs with (keywelld, gcr-prompter): the
    # display, and GTK's accessibility bridge on (a desktop session's defaults).
    account = AccessAccount(built("KEYWELL"), built("KEYWELLD"), scripted=False,
                            extra_env={"DISPLAY": display, "NO_AT_BRIDGE": "0", "GTK_A11Y": "atspi"})
    accessibility = None
    try:
        shutil.copy(SERVICE_FILE, account.root / "services")
        subprocess.run(["dbus-send", "--session", "--type=method_call", "--print-reply", "--dest=org.freedesktop.DBus",
                        "/org/freedesktop/DBus", "org.freedesktop.DBus.ReloadConfig"], env=account.env, check=True,
                       capture_output=True, timeout=GUARD, **account.owner.spawn)
        accessibility = AccessibilityBus(account.env, account.owner.spawn)
        # GTK binds to the accessibility bus when it starts: gcr's prompter must not start first.
        deadline = time.monotonic() + GUARD
        while not _owned(account, "org.a11y.Bus"):
            assert time.monotonic() < deadline and accessibility.process.poll() is None, "at-spi-bus-launcher never took org.a11y.Bus"
            time.sleep(0.1)
        yield account, Dialog(account.env, account.log)
    finally:
        if accessibility is not None:
            accessibility.close()
        account.close()


def _owned(account: AccessAccount, name: str) -> bool:
    answer = subprocess.run(["dbus-send", "--session", "--print-reply=literal", "--dest=org.freedesktop.DBus",
                             "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", f"string:{name}"],
                            env=account.env, capture_output=True, text=True, timeout=GUARD, **account.owner.spawn)
    return answer.stdout.split() == ["boolean", "true"]


def _ask(account: AccessAccount, program: Path, service: str) -> subprocess.Popen:
    return subprocess.Popen([str(program), "find-generic-password", "-s", service, "-w"], env=account.env,
                            cwd=account.scratch, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _screenshot(account: AccessAccount, folder: Path, name: str) -> None:
    subprocess.run(["import", "-window", "root", str(folder / name)], env=account.env, timeout=GUARD, check=False)


def test_always_allow_ticked_in_gnomes_dialog_holds_across_restarts(desktop, artifacts):
    account, dialog = desktop
    folder, passed = artifacts
    maker, reader = account.program("maker"), account.program("reader")
    account.add(maker, "gcr-mail", "s3cret")

    read = _ask(account, reader, "gcr-mail")
    box = dialog.wait("gcr's dialog with its Always Allow check box", lambda: read.poll() is None,
                      role="check box", name=ALWAYS)
    # Offered unticked: Allow alone lasts until the keychain locks.
    assert "checked" not in box["states"], box
    allow = dialog.wait("the Allow button", lambda: read.poll() is None, role="push button", name="Allow")
    assert dialog.request("find", role="push button", name="Deny")["found"], "no Deny button"
    texts = "\n".join(dialog.request("dump").get("lines", []))
    assert "reader" in texts and "gcr-mail" in texts, texts
    assert "sha256" not in texts and "exe:" not in texts, texts
    _screenshot(account, folder, "gcr-access-question.png")
    dialog.act(role="check box", name=ALWAYS)
    dialog.act(role="push button", name="Allow")
    assert allow
    out, err = read.communicate(timeout=GUARD)
    assert read.returncode == 0 and out.strip() == "s3cret", (err, account.log.read_text(errors="replace")[-3000:])
    # Always Allow: the reader's identity joined the item's list in the keychain file.
    assert f"{account.scratch}/reader" in account.access_lists()

    account.restart_daemon()
    again = account.run([reader, "find-generic-password", "-s", "gcr-mail", "-w"], check=False, timeout=GUARD)
    assert again.returncode == 0 and again.stdout.strip() == "s3cret", (again.stderr, account.log.read_text(errors="replace")[-3000:])
    # …with no question: no dialog is showing.
    assert not dialog.request("find", role="check box", name=ALWAYS)["found"]

    # keywell doctor, asking keywelld: GNOME's dialog can show a question now, and the grant
    # Always Allow made is listed (recorded across the restart), then shown undone once the
    # item is gone.
    lines = _doctor(account)
    assert any(line.startswith("ok") and "access questions: shown by GNOME's dialog" in line for line in lines), lines
    granted = [line for line in lines if "Always Allow:" in line and "“gcr-mail”" in line]
    assert len(granted) == 1 and granted[0].startswith("ok") and f"{account.scratch}/reader" in granted[0], lines
    account.run([maker, "delete-generic-password", "-s", "gcr-mail"])
    granted = [line for line in _doctor(account) if "Always Allow:" in line and "“gcr-mail”" in line]
    assert len(granted) == 1 and granted[0].startswith("note") and "no longer on the item's list" in granted[0], granted
    passed.append(True)


def _doctor(account: AccessAccount) -> list[str]:
    return account.run([account.keywell, "doctor"], check=False, timeout=GUARD).stdout.splitlines()


def test_deny_in_gnomes_dialog_gives_no_secret(desktop, artifacts):
    account, dialog = desktop
    folder, passed = artifacts
    maker, stranger = account.program("maker"), account.program("stranger")
    account.add(maker, "gcr-bank", "pin-1234")

    read = _ask(account, stranger, "gcr-bank")
    dialog.wait("gcr's dialog", lambda: read.poll() is None, role="push button", name="Deny")
    # Ticking the box does not turn Deny into anything else.
    dialog.act(role="check box", name=ALWAYS)
    dialog.act(role="push button", name="Deny")
    out, err = read.communicate(timeout=GUARD)
    assert read.returncode != 0 and "pin-1234" not in out, (out, err)
    assert f"{account.scratch}/stranger" not in account.access_lists()
    log = account.log.read_text(errors="replace")
    assert "answered Deny" in log, log[-3000:]
    passed.append(True)


# A prompter of the user's own: a python script that owns gcr's prompter name and, if anyone
# begins a prompt with it, answers every dialog "yes" with the box ticked. It logs each call.
FAKE_PROMPTER = r'''
import sys
from jeepney import DBusAddress, MessageType, new_method_call, new_method_return
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection
log = open(sys.argv[1], "a", buffering=1)
connection = open_dbus_connection(bus="SESSION")
connection.send_and_get_reply(message_bus.RequestName("org.gnome.keyring.SystemPrompter", 4))
log.write("OWNED\n")
while True:
    message = connection.receive()
    if message.header.message_type != MessageType.method_call:
        continue
    member = message.header.fields.get(3)
    sender = message.header.fields.get(7)
    log.write(f"{member} {sender}\n")
    connection.send(new_method_return(message, "", ()))
    if member in ("BeginPrompting", "PerformPrompt"):
        callback = DBusAddress(message.body[0], bus_name=sender, interface="org.gnome.keyring.internal.Prompter.Callback")
        reply = "" if member == "BeginPrompting" else "yes"
        connection.send(new_method_call(callback, "PromptReady", "sa{sv}s", (reply, {"choice-chosen": ("b", True)}, "")))
'''


def test_a_prompter_of_the_users_own_is_not_believed(display, user_tmp):
    """A script that owns org.gnome.keyring.SystemPrompter first would answer its own question:
    keywelld asks only a program only root can replace, so it never begins a prompt there."""
    # No pinentry on keywelld's PATH either: with the impostor refused, no dialog can be shown.
    tools = user_tmp / "bin"
    tools.mkdir()
    for tool in ("dbus-daemon", "dbus-send", "python3"):
        (tools / tool).symlink_to(shutil.which(tool))
    account = AccessAccount(built("KEYWELL"), built("KEYWELLD"), scripted=False,
                            extra_env={"DISPLAY": display, "PATH": str(tools)})
    fake = None
    try:
        calls = user_tmp / "calls.log"
        script = account.scratch / "fake-prompter.py"
        script.write_text(FAKE_PROMPTER)
        fake = subprocess.Popen(["/usr/bin/python3", str(script), str(calls)], env=account.env)
        deadline = time.monotonic() + GUARD
        while not (calls.exists() and "OWNED" in calls.read_text()) and time.monotonic() < deadline:
            assert fake.poll() is None, "the impostor prompter ended"
            time.sleep(0.1)
        maker, reader = account.program("maker"), account.program("reader")
        account.add(maker, "gcr-secret", "hidden")
        read = account.run([reader, "find-generic-password", "-s", "gcr-secret", "-w"], check=False, timeout=GUARD)
        assert read.returncode != 0 and "hidden" not in read.stdout, (read.stdout, read.stderr)
        assert f"{account.scratch}/reader" not in account.access_lists()
        assert "BeginPrompting" not in calls.read_text(), calls.read_text()
        log = account.log.read_text(errors="replace")
        assert "not a program only root can replace" in log, log[-3000:]
    finally:
        if fake is not None:
            fake.kill()
            fake.wait(timeout=10)
        account.close()


def test_a_dismissed_prompt_closes_gnomes_dialog(desktop):
    """Withdrawal: a Secret Service client that dismisses its Unlock prompt while gcr's dialog
    asks closes the dialog (StopPrompting) and gets Completed(dismissed); nothing is
    remembered, so its next Unlock asks again, and Allow there gives the secret."""
    account, dialog = desktop
    bus = types.SimpleNamespace(env=account.env, daemon_log=lambda: account.log.read_text(errors="replace"))
    attributes = {"app": "gcr-dismiss"}
    Client(bus, account.scratch / "maker.py").store("Kept", attributes, "kept")
    reader = Client(bus, account.scratch / "reader.py")
    holding = account.scratch / "holding"
    client = subprocess.Popen([PYTHON, str(reader.path), "dismiss", json.dumps(attributes), str(holding)], env=account.env,
                              cwd=account.scratch, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        dialog.wait("gcr's dialog", lambda: client.poll() is None, role="check box", name=ALWAYS)
        holding.write_text("HOLDING")  # the client dismisses its prompt now
        deadline = time.monotonic() + GUARD
        while "the question was withdrawn" not in account.log.read_text(errors="replace"):
            assert time.monotonic() < deadline and client.poll() is None, account.log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
        # The client's second Unlock asks again. gcr's prompter shows one prompt at a time, so
        # the second dialog shows (and its Allow reaches the client) only once keywelld stopped
        # the first.
        dialog.wait("the second question's dialog", lambda: client.poll() is None, role="check box", name=ALWAYS)
        dialog.act(role="push button", name="Allow")
        out, err = client.communicate(timeout=GUARD)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait(timeout=10)
    assert client.returncode == 0, (err, account.log.read_text(errors="replace")[-3000:])
    result = json.loads(out)
    assert result["dismissed"] is True and result["completed"] == [], result
    assert list(result["after"].values()) == [{"locked": True, "secret": False}], result
    assert result["again"]["dismissed"] is False and list(result["again"]["secrets"].values()) == ["SECRET kept"], result


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
