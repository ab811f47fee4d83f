"""keywelld keeps nothing for callers that have left the bus.

Shell prompts and git start a new `keywell` process for every lookup, thousands a day, each a
new bus connection. keywelld used to keep about 4.7 KiB for every one of them for good (the
bus questions it asks about a new caller were never freed, docs/performance.md "Daemon
memory"). Here 600 separate processes look an item up: keywelld's heap and descriptors must
stay where they were after the first ones (warm caches, no new items: nothing should grow).
"""

from __future__ import annotations

import os
import subprocess

from keywell_helpers import PrivateAccount, built

PASSWORD = "caller-memory-password"
WARM_UP = 60
CALLERS = 600
# Anonymous memory may move by allocator noise; the old leak was ~4.7 KiB a caller (1.5 MiB here for lookups).
ALLOWED_GROWTH_KIB = 600


def daemon_pid(account: PrivateAccount) -> int:
    out = subprocess.run(["dbus-send", "--session", "--print-reply=literal", "--dest=org.freedesktop.DBus",
                          "/org/freedesktop/DBus", "org.freedesktop.DBus.GetConnectionUnixProcessID",
                          "string:org.keywell.Keychain"], env=account.env, capture_output=True, text=True, timeout=60,
                         **account.owner.spawn)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


# keywelld makes itself undumpable: its /proc files are root's to read (this process is root).
def anonymous_kib(pid: int) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Anonymous:"):
                return int(line.split()[1])
    raise AssertionError("no Anonymous line in smaps_rollup")


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_separate_caller_processes_leave_nothing_behind():
    keywell = built("KEYWELL", "keywell")
    account = PrivateAccount(built("KEYWELLD", "keywelld"), "keywell-caller-memory-",
                             extra_env={"KEYWELL_TEST_FAST_KDF": "1"})
    try:
        def run(*arguments: str) -> None:
            result = subprocess.run([keywell, *arguments], env=account.env, capture_output=True, text=True, timeout=120,
                                    **account.owner.spawn)
            assert result.returncode == 0, (arguments, result.stderr)

        run("create-keychain", "-p", PASSWORD, "login")
        run("add-generic-password", "-a", "me", "-s", "prompt", "-w", "the secret", "login")

        def callers(count: int) -> None:
            # One process each, as a shell prompt would start them; every one has left when run returns.
            for _ in range(count):
                run("find-generic-password", "-a", "me", "-s", "prompt", "-w")

        callers(WARM_UP)
        pid = daemon_pid(account)
        memory_before, fds_before = anonymous_kib(pid), descriptors(pid)
        callers(CALLERS)
        assert daemon_pid(account) == pid, "keywelld restarted meanwhile"
        memory_after, fds_after = anonymous_kib(pid), descriptors(pid)

        print(f"keywelld anonymous {memory_before} -> {memory_after} KiB, descriptors {fds_before} -> {fds_after}")
        assert fds_after <= fds_before, f"descriptors {fds_before} -> {fds_after} after {CALLERS} callers"
        growth = memory_after - memory_before
        assert growth <= ALLOWED_GROWTH_KIB, (
            f"keywelld's anonymous memory grew by {growth} KiB over {CALLERS} caller processes "
            f"({growth * 1024 // CALLERS} bytes each)")
    finally:
        account.close()
