"""A sandboxed app's side of the Secret portal, as libsecret and oo7 do it: make a pipe, pass its
write end to org.freedesktop.portal.Secret.RetrieveSecret (with a handle_token, so the Request's
path is known before the call and its Response signal cannot be missed), wait for Response,
then read the secret up to end of file. Prints one JSON line.

    portal_client.py BUS_ADDRESS TOKEN [--fd pipe|closed-reader|full-pipe|file:PATH] [--direct NAME APP_ID]
                     [--close-when FILE TEXT]

--direct calls the backend interface (org.freedesktop.impl.portal.Secret) of the bus name NAME
itself, claiming APP_ID, as an app allowed to talk to that name could try.

--close-when closes the Request (org.freedesktop.portal.Request.Close) once FILE holds the line
TEXT, instead of waiting for its Response.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import sys
import time

from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
from jeepney.io.blocking import Proxy, open_dbus_connection

PORTAL = DBusAddress("/org/freedesktop/portal/desktop", bus_name="org.freedesktop.portal.Desktop",
                     interface="org.freedesktop.portal.Secret")
# Hang guards only: every wait below ends on a positive signal first.
PATIENCE = 120


def descriptor(kind: str) -> tuple[int, int | None]:
    """(the fd passed, the fd the secret is read from, if any)."""
    if kind.startswith("file:"):
        return os.open(kind[5:], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), None
    read_end, write_end = os.pipe()
    if kind == "closed-reader":
        os.close(read_end)
        return write_end, None
    if kind == "full-pipe":
        flags = fcntl.fcntl(write_end, fcntl.F_GETFL)
        fcntl.fcntl(write_end, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        try:
            while True:
                os.write(write_end, b"x" * 4096)
        except BlockingIOError:
            pass
        fcntl.fcntl(write_end, fcntl.F_SETFL, flags)
    return write_end, read_end


def read_to_end(fd: int) -> bytes:
    data = b""
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], deadline - time.monotonic())
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            return data
        data += chunk
    raise SystemExit("the secret's pipe never reached its end")


def wait_for_line(path: str, text: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        if os.path.exists(path) and text in open(path).read().splitlines():
            return
        time.sleep(0.05)
    raise SystemExit(f"{path} never held {text}")


def main() -> None:
    address, token = sys.argv[1], sys.argv[2]
    options = sys.argv[3:]
    kind = options[options.index("--fd") + 1] if "--fd" in options else "pipe"
    connection = open_dbus_connection(bus=address, enable_fds=True)
    passed, readable = descriptor(kind)

    if "--direct" in options:
        at = options.index("--direct")
        name, app_id = options[at + 1], options[at + 2]
        backend = DBusAddress("/org/freedesktop/portal/desktop", bus_name=name,
                              interface="org.freedesktop.impl.portal.Secret")
        handle = f"/org/freedesktop/portal/desktop/request/1_1/{token}"
        reply = connection.send_and_get_reply(
            new_method_call(backend, "RetrieveSecret", "osha{sv}", (handle, app_id, passed, {})), timeout=PATIENCE)
        os.close(passed)
        result = {"error": reply.header.fields.get(4), "body": [str(v) for v in reply.body]}
        if readable is not None:
            result["secret"] = read_to_end(readable).hex()
        print(json.dumps(result))
        return

    sender = connection.unique_name
    handle = f"/org/freedesktop/portal/desktop/request/{sender[1:].replace('.', '_')}/{token}"
    rule = MatchRule(type="signal", interface="org.freedesktop.portal.Request", member="Response", path=handle)
    Proxy(message_bus, connection).AddMatch(rule)
    with connection.filter(rule) as responses:
        reply = connection.send_and_get_reply(
            new_method_call(PORTAL, "RetrieveSecret", "ha{sv}", (passed, {"handle_token": ("s", token)})),
            timeout=PATIENCE)
        os.close(passed)
        if reply.header.fields.get(4):
            print(json.dumps({"error": reply.header.fields.get(4), "body": [str(v) for v in reply.body]}))
            return
        if "--close-when" in options:
            at = options.index("--close-when")
            wait_for_line(options[at + 1], options[at + 2])
            request = DBusAddress(handle, bus_name=PORTAL.bus_name, interface="org.freedesktop.portal.Request")
            closed = connection.send_and_get_reply(new_method_call(request, "Close"), timeout=PATIENCE)
            print(json.dumps({"closed": closed.header.fields.get(4) is None}))
            return
        signal = connection.recv_until_filtered(responses, timeout=PATIENCE)
    response, _results = signal.body
    secret = read_to_end(readable) if readable is not None else b""
    print(json.dumps({"handle": reply.body[0], "expected_handle": handle, "response": response, "secret": secret.hex()}))


if __name__ == "__main__":
    main()
