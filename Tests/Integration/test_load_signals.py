"""keywelld under concurrent writers while signal listeners watch: every call gets its reply.

Two ways replies were lost once the per-write `Items` signal (which lists every item of the
collection) went out:
- The connection loop lost a wake-up when a worker's send raced with the loop emptying its
  wake-up pipe (docs/dbus-layer.md, "Threads and the connection loop"); from then on a reply a
  worker could not write out itself waited for the next incoming message.
- A listener that does not read its socket makes dbus-daemon hold keywelld's signals for it, and
  once what keywelld has queued there passes the bus's budget the bus stops reading keywelld at
  all: no reply leaves. Unpaced `Items` lists reached that within some 1,800 writes; they are
  paced now (docs/secret-service.md, "Big collections").
Here several writers make and delete items on their own connections while dbus-monitor reads
every signal and a slow listener does not read its socket at all until the writers are done; the
test counts replies against calls, then requires every ItemDeleted at both listeners.

No timing threshold: the per-call timeout is only a hang guard, far above any real call.
"""

from __future__ import annotations

import subprocess
import threading

from jeepney import DBusAddress, MessageType, new_method_call
from jeepney.bus_messages import MatchRule, message_bus
from jeepney.io.blocking import open_dbus_connection

from keywell_helpers import bodies_as_test_user
from secret_service_helpers import SECRETS, SERVICE_PATH, session  # noqa: F401

WRITERS = 6
# 2,400 items: unpaced, each write's `Items` would put over 200 MiB through the bus by the end,
# more than dbus-daemon's default budget for what one sender may have queued at its receivers
# (127 MiB): the slow listener's backlog would stop the bus reading keywelld at all, and every
# caller would wait (seen at about 1,800 items). Paced (ItemsPropertyPacer), a few MiB.
ITEMS_PER_WRITER = 400
HANG_GUARD = 60  # seconds one call may take before the test calls it lost
SERVICE = DBusAddress(SERVICE_PATH, bus_name=SECRETS, interface="org.freedesktop.Secret.Service")
LOGIN = DBusAddress(f"{SERVICE_PATH}/collection/login", bus_name=SECRETS,
                    interface="org.freedesktop.Secret.Collection")


class Writer(threading.Thread):
    """Makes ITEMS_PER_WRITER items, then deletes them, on its own connection; counts calls and
    the replies that came (an error reply or a hang guard ends it)."""

    def __init__(self, address: str, number: int) -> None:
        super().__init__(daemon=True)
        self.address = address
        self.number = number
        self.calls = 0
        self.replies = 0
        self.failure: str | None = None

    def call(self, connection, message):
        self.calls += 1
        try:
            reply = connection.send_and_get_reply(message, timeout=HANG_GUARD)
        except TimeoutError:
            raise AssertionError(f"writer {self.number}: no reply to call {self.calls} in {HANG_GUARD} s") from None
        self.replies += 1
        if reply.header.message_type == MessageType.error:
            raise AssertionError(f"writer {self.number}: call {self.calls} failed: {reply.body}")
        return reply.body

    def run(self) -> None:
        connection = open_dbus_connection(bus=self.address)
        try:
            _, session_path = self.call(connection, new_method_call(SERVICE, "OpenSession", "sv", ("plain", ("s", ""))))
            made = []
            for index in range(ITEMS_PER_WRITER):
                properties = {
                    "org.freedesktop.Secret.Item.Label": ("s", f"load {self.number}/{index}"),
                    "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"writer": str(self.number), "index": str(index)}),
                }
                secret = (session_path, b"", f"secret {self.number}/{index}".encode(), "text/plain")
                item, prompt = self.call(connection, new_method_call(LOGIN, "CreateItem", "a{sv}(oayays)b",
                                                                     (properties, secret, False)))
                assert prompt == "/", f"CreateItem asked for a prompt: {prompt}"
                made.append(item)
            for item in made:
                address = DBusAddress(item, bus_name=SECRETS, interface="org.freedesktop.Secret.Item")
                self.call(connection, new_method_call(address, "Delete"))
        except Exception as error:  # reported by the test thread
            self.failure = str(error)
        finally:
            connection.close()


class MonitorCount(threading.Thread):
    """dbus-monitor on every Secret Service signal, read as fast as it comes; counts ItemDeleted."""

    def __init__(self, bus) -> None:
        super().__init__(daemon=True)
        self.process = subprocess.Popen(
            ["dbus-monitor", "--address", bus.address, f"type='signal',path_namespace='{SERVICE_PATH}'"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=bus.env)
        self.deleted = 0
        self.seen = threading.Condition()

    def wait_until_listening(self) -> None:
        """dbus-monitor prints NameLost for its own name once the bus made it a monitor."""
        for line in self.process.stdout:
            if b"member=NameLost" in line:
                return
        raise AssertionError("dbus-monitor ended before it was listening")

    def run(self) -> None:
        for line in self.process.stdout:
            if b"member=ItemDeleted" in line:
                with self.seen:
                    self.deleted += 1
                    self.seen.notify_all()

    def wait_for_deleted(self, count: int) -> bool:
        with self.seen:
            return self.seen.wait_for(lambda: self.deleted >= count, timeout=HANG_GUARD)


def test_every_call_gets_its_reply_under_writers_and_signal_listeners(session):
    session.create_login()
    monitor = MonitorCount(session)
    monitor.wait_until_listening()
    monitor.start()
    # The slow listener: subscribed to every signal, never reading until the writers are done
    # (the bus queues for it meanwhile).
    slow = open_dbus_connection(bus=session.address)
    slow.send_and_get_reply(message_bus.AddMatch(MatchRule(type="signal", path_namespace=SERVICE_PATH)),
                            timeout=HANG_GUARD)
    try:
        writers = [Writer(session.address, number) for number in range(WRITERS)]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join(timeout=HANG_GUARD * (2 * ITEMS_PER_WRITER + 1))
        failures = [w.failure for w in writers if w.failure] + [f"writer {w.number} never ended" for w in writers if w.is_alive()]
        calls = sum(w.calls for w in writers)
        replies = sum(w.replies for w in writers)
        assert not failures, f"{replies} replies to {calls} calls: {failures}\ndaemon log:\n{session.daemon_log()[-2000:]}"
        assert replies == calls == WRITERS * (2 * ITEMS_PER_WRITER + 1)

        # Every signal reached both listeners: the slow one reads its backlog now.
        total = WRITERS * ITEMS_PER_WRITER
        deleted = 0
        while deleted < total:
            message = slow.receive(timeout=HANG_GUARD)
            if message.header.message_type == MessageType.signal and message.header.fields.get(3) == "ItemDeleted":
                deleted += 1
        assert monitor.wait_for_deleted(total), f"dbus-monitor saw {monitor.deleted} ItemDeleted of {total}"
    finally:
        slow.close()
        monitor.process.terminate()
        monitor.process.wait(timeout=10)


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
