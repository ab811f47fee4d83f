"""The daemon forgets secrets once a keychain locks: a real keywelld is scanned byte by byte
(/proc/PID/mem) after Lock for the master key, a 32-byte and a 12-byte stored secret and the
keychain's password. The 12-byte one matters most: Swift keeps byte strings that short inside
the values themselves, where only the handlers' own wiping and the stack scrub after each call
can reach them. The scan is `keywell-bench security-report`'s own section, run against the
keywelld under test.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from keywell_helpers import built
from skip_helpers import cannot_run


def test_no_secret_outlives_lock_in_the_daemons_memory():
    if os.geteuid() != 0:
        cannot_run("reading another process's memory needs root")
    bench = os.path.join(os.environ.get("KEYWELL_BIN_DIR", ""), "keywell-bench")
    if not os.access(bench, os.X_OK):
        pytest.fail(f"no keywell-bench in KEYWELL_BIN_DIR ({bench})")
    keywelld = built("KEYWELLD", "keywelld")
    result = subprocess.run([bench, "security-report", "--keywelld", keywelld, "--section", "memory scan"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr + result.stdout
    rows = [line for line in result.stdout.splitlines() if line.startswith("| after Lock")]
    assert len(rows) >= 4, result.stdout
    failed = [row for row in rows if row.rstrip().endswith("**NO** |")]
    assert not failed, "\n".join(failed)
    # The rows name what was looked for; each one reports no copy.
    for what in ("master key", "32 random bytes", "12-byte stored secret", "password (sent with CreateKeychain)"):
        assert any(what in row and "| 0 copies" in row for row in rows), (what, result.stdout)
