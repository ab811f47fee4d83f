"""What `keywell` loads when it starts (docs/performance.md, "The command line").

A shell, git or a script starts keywell for every lookup, and the dynamic loader's work (mapping
libc, libm, libsodium, libdbus with libsystemd behind it, libstdc++; binding their symbols)
cost as much as the lookup. keywell is a static position-independent executable
(scripts/lib/link-keywell): the kernel maps it and nothing else, and its address is still
randomised at every start. This test notices a build that lost either property.

Run: KEYWELL=.build/debug/keywell /usr/bin/python3 -m pytest Tests/Integration/test_cli_startup.py
"""

import os
import struct
import subprocess
import time

from keywell_helpers import built

ET_DYN = 3
PT_INTERP = 3


def elf_type_and_interpreter(program: str) -> tuple[int, bool]:
    """The ELF file type (ET_DYN for a position-independent program) and whether a program
    header asks for a dynamic loader (PT_INTERP), read from the 64-bit little-endian headers."""
    with open(program, "rb") as file:
        header = file.read(64)
        assert header[:4] == b"\x7fELF" and header[4] == 2 and header[5] == 1, "not a 64-bit little-endian ELF file"
        elf_type = struct.unpack_from("<H", header, 16)[0]
        program_headers, entry_size, count = struct.unpack_from("<Q", header, 32)[0], *struct.unpack_from("<HH", header, 54)
        interpreter = False
        for index in range(count):
            file.seek(program_headers + index * entry_size)
            if struct.unpack("<I", file.read(4))[0] == PT_INTERP:
                interpreter = True
    return elf_type, interpreter


def test_keywell_loads_no_shared_library_and_stays_position_independent():
    keywell = built("KEYWELL", "keywell")
    elf_type, interpreter = elf_type_and_interpreter(keywell)
    assert not interpreter, "keywell asks for the dynamic loader: see scripts/lib/link-keywell"
    assert elf_type == ET_DYN, "keywell is not position-independent: its address would not be randomised"
    listing = subprocess.run(["ldd", keywell], capture_output=True, text=True, timeout=60)
    assert "statically linked" in listing.stdout + listing.stderr, listing


def test_keywell_starts_at_another_address_each_time():
    keywell = os.path.realpath(built("KEYWELL", "keywell"))
    # Where the kernel mapped the program, read from /proc while it waits in interactive mode.
    starts = set()
    for _ in range(4):
        process = subprocess.Popen([keywell, "-i"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # Popen returns once the exec is under way, possibly before the kernel has mapped the
            # program: look until it is there (hang guard only).
            deadline = time.monotonic() + 30
            first = None
            while first is None and time.monotonic() < deadline:
                with open(f"/proc/{process.pid}/maps") as maps:
                    first = next((line for line in maps if line.rstrip().endswith(keywell)), None)
                if first is None:
                    time.sleep(0.01)
            assert first is not None, "keywell never appeared in its own memory map"
            starts.add(first.split("-")[0])
        finally:
            process.stdin.close()
            process.wait(timeout=60)
    assert len(starts) > 1, f"keywell was mapped at {starts} every time"


def test_keywell_with_static_libdbus_still_starts_and_answers():
    keywell = built("KEYWELL", "keywell")
    # No bus at all: libdbus inside keywell fails to connect and keywell says so (errSecNotAvailable).
    result = subprocess.run([keywell, "find-generic-password", "-s", "S", "-w"], capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/keywell-bus"})
    assert result.returncode == (-25291) & 0xFF, result  # errSecNotAvailable
    assert result.stdout == ""
    assert "No keychain is available" in result.stderr
