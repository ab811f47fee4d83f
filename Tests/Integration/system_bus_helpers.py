"""A private system bus for attack tests that need logind: a dbus-daemon with the system bus's
policy toward strangers (anyone may connect, talk to the bus and send signals; nobody may own
names or call methods unless allowed; only root owns org.freedesktop.login1), and how to find a
user's connection on it. Used by test_attack_sleep.py and test_attack_screen_lock.py."""

from __future__ import annotations

import os
import subprocess
import tempfile

import dbus
import pytest

SYSTEM_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
{extra}  </policy>
  <policy user="root">
    <allow own="org.freedesktop.login1"/>
  </policy>
</busconfig>
"""


def start_system_bus(kit, extra_rules: str = "") -> str:
    """Starts the bus (cleaned up with `kit`); `extra_rules` are more <allow> lines for strangers.
    Returns its address."""
    folder = tempfile.mkdtemp(prefix="kwsystem-")
    kit.paths.append(folder)
    os.chmod(folder, 0o755)
    config = os.path.join(folder, "system.conf")
    socket = os.path.join(folder, "system_bus_socket")
    with open(config, "w") as f:
        f.write(SYSTEM_CONFIG.format(socket=socket, extra=extra_rules))
    bus = kit.spawn(["dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile", "--print-address=1"],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    if not bus.stdout.readline():
        pytest.fail("the private system bus did not start")
    return f"unix:path={socket}"




def connection_of_uid(bus, uid: int) -> str | None:
    driver = dbus.Interface(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"), "org.freedesktop.DBus")
    for name in driver.ListNames():
        if name.startswith(":") and int(driver.GetConnectionUnixUser(name)) == uid:
            return str(name)
    return None
