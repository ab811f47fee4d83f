"""What the access-control tests share: a private account whose keywelld asks its access
questions through scripts/scripted_pinentry.py (each answer chosen by the test, each run counted),
programs that are distinct identities (copies of the keywell binary at other paths, a copy
with other bytes, python scripts over jeepney), and a daemon restart."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from keywell_helpers import PrivateAccount, built, wait_for

HERE = Path(__file__).resolve().parent
PYTHON = "/usr/bin/python3"
PASSWORD = "login-pw"

# A native-API client in python (Debian's python3-jeepney): `read N` sends N CopyMatching calls
# with r_Data on ONE connection, all at once, then N more one after another, and prints each
# answer: the secret, or the error's name. `ui` is the u_AuthUI value (or "" for none).
# `readall` reads every item of account "a" in one call; `add P N` adds items P0…P(N-1).
PY_CLIENT = r'''
import sys
from jeepney import DBusAddress, new_method_call, MessageType
from jeepney.io.blocking import open_dbus_connection
address = DBusAddress("/org/keywell/Keychain", bus_name="org.keywell.Keychain", interface="org.keywell.Keychain1")

def query(service, ui):
    q = {"class": ("s", "genp"), "svce": ("s", service), "r_Data": ("b", True)}
    if ui:
        q["u_AuthUI"] = ("s", ui)
    return new_method_call(address, "CopyMatching", "a{sv}", (q,))

def outcome(reply):
    if reply.header.message_type == MessageType.error:
        return "ERROR " + str(reply.header.fields.get(4))
    return "DATA " + bytes(reply.body[0][0]["v_Data"][1]).decode()

command, prefix, count, ui = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else ""
with open_dbus_connection(bus="SESSION") as connection:
    if command == "add":
        for n in range(count):
            q = {"class": ("s", "genp"), "svce": ("s", f"{prefix}{n}"), "acct": ("s", "a"), "labl": ("s", f"{prefix}{n}"),
                 "v_Data": ("ay", f"secret-{n}".encode())}
            reply = connection.send_and_get_reply(new_method_call(address, "Add", "a{sv}", (q,)), timeout=120)
            assert reply.header.message_type != MessageType.error, reply.body
        print("ADDED", count)
    elif command == "readall":
        # One call for every item of account "a": one question about all of them.
        q = {"class": ("s", "genp"), "acct": ("s", "a"), "r_Data": ("b", True), "r_Attributes": ("b", True),
             "m_Limit": ("s", "m_LimitAll")}
        reply = connection.send_and_get_reply(new_method_call(address, "CopyMatching", "a{sv}", (q,)), timeout=400)
        if reply.header.message_type == MessageType.error:
            print("ERROR " + str(reply.header.fields.get(4)))
        else:
            print("ITEMS", len(reply.body[0]))
    elif command == "read":
        # Concurrent: every request is out before any answer is read.
        serials = []
        for n in range(count):
            # Serials of our own, far from those the connection numbers its other messages with.
            serials.append(100000 + n)
            connection.send(query(f"{prefix}{n}", ui), serial=serials[-1])
        replies = {}
        while len(replies) < len(serials):
            message = connection.receive(timeout=400)
            serial = message.header.fields.get(5)
            if serial in serials:
                replies[serial] = message
        for serial in serials:
            print(outcome(replies[serial]))
        # Back to back, after the answer.
        for n in range(count):
            print(outcome(connection.send_and_get_reply(query(f"{prefix}{n}", ui), timeout=400)))
'''


class AccessAccount(PrivateAccount):
    """A private account whose keywelld asks through the scripted pinentry, and a `login`
    keychain (made now: access lists enforced) as the default."""

    def __init__(self, keywell: str, keywelld: str, scripted: bool = True, extra_env: dict | None = None,
                 as_root: bool = False) -> None:
        """`scripted=False`: no scripted pinentry; keywelld picks the dialog as it would on a
        desktop (`extra_env` then names the display)."""
        # Outside the account's folder, which exists only once the account is made.
        self.answers = Path(os.environ.get("TMPDIR", "/tmp")) / f"kwacl-answers-{os.getpid()}-{id(self)}.json"
        self.runs = self.answers.with_suffix(".runs")
        self.dialog = self.answers.with_suffix(".log")
        pinentry = {
            "KEYWELL_PINENTRY": str(HERE / "scripted_pinentry.py"),
            "SCRIPTED_PINENTRY_ANSWERS": str(self.answers),
            "SCRIPTED_PINENTRY_RUNS": str(self.runs),
            "SCRIPTED_PINENTRY_LOG": str(self.dialog),
        } if scripted else {}
        super().__init__(keywelld, "keywell-acl-", extra_env={**pinentry, **(extra_env or {})}, as_root=as_root)
        self.keywell = keywell
        self.scratch = self.root / "scratch"
        self.scratch.mkdir(mode=0o700)
        self.owner.give(self.scratch)
        self.answer([])
        self.run([keywell, "create-keychain", "-p", PASSWORD, "login"])

    def close(self) -> None:
        super().close()
        for path in (self.answers, self.runs, self.dialog):
            path.unlink(missing_ok=True)

    # Answers and counts

    def answer(self, answers: list) -> None:
        """What the next dialogs answer, in order ("allow", "always", "deny"); none left: Deny."""
        self.answers.write_text(json.dumps(answers))
        self.owner.give(self.answers)  # the pinentry (the owner's) takes answers out of it

    @property
    def questions(self) -> int:
        """How many dialogs keywelld has started."""
        return len(self.runs.read_text().splitlines()) if self.runs.exists() else 0

    def descriptions(self) -> list[str]:
        lines = self.dialog.read_text().splitlines() if self.dialog.exists() else []
        return [line[len("SETDESC "):] for line in lines if line.startswith("SETDESC ")]

    # Programs

    def program(self, name: str, extra_bytes: bytes = b"") -> Path:
        """A copy of the keywell binary at scratch/<name> (another path: another identity);
        `extra_bytes` appended make other contents at the same path (a replaced program)."""
        path = self.scratch / name
        tmp = path.with_suffix(".new")
        shutil.copyfile(self.keywell, tmp)
        with open(tmp, "ab") as f:
            f.write(extra_bytes)
        os.chmod(tmp, 0o755)
        os.rename(tmp, path)
        return path

    def script(self, name: str) -> Path:
        path = self.scratch / name
        path.write_text(PY_CLIENT)
        return path

    def run(self, argv: list, check: bool = True, timeout: float = 400, input: str | None = None) -> subprocess.CompletedProcess:
        result = subprocess.run([str(a) for a in argv], env=self.env, cwd=self.scratch, capture_output=True, text=True,
                                timeout=timeout, input=input, **self.owner.spawn)
        if check:
            assert result.returncode == 0, f"{argv} exited {result.returncode}: {result.stdout!r} {result.stderr!r}"
        return result

    def add(self, program: Path, service: str, secret: str, *options: str) -> None:
        self.run([program, "add-generic-password", "-s", service, "-a", "acct", "-l", service, "-w", secret, *options])

    def read(self, program: Path, service: str) -> subprocess.CompletedProcess:
        return self.run([program, "find-generic-password", "-s", service, "-w"], check=False)

    def access_lists(self) -> str:
        """`dump-keychain -a` of the default keychain: every item with its access list."""
        return self.run([self.keywell, "dump-keychain", "-a"]).stdout

    # The daemon

    def daemon_pid(self) -> int | None:
        out = subprocess.run(["dbus-send", "--session", "--print-reply=literal", "--dest=org.freedesktop.DBus",
                              "/org/freedesktop/DBus", "org.freedesktop.DBus.GetConnectionUnixProcessID",
                              "string:org.keywell.Keychain"], env=self.env, capture_output=True, text=True, timeout=60,
                             **self.owner.spawn)
        return int(out.stdout.split()[-1]) if out.returncode == 0 else None

    def restart_daemon(self) -> None:
        """Stops keywelld (SIGTERM) and waits until it is gone; the next call starts a new one."""
        pid = self.daemon_pid()
        assert pid is not None
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), "keywelld to stop")
        wait_for(lambda: self.daemon_pid() is None, "org.keywell.Keychain to be released")
        self.run([self.keywell, "unlock-keychain", "-p", PASSWORD, "login"])


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (FileNotFoundError, IndexError):
        return True


@pytest.fixture
def acl():
    if shutil.which("dbus-send") is None:
        pytest.fail("dbus-send is needed: run scripts/setup.sh")
    account = AccessAccount(built("KEYWELL"), built("KEYWELLD"))
    try:
        yield account
    finally:
        account.close()
