"""Hostile keyring files planted in ~/.local/share/keyrings (docs/migration.md, "Limits"): counts
and lengths near 2^32, billions of key-derivation rounds, truncation, garbage, a damaged key
file and a symlink. `keywell migrate` must refuse each with a clear message naming the keyring,
import the good file beside them, and keywelld must keep serving (no crash, no huge allocation).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from keywell_helpers import bodies_as_test_user, built
from secret_service_helpers import KeywellBus
from security_figures import record

FIXTURE = Path(__file__).resolve().parents[1] / "Fixtures/libsecret-v1.keyring"
PASSWORD = "fixture pass"
MAGIC = b"GnomeKeyring\n\r\x00\n"


def binary_header(label_length: int = 5, iterations: int = 2000, items: int = 0) -> bytes:
    head = MAGIC + b"\x00\x00\x00\x00" + struct.pack(">I", label_length) + b"Login"
    head += struct.pack(">QQIII", 0, 0, 0, 0, iterations) + b"saltsalt" + b"\x00" * 16
    return head + struct.pack(">I", items)


def test_hostile_keyring_files_are_refused_and_the_good_one_imports():
    bus = KeywellBus()
    try:
        folder = bus.home / ".local/share/keyrings"
        (folder / "v1").mkdir(parents=True)
        good = FIXTURE.read_bytes()
        # libsecret's iteration count sits after the header (18), the salt size (4) and a 32-byte salt.
        rounds = bytearray(good)
        rounds[18 + 36:18 + 40] = struct.pack("<I", 0xFFFFFFFF)
        hostile = {
            "count.keyring": binary_header(items=0xFFFFFFF0),
            "label.keyring": binary_header(label_length=0x7FFFFFFF),
            "rounds.keyring": binary_header(iterations=0xFFFFFFFF),
            "garbage.keyring": os.urandom(4096),
            "keyfile.keyring": b"[keyring]\ndisplay-name=x\nthis line is neither\n",
            "v1rounds.keyring": bytes(rounds),
            "v1cut.keyring": good[: len(good) // 2],
        }
        for name, data in hostile.items():
            (folder / name).write_bytes(data)
        os.symlink(FIXTURE, folder / "link.keyring")
        (folder / "v1/login.keyring").write_bytes(good)

        run = bus.run([built("KEYWELL", "keywell"), "migrate"], input=(PASSWORD + "\n") * 20, timeout=300)
        out = run.stdout.decode()
        lines = {Path(line.split(" → ")[0]).name: line for line in out.splitlines() if " → " in line}
        assert run.returncode == 1, out
        assert "imported (2 added" in lines["login.keyring"], out
        refused = [name for name in hostile if name in lines and ": failed: keyring" in lines[name]
                   and (" is damaged: " in lines[name] or " is over a limit: " in lines[name]
                        or " is not in a keyring format" in lines[name])]
        assert sorted(refused) == sorted(hostile), out
        assert "link.keyring" not in lines, "symlinks are skipped"
        # keywelld kept serving.
        assert bus.native().GetDefaultKeychain() == "login"
        assert bus.secret_tool("lookup", "service", "mail", "account", "alice").stdout == b"s3cret-alice"
        print(out)
        record("hostile keyring files planted in ~/.local/share/keyrings (2^32 counts and lengths, 2^32 KDF rounds, "
               "truncation, garbage, symlink)", f"{len(refused)}/{len(hostile)} refused with a clear error; daemon up",
               "every one refused, the good file imported", sorted(refused) == sorted(hostile))
    finally:
        bus.close()


# These tests call keywelld from this process and plant files as the user: each body runs as the test user.
bodies_as_test_user(globals())
