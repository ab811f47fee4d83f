"""kSecAttrAccessible (`pdmn`) with the real keywelld, a real PAM login and logout, and the real
`keywell` CLI (docs/access-control.md, "Accessibility"): an AfterFirstUnlock (`ck`) secret stays
readable after the idle timer locked the login keychain, a WhenUnlocked (`ak`) one does not, and
logout ends it; exports leave ThisDeviceOnly items behind and say so; after the idle lock the
`ck` secret's plaintext is nowhere in the daemon's memory (only its sealed copy is).

Needs root, KEYWELLD and KEYWELL (scripts/test.sh sets them).
"""

import csv
import json
import os
import re
import secrets
import struct

import pytest

from keywell_helpers import built, keywelld, module, real_daemon_kit, real_daemon_stack, wait_for  # noqa: F401 (fixtures)
from pam_helpers import dbus_call, login, pamtester, start_session_bus, keywelld_pids

# Items through the native API as the user: the secret comes on stdin, never in argv.
NATIVE = r'''
import json, sys, time
import dbus

cmd, args = sys.argv[1], sys.argv[2:]
bus = dbus.SessionBus()
deadline = time.time() + 30
while not bus.name_has_owner("org.keywell.Keychain"):
    if time.time() > deadline:
        raise SystemExit("org.keywell.Keychain never appeared")
    time.sleep(0.05)
kc = dbus.Interface(bus.get_object("org.keywell.Keychain", "/org/keywell/Keychain", introspect=False),
                    "org.keywell.Keychain1")
try:
    if cmd == "add":
        kc.Add(dbus.Dictionary({"class": "genp", "acct": args[0], "svce": "accessibility", "pdmn": args[1],
                                "v_Data": dbus.ByteArray(sys.stdin.buffer.read())}, signature="sv"))
        out = None
    elif cmd == "read":
        found = kc.CopyMatching(dbus.Dictionary({"class": "genp", "acct": args[0], "svce": "accessibility", "r_Data": True},
                                                signature="sv"))
        out = bytes(found[0]["v_Data"]).hex()
    elif cmd == "lock-after":
        kc.SetSettings("login", dbus.Dictionary({"lockAfterSeconds": dbus.UInt32(int(args[0]))}, signature="sv"))
        out = None
    else:
        raise SystemExit("unknown command " + cmd)
    print(json.dumps({"ok": out}))
except dbus.DBusException as e:
    print(json.dumps({"error": e.get_dbus_name(), "message": e.get_dbus_message()}))
'''

@pytest.fixture
def kit(real_daemon_kit):
    return real_daemon_kit


@pytest.fixture
def stack(real_daemon_stack):
    return real_daemon_stack


NOT_ALLOWED = "org.keywell.Keychain1.Error.InteractionNotAllowed"


def native(kit, user, *args, stdin: bytes = b""):
    r = kit.as_user(user, ["/usr/bin/python3", "-c", NATIVE, *args], input=stdin, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout.decode().strip().splitlines()[-1])


def locked(kit, user) -> bool:
    r = dbus_call(kit, user, "info", "login")
    assert "ok" in r, r
    return r["ok"]["locked"]


def logged_in_with(kit, stack, items: dict[str, tuple[str, bytes]], enforce_access: bool = True):
    """A throwaway user logged in through PAM (login unlocked) holding `items`: account →
    (pdmn, secret). `enforce_access=False`: login's items trust any program (docs/access-control.md),
    for tests where a program other than their creator (the keywell CLI) reads them."""
    user = kit.user()
    start_session_bus(kit, user)
    assert login(stack, user).ok
    if not enforce_access:
        r = kit.as_user(user, [built("KEYWELL", "keywell"), "set-keychain-settings", "--enforce-access", "off", "login"],
                        capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    for account, (accessibility, secret) in items.items():
        kit.secrets.append(secret.hex())
        assert native(kit, user, "add", account, accessibility, stdin=secret) == {"ok": None}
    return user


def lock_by_idle_timer(kit, user):
    assert native(kit, user, "lock-after", "1") == {"ok": None}
    wait_for(lambda: locked(kit, user), "the idle timer to lock login")


def occurrences_in_memory(pid: int, needle: bytes) -> int:
    """Copies of `needle` in the readable mappings of process `pid` (root reads /proc/PID/mem),
    leaving out those right after their own length as D-Bus marshals an `ay`: libdbus's socket
    receive buffer keeps the message that brought the secret until later ones overwrite it (as
    `keywell-bench security-report`'s memory scan counts them)."""
    count = 0
    wire_prefix = struct.pack("<I", len(needle))
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            if "r" not in fields[1] or (len(fields) > 5 and fields[5] in ("[vvar]", "[vsyscall]")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                region = mem.read(end - start)
            except OSError:
                continue  # guard pages of libsodium's allocations
            at = region.find(needle)
            while at >= 0:
                if region[max(0, at - 4):at] != wire_prefix:
                    count += 1
                at = region.find(needle, at + 1)
    return count


def test_after_first_unlock_outlives_the_idle_lock_until_logout(kit, stack):
    after, when = secrets.token_bytes(32), secrets.token_bytes(32)
    user = logged_in_with(kit, stack, {"after": ("ck", after), "when": ("ak", when)})
    lock_by_idle_timer(kit, user)

    # Before any locked read decrypts it: only the sealed copy is in memory.
    [pid] = keywelld_pids(user)
    assert occurrences_in_memory(pid, b"org.keywell.Keychain1") > 0, "the scan reads the daemon's memory"
    assert occurrences_in_memory(pid, after) == 0, "the ck secret's plaintext outlived the lock"
    assert occurrences_in_memory(pid, when) == 0

    assert native(kit, user, "read", "after") == {"ok": after.hex()}
    assert native(kit, user, "read", "when")["error"] == NOT_ALLOWED
    assert locked(kit, user) is True  # the read did not unlock anything

    # Logout: the last PAM session closes.
    assert pamtester(stack, user.name, "close_session").ok
    assert native(kit, user, "read", "after")["error"] == NOT_ALLOWED


def test_an_explicit_lock_ends_it(kit, stack):
    after = secrets.token_bytes(32)
    user = logged_in_with(kit, stack, {"after": ("ck", after)})
    lock_by_idle_timer(kit, user)
    assert native(kit, user, "read", "after") == {"ok": after.hex()}
    r = kit.as_user(user, [built("KEYWELL", "keywell"), "lock-keychain", "login"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert native(kit, user, "read", "after")["error"] == NOT_ALLOWED


def test_exports_leave_this_device_only_items_behind_and_say_so(kit, stack):
    items = {account: (accessibility, secrets.token_hex(16).encode())
             for account, accessibility in (("plain", "ak"), ("here", "aku"), ("here-after", "cku"), ("after", "ck"))}
    # The CLI exports what a python client made: not the creator, so the items trust any program here.
    user = logged_in_with(kit, stack, items, enforce_access=False)
    keywell = built("KEYWELL", "keywell")
    passphrase = "Export-" + secrets.token_urlsafe(12)
    kit.secrets.append(passphrase)
    for form, name, stdin in (("keywell", "out.kwx", passphrase + "\n"), ("gnome-keyring", "out.keyring", passphrase + "\n"),
                              ("csv", "out.csv", "")):
        path = os.path.join(user.home, name)
        args = [keywell, "export", "-k", "login", "--format", form] + (["--plaintext"] if form == "csv" else []) + [path]
        r = kit.as_user(user, args, input=stdin, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (form, r.stderr)
        assert re.search(r"^exported 2 items to ", r.stdout, re.M), (form, r.stdout)
        assert "left out 2 ThisDeviceOnly items" in r.stdout, (form, r.stdout)
        if form == "csv":
            with open(path, newline="") as f:
                rows = list(csv.DictReader(f))
            assert sorted(row["username"] for row in rows) == ["after", "plain"], rows
            assert sorted(row["password"] for row in rows) == sorted(items[a][1].decode() for a in ("after", "plain"))
