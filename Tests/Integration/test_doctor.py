"""`keywell doctor` on a fresh private account: what it says about each part of the setup, the
identity keywelld gives the `keywell` binary, kernel.yama.ptrace_scope, and its exit status
(docs/access-control.md "keywell doctor").

Needs KEYWELLD and KEYWELL (scripts/test.sh sets them).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from identity_helpers import account, exe  # noqa: F401 (fixture)
from keywell_helpers import PrivateAccount, built

SCRIPTED = Path(__file__).resolve().parent / "scripted_pinentry.py"


def doctor(account, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([built("KEYWELL", "keywell"), "doctor"], env=env or account.env, capture_output=True,
                          text=True, timeout=120, **account.owner.spawn)


def lines_by_subject(output: str) -> dict[str, tuple[str, str]]:
    found = {}
    for line in output.splitlines():
        kind, _, rest = line.partition(" ")
        subject, _, text = rest.strip().partition(": ")
        found[subject] = (kind, text)
    return found


def test_a_fresh_account_lacks_only_its_login_keychain_then_is_fine(account):
    before = doctor(account)
    assert before.returncode == 1, before
    lines = lines_by_subject(before.stdout)
    assert lines["session bus"][0] == "ok"
    assert lines["keywelld"][0] == "ok" and "pid " in lines["keywelld"][1]
    assert lines["Secret Service"] == ("ok", "served by keywelld")
    assert lines["login keychain"][0] == "problem"
    assert before.stderr == f"keywell doctor: login keychain: {lines['login keychain'][1]}\n"
    # The identity is the keywell binary's, as access control will name it.
    kind, text = lines["identity"]
    assert kind == "ok" and text.startswith(exe(built("KEYWELL", "keywell")) + " (weak: ")
    # ptrace_scope: the kernel's value, or its absence, and what it means.
    kind, text = lines["kernel.yama.ptrace_scope"]
    assert kind == "note"
    try:
        value = open("/proc/sys/kernel/yama/ptrace_scope").read().strip()
        assert text.startswith(value + " ("), text
    except FileNotFoundError:
        assert text.startswith("absent: the kernel has no Yama"), text
    assert "LD_PRELOAD" in text

    subprocess.run([built("KEYWELL", "keywell"), "create-keychain", "-p", "pw", "login"], env=account.env, **account.owner.spawn, check=True,
                   capture_output=True)
    after = doctor(account)
    assert after.returncode == 0, after
    assert after.stderr == ""
    lines = lines_by_subject(after.stdout)
    assert lines["login keychain"][0] == "ok" and str(account.keychains / "login.keychain-db") in lines["login keychain"][1]
    assert lines["PAM"][0] in ("ok", "note")

    subprocess.run([built("KEYWELL", "keywell"), "lock-keychain", "login"], env=account.env, **account.owner.spawn, check=True)
    locked = doctor(account)
    assert locked.returncode == 0, locked
    assert lines_by_subject(locked.stdout)["login keychain"][0] == "note"


def test_without_a_session_bus_the_first_problem_is_the_bus(account):
    env = {key: value for key, value in account.env.items() if key not in ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")}
    result = doctor(account, env)
    assert result.returncode == 1
    assert result.stderr.startswith("keywell doctor: session bus: neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR")
    # Later checks are not run, but the kernel setting is still reported.
    assert "keywelld" not in lines_by_subject(result.stdout)
    assert "kernel.yama.ptrace_scope" in lines_by_subject(result.stdout)


def test_another_secret_service_owner_is_a_problem(account):
    # Another program takes org.freedesktop.secrets before keywelld starts.
    holder = subprocess.Popen(
        ["/usr/bin/python3", "-c",
         "import sys\n"
         "from jeepney.bus_messages import message_bus\n"
         "from jeepney.io.blocking import open_dbus_connection\n"
         "c = open_dbus_connection(bus='SESSION')\n"
         "print(c.send_and_get_reply(message_bus.RequestName('org.freedesktop.secrets', 4)).body[0], flush=True)\n"
         "sys.stdin.read()\n"],
        env=account.env, **account.owner.spawn, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "1"
        result = doctor(account)
        assert result.returncode == 1, result
        kind, text = lines_by_subject(result.stdout)["Secret Service"]
        assert kind == "problem" and "not keywelld" in text and "python3" in text, text
        assert result.stderr.startswith("keywell doctor: Secret Service: ")
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


def test_doctor_help_and_usage(account):
    keywell = built("KEYWELL", "keywell")
    help_text = subprocess.run([keywell, "doctor", "--help"], env=account.env, **account.owner.spawn, capture_output=True, text=True)
    assert help_text.returncode == 0 and "Usage: keywell doctor" in help_text.stdout
    wrong = subprocess.run([keywell, "doctor", "extra"], env=account.env, **account.owner.spawn, capture_output=True, text=True)
    assert wrong.returncode == 2 and "usage: keywell doctor" in wrong.stderr


def test_access_lists_are_reported_per_keychain_of_the_search_list(account):
    keywell = built("KEYWELL", "keywell")
    for name in ("login", "work"):
        subprocess.run([keywell, "create-keychain", "-p", "pw", name], env=account.env, **account.owner.spawn, check=True, capture_output=True)
    subprocess.run([keywell, "list-keychains", "-s", "login", "work"], env=account.env, **account.owner.spawn, check=True, capture_output=True)
    subprocess.run([keywell, "set-keychain-settings", "--enforce-access", "off", "work"], env=account.env, **account.owner.spawn, check=True,
                   capture_output=True)
    result = doctor(account)
    assert result.returncode == 0, result
    lines = lines_by_subject(result.stdout)
    kind, text = lines["access lists (login)"]
    assert kind == "ok" and text.startswith("enforced"), text
    kind, text = lines["access lists (work)"]
    assert kind == "note" and text.startswith("not enforced") and "--enforce-access on work" in text, text


def test_without_a_program_for_access_questions_doctor_says_every_one_is_denied(account):
    # The account's keywelld has no display, no KEYWELL_PINENTRY and no terminal configured.
    result = doctor(account)
    kind, text = lines_by_subject(result.stdout)["access questions"]
    assert kind == "note", text
    assert "none can be shown (there is no display" in text and "answered Deny" in text, text


def test_access_questions_name_the_program_keywelld_would_run():
    # A display in keywelld's environment and a graphical pinentry first on its PATH.
    account = PrivateAccount(built("KEYWELLD", "keywelld"), "keywell-doctor-", bin_dir=True, extra_env={"DISPLAY": ":99"})
    try:
        pinentry = account.bin / "pinentry-gnome3"
        pinentry.write_text("#!/bin/sh\necho OK\n")
        pinentry.chmod(0o755)
        kind, text = lines_by_subject(doctor(account).stdout)["access questions"]
        assert (kind, text) == ("ok", f"shown by {pinentry}")
    finally:
        account.close()
    # KEYWELL_PINENTRY comes first, display or not; one that is not a program is said to be none.
    account = PrivateAccount(built("KEYWELLD", "keywelld"), "keywell-doctor-", extra_env={"KEYWELL_PINENTRY": str(SCRIPTED)})
    try:
        assert lines_by_subject(doctor(account).stdout)["access questions"] == ("ok", f"shown by {SCRIPTED}")
    finally:
        account.close()
    account = PrivateAccount(built("KEYWELLD", "keywelld"), "keywell-doctor-", extra_env={"KEYWELL_PINENTRY": "/nonexistent/pinentry"})
    try:
        kind, text = lines_by_subject(doctor(account).stdout)["access questions"]
        assert kind == "note" and "none can be shown (KEYWELL_PINENTRY=/nonexistent/pinentry" in text and "answered Deny" in text, text
    finally:
        account.close()
