"""Attacks on the bounds of keywelld's D-Bus faces, as an outside review made them (issue 15,
items 3 and 7), against the real keywelld on a private bus:

- GetSecrets with 20,000 and 100,000 item paths, each in a collection of its own (the review
  measured 12.5 s for 20,000 and minutes of a worker at 100 % CPU for 100,000): answered
  promptly, and one path over the documented cap is refused with LimitsExceeded;
- 45,000 OpenSession (Diffie-Hellman) on one connection (the review saw 395 MB of RSS):
  refused past the per-connection cap, the daemon's RSS stays bounded, and the sessions go
  when the connection leaves the bus.

The caps are documented in docs/secret-service.md ("Limits"). Times are recorded as figures;
the only time bounds here are hang guards.
"""

from __future__ import annotations

import time
import uuid

import pytest
from jeepney import DBusAddress, MessageType, new_method_call

from keywell_helpers import bodies_as_test_user
from secret_service_helpers import DH, SECRETS, SERVICE_PATH, session  # noqa: F401 (fixture)
from security_figures import record

SERVICE = DBusAddress(SERVICE_PATH, bus_name=SECRETS, interface="org.freedesktop.Secret.Service")
LIMITS_EXCEEDED = "org.freedesktop.DBus.Error.LimitsExceeded"
# docs/secret-service.md, "Limits".
OBJECT_PATHS_PER_CALL = 100_000
SESSIONS_PER_CONNECTION = 4_096
# Long enough for a loaded 2-core machine, short next to the minutes the review measured.
HANG_GUARD = 90


def call(connection, member: str, signature: str, *arguments, timeout: float = HANG_GUARD):
    """The reply message (method return or error), never raising for a D-Bus error."""
    message = new_method_call(SERVICE, member, signature, arguments)
    return connection.send_and_get_reply(message, timeout=timeout)


def error_name(reply) -> str | None:
    from jeepney import HeaderFields
    if reply.header.message_type != MessageType.error:
        return None
    return reply.header.fields.get(HeaderFields.error_name)


def ping(connection) -> None:
    """org.freedesktop.DBus.Peer.Ping to the Secret Service's owner (keywelld) answers."""
    address = DBusAddress("/", bus_name=SECRETS, interface="org.freedesktop.DBus.Peer")
    reply = connection.send_and_get_reply(new_method_call(address, "Ping"), timeout=30)
    assert reply.header.message_type == MessageType.method_return


def daemon_rss_kib(session) -> int:
    pids = session.keywelld_pids()
    assert len(pids) == 1, pids
    for line in open(f"/proc/{pids[0]}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def distinct_collection_paths(count: int) -> list[str]:
    """Item paths each naming a keychain of its own (none of which exists)."""
    return [f"{SERVICE_PATH}/collection/k{index}/{uuid.uuid4().hex}" for index in range(count)]


@pytest.mark.parametrize("count", [20_000, OBJECT_PATHS_PER_CALL])
def test_get_secrets_with_distinct_collection_paths_is_answered_promptly(session, count):
    session.create_login()
    connection = session.jeepney()
    opened = call(connection, "OpenSession", "sv", "plain", ("s", ""))
    assert error_name(opened) is None, opened.body
    session_path = opened.body[1]
    paths = distinct_collection_paths(count)
    start = time.monotonic()
    reply = call(connection, "GetSecrets", "aoo", paths, session_path)
    elapsed = time.monotonic() - start
    assert error_name(reply) is None, reply.body
    assert reply.body[0] == {}  # no such keychains: nothing to return, and no error
    ping(connection)
    record(f"GetSecrets of {count:,} item paths in {count:,} distinct collections",
           f"answered in {elapsed:.2f} s; daemon answers Ping after", "answered, no hang", True)


def test_get_secrets_above_the_cap_is_refused(session):
    session.create_login()
    connection = session.jeepney()
    session_path = call(connection, "OpenSession", "sv", "plain", ("s", "")).body[1]
    paths = distinct_collection_paths(OBJECT_PATHS_PER_CALL + 1)
    start = time.monotonic()
    reply = call(connection, "GetSecrets", "aoo", paths, session_path)
    elapsed = time.monotonic() - start
    assert error_name(reply) == LIMITS_EXCEEDED, reply.body
    assert f"{OBJECT_PATHS_PER_CALL:,}" in reply.body[0] or str(OBJECT_PATHS_PER_CALL) in reply.body[0], reply.body
    ping(connection)
    record(f"GetSecrets of {OBJECT_PATHS_PER_CALL + 1:,} item paths (one over the cap)",
           f"refused with LimitsExceeded in {elapsed:.2f} s", "refused with a clear error", True)


def dh_public_key() -> bytes:
    """A client's public key of the 1024-bit MODP group (RFC 2409, group 2), made once."""
    prime = int(
        "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
        "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
        "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF", 16)
    secret = int.from_bytes(uuid.uuid4().bytes + uuid.uuid4().bytes, "big")
    return pow(2, secret, prime).to_bytes(128, "big")


def test_open_session_flood_is_refused_past_the_cap_and_freed_on_disconnect(session):
    session.create_login()
    key = dh_public_key()
    attacker = session.jeepney()
    before = daemon_rss_kib(session)
    attempts = 45_000
    opened = refused = 0
    first_refusal = None
    start = time.monotonic()
    for _ in range(attempts):
        reply = call(attacker, "OpenSession", "sv", DH, ("ay", key), timeout=30)
        name = error_name(reply)
        if name is None:
            opened += 1
        else:
            assert name == LIMITS_EXCEEDED, reply.body
            refused += 1
            first_refusal = first_refusal or reply.body[0]
    elapsed = time.monotonic() - start
    after = daemon_rss_kib(session)
    grown_mib = (after - before) / 1024
    ping(attacker)
    assert opened == SESSIONS_PER_CONNECTION, (opened, refused)
    assert refused == attempts - SESSIONS_PER_CONNECTION
    assert "session" in first_refusal.lower() and str(SESSIONS_PER_CONNECTION) in first_refusal.replace(",", "")
    # Generous: the cap's sessions cost a few MiB; the review saw 395 MB without one.
    assert grown_mib < 50, f"RSS grew by {grown_mib:.1f} MiB ({before} -> {after} KiB)"

    # The attacker leaves: its sessions go, and another connection (itself capped) opens some again.
    attacker.close()
    session._connections.remove(attacker)
    deadline = time.monotonic() + 30
    while f"closed {SESSIONS_PER_CONNECTION} Secret Service session(s)" not in session.daemon_log():
        assert time.monotonic() < deadline, "the departed connection's sessions were not closed"
        time.sleep(0.05)
    other = session.jeepney()
    reply = call(other, "OpenSession", "sv", DH, ("ay", key), timeout=30)
    assert error_name(reply) is None, reply.body
    record(f"{attempts:,} OpenSession (DH) on one connection",
           f"{opened:,} opened, {refused:,} refused with LimitsExceeded in {elapsed:.1f} s; "
           f"RSS {before / 1024:.0f} -> {after / 1024:.0f} MiB (+{grown_mib:.1f})",
           f"refused past {SESSIONS_PER_CONNECTION:,}; RSS +50 MiB at most", True)


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
