"""What `keywell` loads when it starts (docs/performance.md, "The command line").

A shell, git or a script starts keywell for every lookup, and loading libdbus.so (with
libsystemd and the libraries behind it), libstdc++.so and libgcc_s.so cost about as much as
the rest of its start. scripts/lib/link-keywell links them in statically; its fallback, when
libdbus's archive is missing, links them dynamically again with only a warning in the build
log. This test notices that.

Run: KEYWELL=.build/debug/keywell /usr/bin/python3 -m pytest Tests/Integration/test_cli_startup.py
"""

import subprocess

from keywell_helpers import built

# Loaded at every start before; each is now inside keywell or not needed at all.
NOT_LOADED = ["libdbus-1.so", "libsystemd.so", "libgcrypt.so", "liblzma.so", "libzstd.so", "liblz4.so",
              "libcap.so", "libgpg-error.so", "libstdc++.so", "libgcc_s.so"]


def loaded_libraries(program: str) -> list[str]:
    """The shared objects the dynamic loader maps for `program`, by their file names."""
    listing = subprocess.run(["ldd", program], capture_output=True, text=True, check=True, timeout=60).stdout
    return [line.split()[0] for line in listing.splitlines() if line.strip()]


def test_keywell_loads_no_dbus_systemd_or_cpp_runtime_library():
    keywell = built("KEYWELL", "keywell")
    loaded = loaded_libraries(keywell)
    assert any(name.startswith("libc.so") for name in loaded), loaded
    unexpected = [name for name in loaded if any(name.startswith(prefix) for prefix in NOT_LOADED)]
    assert unexpected == [], f"keywell loads {unexpected}: see scripts/lib/link-keywell"


def test_keywell_with_static_libdbus_still_starts_and_answers():
    keywell = built("KEYWELL", "keywell")
    # No bus at all: libdbus inside keywell fails to connect and keywell says so (errSecNotAvailable).
    result = subprocess.run([keywell, "find-generic-password", "-s", "S", "-w"], capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/keywell-bus"})
    assert result.returncode == (-25291) & 0xFF, result  # errSecNotAvailable
    assert result.stdout == ""
    assert "No keychain is available" in result.stderr
