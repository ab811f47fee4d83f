"""Issue 3 end to end, with the real PAM module and no test hooks: pam_keywell starts keywelld
at login before any session bus exists; then the user's session bus appears at
$XDG_RUNTIME_DIR/bus with Keywell's activation file, and a client calls org.keywell.Keychain
before the PAM-started daemon has got onto the new bus. dbus-daemon activates a second keywelld,
which finds the instance lock taken: it must leave the call to the first daemon (exit 0 once the
name has an owner) instead of failing it.

Left alone, the daemon usually wins that race (it watches the folder with inotify), so the test
holds it still with SIGSTOP until the activated keywelld has started, as a busy machine might,
then lets it go. Several rounds: the bus goes away and comes back.
Needs the built daemon: KEYWELLD=/path/to/keywelld (scripts/test.sh sets it).
"""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from keywell_helpers import built, module, open_kit, session_bus_config  # noqa: F401 (module: a fixture)
from pam_helpers import LOGIN_BOUND_S, Kit, User, ensure_runtime_dir, keywelld_pids, login

ROUNDS = 3

# Runs as the user: one auto-starting call, then who owns the name. Prints one JSON object.
CLIENT = r'''
import json, sys
import dbus
bus = dbus.bus.BusConnection(sys.argv[1])
try:
    info = bus.call_blocking("org.keywell.Keychain", "/org/keywell/Keychain", "org.keywell.Keychain1", "GetInfo",
                             "s", ["login"], timeout=60)
    owner = bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
                              "s", ["org.keywell.Keychain"])
    pid = bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                            "GetConnectionUnixProcessID", "s", [owner])
    print(json.dumps({"locked": bool(info["locked"]), "pid": int(pid)}))
except dbus.DBusException as e:
    print(json.dumps({"error": e.get_dbus_name(), "message": e.get_dbus_message()}))
'''


@pytest.fixture(scope="session")
def keywelld():
    return built("KEYWELLD", "keywelld")


@pytest.fixture
def kit(module, keywelld):
    yield from open_kit(module)


def activation_folder(kit: Kit, user: User, keywelld: str) -> Path:
    """A bus configuration whose only service directory activates the real keywelld through a
    shell that writes down each activated instance's start and exit status."""
    folder = Path(kit.bindir())
    out = folder / "out"
    out.mkdir(mode=0o700)
    os.chown(out, user.uid, user.gid)
    services = folder / "services"
    services.mkdir(mode=0o755)
    wrapper = folder / "keywelld-activated"
    wrapper.write_text(f"""#!/bin/sh
echo started >>'{out}/starts'
'{keywelld}' --verbose 2>>'{out}/log'
status=$?
echo "$status" >>'{out}/statuses'
exit "$status"
""")
    wrapper.chmod(0o755)
    (services / "org.keywell.Keychain.service").write_text(
        f"[D-BUS Service]\nName=org.keywell.Keychain\nExec={wrapper}\n")
    (folder / "bus.conf").write_text(session_bus_config(f"{user.runtime_dir}/bus", services, doctype=False))
    return folder


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def log(folder: Path) -> str:
    path = folder / "out/log"
    return path.read_text() if path.exists() else ""


def wait_for_activated_to_end(folder: Path, timeout: float = 30) -> None:
    out = folder / "out"
    deadline = time.monotonic() + timeout
    while len(lines(out / "statuses")) < len(lines(out / "starts")):
        assert time.monotonic() < deadline, f"an activated keywelld is still running: {log(folder)}"
        time.sleep(0.05)


def test_a_call_that_activates_a_second_keywelld_is_served_by_the_pam_started_daemon(kit, keywelld):
    user = kit.user()
    stack = kit.stack(daemon=keywelld)
    ensure_runtime_dir(user)
    r = login(stack, user)  # no session bus yet: the daemon serves only the PAM socket
    assert r.ok and r.elapsed < LOGIN_BOUND_S, r
    daemons = keywelld_pids(user)
    assert len(daemons) == 1
    folder = activation_folder(kit, user, keywelld)
    statuses = folder / "out/statuses"
    env = kit.user_env(user)
    env.pop("DBUS_SESSION_BUS_ADDRESS")

    for round_ in range(ROUNDS):
        # Hold the daemon still (as a busy machine may) so that the call surely comes first.
        os.kill(daemons[0], signal.SIGSTOP)
        bus = client = None
        try:
            bus = subprocess.Popen(["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups", "--",
                                    "dbus-daemon", f"--config-file={folder / 'bus.conf'}", "--nofork", "--nopidfile",
                                    "--print-address"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
            address = bus.stdout.readline().decode().strip()
            assert address, "the session bus did not start"
            client = subprocess.Popen(["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups", "--",
                                       "/usr/bin/python3", "-c", CLIENT, address],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            # The call made dbus-daemon start a second keywelld, which finds the lock taken and
            # decides: it waits for the name (or, before issue 3 was fixed, exits 1 at once).
            deadline = time.monotonic() + 30
            while log(folder).count("waiting for org.keywell.Keychain") <= round_ and len(lines(statuses)) <= round_:
                assert time.monotonic() < deadline, f"nothing was activated: {log(folder)}"
                time.sleep(0.02)
            os.kill(daemons[0], signal.SIGCONT)  # it sees the bus now, and claims its name
            out, err = client.communicate(timeout=90)
            assert client.returncode == 0, err.decode()
            answer = json.loads(out.decode().strip().splitlines()[-1])
            assert answer == {"locked": False, "pid": daemons[0]}, (round_, answer, log(folder))
            # The activated keywelld ends by itself once it sees the name owned.
            wait_for_activated_to_end(folder)
        finally:
            os.kill(daemons[0], signal.SIGCONT)
            for p in (client, bus):
                if p is not None and p.poll() is None:
                    p.terminate()
                    p.wait(timeout=10)
        assert keywelld_pids(user) == daemons
        # The bus and its socket are gone, so the next round's bus is a new appearance.
        deadline = time.monotonic() + 10
        while os.path.exists(f"{user.runtime_dir}/bus") and time.monotonic() < deadline:
            time.sleep(0.05)

    # Every keywelld the bus activated left quietly and successfully.
    assert lines(statuses) == ["0"] * ROUNDS, log(folder)
