"""Values far over any real use, as an outside review sent them (issue 30, finding 4: a
50,000,000-byte label was stored; keywelld's peak memory went from 8 MB to 506 MB and the
keychain file plus its WAL grew by 400 MB), against the real keywelld on a private bus whose
message limits are a desktop session bus's:

- a 50 MB label and a 50 MB secret on the native API over the bus, over the direct socket,
  and through the Secret Service: each refused with the cap in the message (never the value),
  keywelld's peak memory (VmHWM) grows by less than `PEAK_GROWTH_BOUND_MIB`, the keychain
  files do not grow, and the daemon still answers;
- `keywell add-generic-password` with a label over the cap, on the direct socket and on the
  bus: a clear error naming the cap;
- a message over the direct socket's 64 MiB cap: only that connection is dropped;
- positive controls: a label and a secret exactly at their caps, and a normal item stored and
  read back with secret-tool.

The caps are documented in docs/secret-service.md ("Limits") and docs/native-api.md.
"""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import dbus
import pytest
from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call

from keywell_helpers import bodies_as_test_user, built
from secret_service_helpers import NATIVE_IFACE, NATIVE_PATH, SECRETS, SERVICE_PATH, KeywellBus
from security_figures import record
from skip_helpers import cannot_run, kernel_pins_peers

# docs/secret-service.md, "Limits".
BYTES_PER_LABEL = 16 * 1024
BYTES_PER_SECRET = 1 << 20
BYTES_PER_MESSAGE = 64 << 20
HUGE = 50_000_000
# libdbus alone takes about 95 MiB to receive a 50 MB message (a bare Ping, measured from
# outside); one more copy of the value is allowed, with margin for a busy allocator.
PEAK_GROWTH_BOUND_MIB = 160
PARAM = "org.keywell.Keychain1.Error.Param"
LIMITS_EXCEEDED = "org.freedesktop.DBus.Error.LimitsExceeded"
DEFAULT_COLLECTION = f"{SERVICE_PATH}/aliases/default"


@pytest.fixture
def bus():
    session = KeywellBus(session_limits=True)
    try:
        session.owner.call(session.create_login, enforce_access=False)
        yield session
    finally:
        session.close()


def daemon_pid(bus: KeywellBus) -> int:
    pids = bus.keywelld_pids()
    assert len(pids) == 1, pids
    return pids[0]


def peak_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def keychain_bytes(bus: KeywellBus) -> int:
    folder = bus.home / ".local/share/keywell/keychains"
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file())


def generic(label: str = "capped", secret: bytes = b"s3cret", account: str = "alice") -> dict:
    return dbus.Dictionary({"class": "genp", "svce": "caps.example", "acct": account, "labl": label,
                            "v_Data": dbus.ByteArray(secret)}, signature="sv")


def direct_socket(bus: KeywellBus):
    path = bus.runtime / "keywell" / "native"
    if not path.exists():
        if kernel_pins_peers():
            pytest.fail(f"keywelld serves no direct socket at {path}, though this kernel pins a socket's peer")
        cannot_run("no direct socket (the kernel does not pin a socket's peer: Linux 6.5)")
    return dbus.connection.Connection(f"unix:path={path}")


def native_add(bus: KeywellBus, face: str, attributes: dict):
    if face == "bus":
        return bus.native().Add(attributes, timeout=120)
    connection = direct_socket(bus)
    try:
        return connection.call_blocking(None, NATIVE_PATH, NATIVE_IFACE, "Add", "a{sv}", [attributes], timeout=120)
    finally:
        connection.close()


def secret_service_create(bus: KeywellBus, label: str, secret: bytes):
    """CreateItem in the default collection over a plain session; the reply message."""
    connection = bus.jeepney()
    service = DBusAddress(SERVICE_PATH, bus_name=SECRETS, interface="org.freedesktop.Secret.Service")
    opened = connection.send_and_get_reply(new_method_call(service, "OpenSession", "sv", ("plain", ("s", ""))), timeout=30)
    session_path = opened.body[1]
    collection = DBusAddress(DEFAULT_COLLECTION, bus_name=SECRETS, interface="org.freedesktop.Secret.Collection")
    properties = {
        "org.freedesktop.Secret.Item.Label": ("s", label),
        "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"service": "caps.example", "user": "bob"}),
    }
    message = new_method_call(collection, "CreateItem", "a{sv}(oayays)b",
                              (properties, (session_path, b"", secret, "text/plain"), True))
    return connection.send_and_get_reply(message, timeout=120)


def refusal_of(send) -> tuple[str, str]:
    """(error name, message) of a call that must fail."""
    try:
        reply = send()
    except dbus.exceptions.DBusException as error:
        return error.get_dbus_name(), error.get_dbus_message()
    if getattr(reply, "header", None) is not None and reply.header.message_type == MessageType.error:
        return reply.header.fields.get(HeaderFields.error_name), reply.body[0]
    raise AssertionError(f"accepted: {str(reply)[:200]}")


ATTACKS = {
    "native label on the bus": (PARAM, BYTES_PER_LABEL, lambda bus: native_add(bus, "bus", generic(label="L" * HUGE))),
    "native secret on the bus": (PARAM, BYTES_PER_SECRET, lambda bus: native_add(bus, "bus", generic(secret=b"S" * HUGE))),
    "native label on the direct socket": (PARAM, BYTES_PER_LABEL,
                                          lambda bus: native_add(bus, "direct", generic(label="L" * HUGE))),
    "native secret on the direct socket": (PARAM, BYTES_PER_SECRET,
                                           lambda bus: native_add(bus, "direct", generic(secret=b"S" * HUGE))),
    "Secret Service label": (LIMITS_EXCEEDED, BYTES_PER_LABEL, lambda bus: secret_service_create(bus, "L" * HUGE, b"x")),
    "Secret Service secret": (LIMITS_EXCEEDED, BYTES_PER_SECRET, lambda bus: secret_service_create(bus, "ok", b"S" * HUGE)),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_50_mb_value_is_refused_cheaply(bus, attack):
    expected_error, cap, send = ATTACKS[attack]
    pid = daemon_pid(bus)
    peak_before = peak_kib(pid)
    size_before = keychain_bytes(bus)
    name, message = refusal_of(lambda: send(bus))
    peak_growth_mib = (peak_kib(pid) - peak_before) / 1024
    size_growth = keychain_bytes(bus) - size_before
    record(f"a 50 MB value ({attack})", f"refused; keywelld peak memory +{peak_growth_mib:.0f} MiB",
           f"refused, < {PEAK_GROWTH_BOUND_MIB} MiB", name == expected_error and peak_growth_mib < PEAK_GROWTH_BOUND_MIB)
    assert name == expected_error, (name, message[:300])
    assert str(cap) in message.replace(",", ""), message
    assert len(message) < 500, "the error echoes the value"
    assert peak_growth_mib < PEAK_GROWTH_BOUND_MIB, f"peak memory grew by {peak_growth_mib:.0f} MiB"
    assert size_growth <= 0, f"the keychain files grew by {size_growth} bytes"
    assert daemon_pid(bus) == pid
    assert bus.native().GetDefaultKeychain().endswith("login")


def run_on_terminal(bus: KeywellBus, args: list[str], env: dict) -> tuple[int, str]:
    """Exit status and stderr of a command whose stderr is a terminal: `keywell` prints the
    daemon's explanation as a hint only there (scripts see exactly `security`'s line)."""
    controller, terminal = pty.openpty()
    try:
        result = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=terminal,
                                env={**bus.env, **env}, timeout=60)
        os.close(terminal)
        terminal = -1
        output = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            output += chunk
        return result.returncode, output.decode(errors="replace")
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)


@pytest.mark.parametrize("face", ["direct", "bus"])
def test_the_cli_names_the_cap(bus, face):
    keywell = built("KEYWELL")
    env = {"KEYWELL_NO_DIRECT_SOCKET": "1"} if face == "bus" else {}
    status, error = run_on_terminal(bus, [keywell, "add-generic-password", "-a", "carol", "-s", "caps.example",
                                          "-l", "L" * (BYTES_PER_LABEL + 1), "-w", "pw"], env)
    assert status != 0
    assert str(BYTES_PER_LABEL) in error.replace(",", "") and "label" in error, error
    assert len(error) < 500, error


def test_values_at_the_caps_and_normal_items_are_stored(bus):
    native_add(bus, "bus", generic(label="L" * BYTES_PER_LABEL, secret=b"S" * BYTES_PER_SECRET, account="edge"))
    found = bus.native().CopyMatching({"class": "genp", "acct": "edge", "r_Data": True, "r_Attributes": True,
                                       "m_Limit": "m_LimitOne"})
    assert len(found[0]["labl"]) == BYTES_PER_LABEL and len(bytes(found[0]["v_Data"])) == BYTES_PER_SECRET
    keywell = built("KEYWELL")
    bus.run([keywell, "add-generic-password", "-a", "dave", "-s", "caps.example", "-l", "L" * BYTES_PER_LABEL,
             "-w", "pw"], check=True)
    bus.secret_tool("store", "--label=normal", "service", "caps.normal", input="hunter2", check=True)
    assert bus.secret_tool("lookup", "service", "caps.normal", check=True).stdout == b"hunter2"
    assert secret_service_create(bus, "S" * BYTES_PER_LABEL, b"S" * BYTES_PER_SECRET).header.message_type \
        == MessageType.method_return
    assert os.path.exists(Path(bus.home) / ".local/share/keywell/keychains/login.keychain-db")


def test_a_message_over_the_direct_socket_cap_drops_only_that_connection(bus):
    """ServiceLimits.bytesPerMessage (64 MiB): libdbus drops the sender before reading the
    message whole; the daemon and its other clients go on."""
    pid = daemon_pid(bus)
    peak_before = peak_kib(pid)
    connection = direct_socket(bus)
    with pytest.raises(dbus.exceptions.DBusException):
        connection.call_blocking(None, NATIVE_PATH, NATIVE_IFACE, "Add", "a{sv}",
                                 [generic(label="L" * (BYTES_PER_MESSAGE + 1))], timeout=120)
    peak_growth_mib = (peak_kib(pid) - peak_before) / 1024
    assert peak_growth_mib < PEAK_GROWTH_BOUND_MIB, f"peak memory grew by {peak_growth_mib:.0f} MiB"
    assert daemon_pid(bus) == pid
    assert bus.native().GetDefaultKeychain().endswith("login")
    native_add(bus, "direct", generic(account="after"))


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
