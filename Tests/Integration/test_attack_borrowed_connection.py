"""The fork + exec attack on caller identities (docs/access-control.md, "A connection handed over
an exec"): a process connects to keywelld — over the session bus, or over the direct socket —,
forks, and execs a trusted program (`/usr/bin/sleep`, the only program an item trusts) while its
child keeps the connection and asks through it. The bus and the kernel credit the connection to
the process that connected, which now runs the trusted program; keywelld must not take the child
for it. No LD_PRELOAD and no ptrace: it works whatever `kernel.yama.ptrace_scope` says.

Both ways of leaving the socket behind are tried: close-on-exec kept (as every D-Bus library
leaves it, so the trusted program does not hold the socket), and cleared (so it does, inherited
over the exec). The controls: keywell reads the items it trusts over both paths, and a program
that forks without exec keeps its own identity."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from identity_helpers import HERE, exe
from keywell_helpers import PrivateAccount, built, wait_for
from security_figures import record

TRUSTED = "/usr/bin/sleep"
SOURCE = HERE / "fixtures" / "borrowed_connection.c"


@pytest.fixture
def account():
    a = PrivateAccount(built("KEYWELLD", "keywelld"), "keywell-borrowed-", extra_env={"KEYWELL_TEST_FAST_KDF": "1"})
    try:
        yield a
    finally:
        a.close()


def keywell(account, *args, env=None):
    return subprocess.run([built("KEYWELL", "keywell"), *args], env=dict(account.env, **(env or {})),
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, **account.owner.spawn)


def compile_attacker(account) -> Path:
    output = account.root / "borrowed_connection"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "dbus-1"], capture_output=True, text=True, check=True).stdout.split()
    subprocess.run(["gcc", "-O1", "-o", str(output), str(SOURCE), *flags], check=True)
    return output


def prepare(account) -> Path:
    """`login`, an item only /usr/bin/sleep may read, and keywell's own item."""
    assert keywell(account, "create-keychain", "-p", "pw", "login").returncode == 0
    r = keywell(account, "add-generic-password", "-a", "me", "-s", "sleepy", "-w", "sleep-secret", "-T", TRUSTED)
    assert r.returncode == 0, r.stderr
    r = keywell(account, "add-generic-password", "-a", "me", "-s", "own", "-w", "own-secret")
    assert r.returncode == 0, r.stderr
    socket = Path(account.env["XDG_RUNTIME_DIR"]) / "keywell" / "native"
    wait_for(socket.is_socket, "keywelld's direct socket")
    return socket


def attack(account, attacker: Path, address: str, keep: str) -> list[str]:
    result = subprocess.run([str(attacker), address, keep, TRUSTED, "sleepy"], env=account.env, capture_output=True,
                            text=True, timeout=120, stdin=subprocess.DEVNULL, **account.owner.spawn)
    # What is waited for is the parent, now the trusted program, which the child ends.
    assert result.returncode == -15, result
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result
    return lines


def test_a_child_cannot_borrow_the_identity_of_a_program_its_parent_execs(account):
    socket = prepare(account)
    attacker = compile_attacker(account)
    trusted = exe(TRUSTED)
    outcomes = {}
    for path, address in (("bus", "bus"), ("direct socket", f"unix:path={socket}")):
        for keep in ("cloexec", "inherit"):
            who, secret = attack(account, attacker, address, keep)
            outcomes[f"{path}, {keep}"] = (who, secret)
    borrowed = [name for name, (who, secret) in outcomes.items() if who == trusted or secret == "sleep-secret"]
    record("fork + exec: a child keeps its parent's connection (bus and direct socket; close-on-exec kept and "
           "cleared) while the parent execs the one program an item trusts",
           f"{len(borrowed)} of {len(outcomes)} took the program's name or read its secret",
           "none", not borrowed)
    assert borrowed == [], outcomes
    for name, (who, secret) in outcomes.items():
        assert who.startswith("ERROR org.keywell.Keychain1.Error.MissingEntitlement "), (name, who)
        assert "crossed an exec or was left to another process" in who, (name, who)
        assert secret.startswith("ERROR org.keywell.Keychain1.Error.AuthFailed "), (name, secret)


def test_the_programs_that_own_their_connections_keep_their_identities(account):
    prepare(account)
    # keywell reads its own item over the direct socket and over the bus.
    assert keywell(account, "find-generic-password", "-s", "own", "-w").stdout == "own-secret\n"
    r = keywell(account, "find-generic-password", "-s", "own", "-w", env={"KEYWELL_NO_DIRECT_SOCKET": "1"})
    assert r.stdout == "own-secret\n", r.stderr
    # A python program that forks without exec: parent and child are one program, and either may
    # call through the connection the parent opened.
    script = account.root / "forker.py"
    script.write_text(r'''
import os, sys
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import unwrap_msg
address = DBusAddress("/org/keywell/Keychain", bus_name="org.keywell.Keychain", interface="org.keywell.Keychain1")
connection = open_dbus_connection(bus="SESSION")
first = unwrap_msg(connection.send_and_get_reply(new_method_call(address, "WhoAmI"), timeout=60))[0]
child = os.fork()
if child == 0:
    print(unwrap_msg(connection.send_and_get_reply(new_method_call(address, "WhoAmI"), timeout=60))[0], flush=True)
    os._exit(0)
os.waitpid(child, 0)
print(first)
''')
    out = subprocess.run(["/usr/bin/python3", str(script)], env=account.env, capture_output=True, text=True, timeout=60,
                         **account.owner.spawn)
    assert out.returncode == 0, out
    child, parent = out.stdout.splitlines()
    assert child == parent and parent.startswith("exe:"), out.stdout
