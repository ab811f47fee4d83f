"""Access control through the Secret Service, with real programs (docs/secret-service.md, "Access
control"): secret-tool (libsecret) and python scripts over jeepney are distinct applications; a
scripted pinentry answers each access question (Allow, Always Allow, Deny); a python script in a
bwrap sandbox with a `/.flatpak-info` is a Flatpak app. The login keychain is made fresh, so it
enforces access lists: the program that makes an item is the one it trusts."""

from __future__ import annotations

import os
import signal
import subprocess

from keywell_helpers import bodies_as_test_user, wait_for
from secret_service_helpers import LOGIN_PASSWORD, session  # noqa: F401
from ss_access_helpers import Client, confirms, descriptions, sandbox, scratch  # noqa: F401

ATTRS = {"service": "acl-ss", "user": "ann"}


def test_creator_reads_silently_and_another_program_sees_the_item_locked(session, scratch):
    session.create_login()
    session.secret_tool("store", "--label=Ann's token", *sum(ATTRS.items(), ()), input="tok-1", check=True)
    # The creator (secret-tool) reads without a question.
    assert session.secret_tool("lookup", *sum(ATTRS.items(), ())).stdout == b"tok-1"
    assert confirms(session) == []

    # Another program: the item is locked for it. SearchItems, GetSecrets and Locked ask nothing;
    # its GetSecret asks (Deny here: the script answers Deny when told nothing) and gets IsLocked.
    other = Client(session, scratch / "other.py").look(ATTRS)
    assert other["unlocked"] == [] and len(other["locked"]) == 1
    path = other["locked"][0]
    assert other["items"][path] == {"locked": True, "secret": "ERROR org.freedesktop.Secret.Error.IsLocked"}
    assert other["secrets"] == {}
    assert len(confirms(session)) == 1
    # The creator still sees it unlocked, secret and all.
    assert session.secret_tool("lookup", *sum(ATTRS.items(), ())).stdout == b"tok-1"


def test_untrusted_secret_tool_search_all_asks_before_it_shows_a_secret(session, scratch):
    session.create_login()
    Client(session, scratch / "maker.py").store("Maker's", ATTRS, "made-by-python")
    # secret-tool is another program. `search --all` reads each item's secret with GetSecret,
    # which asks (docs/secret-service.md, "GetSecret and Seahorse"): Deny prints the item, no secret.
    session.pinentry_answers("deny")
    plain = session.secret_tool("search", "--all", *sum(ATTRS.items(), ()))
    assert b"made-by-python" not in plain.stdout + plain.stderr
    assert b"label = Maker's" in plain.stdout + plain.stderr
    assert len(confirms(session)) == 1
    assert any("“secret-tool” wants to use “Maker's” from your keychain" in line
               for line in descriptions(session)), descriptions(session)
    # --unlock asks through Unlock's prompt; its GetSecret then shares that Deny (one burst).
    session.pinentry_answers("deny")
    denied = session.secret_tool("search", "--all", "--unlock", *sum(ATTRS.items(), ()))
    assert b"made-by-python" not in denied.stdout + denied.stderr
    assert len(confirms(session)) == 2
    # Allow: the secret.
    session.pinentry_answers("allow")
    allowed = session.secret_tool("search", "--all", *sum(ATTRS.items(), ()))
    assert b"secret = made-by-python" in allowed.stdout
    assert len(confirms(session)) == 3


def test_allow_lets_the_program_read_until_the_keychain_locks(session, scratch):
    import dbus
    session.create_login()
    Client(session, scratch / "maker.py").store("Maker's", ATTRS, "s3cret")
    session.pinentry_answers("allow")
    assert session.secret_tool("lookup", *sum(ATTRS.items(), ())).stdout == b"s3cret"
    assert len(confirms(session)) == 1
    # Later runs of the same program (new connections) read without a question.
    for _ in range(4):
        assert session.secret_tool("lookup", *sum(ATTRS.items(), ())).stdout == b"s3cret"
    assert len(confirms(session)) == 1
    # Once the keychain locks, Allow is over: asked again (Deny this time).
    session.native().Lock("login")
    session.native().Unlock("login", dbus.ByteArray(LOGIN_PASSWORD.encode()))
    session.pinentry_answers("deny")
    assert session.secret_tool("lookup", *sum(ATTRS.items(), ())).stdout == b""
    assert len(confirms(session)) == 2


def test_always_allow_is_stored_and_survives_a_daemon_restart(session, scratch):
    session.create_login()
    Client(session, scratch / "maker.py").store("Maker's", ATTRS, "kept")
    session.pinentry_answers("always")
    assert session.secret_tool("lookup", *sum(ATTRS.items(), ())).stdout == b"kept"
    assert len(confirms(session)) == 1
    assert session.secret_tool("lookup", *sum(ATTRS.items(), ())).stdout == b"kept"
    # keywelld exits; the next call activates a new one, which reads the list from the file.
    for pid in session.keywelld_pids():
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not session.keywelld_pids(), "keywelld to exit")
    session.pinentry_answers("login-password")
    assert session.secret_tool("lookup", *sum(ATTRS.items(), ())).stdout == b"kept"
    assert len(confirms(session)) == 1, "Always Allow was asked again after the restart"


def test_unlock_prompt_asks_once_for_all_items_and_completes_with_them(session, scratch):
    session.create_login()
    maker = Client(session, scratch / "maker.py")
    for n in range(5):
        maker.store(f"Item {n}", {**ATTRS, "n": str(n)}, f"v{n}")
    reader = Client(session, scratch / "reader.py")
    session.pinentry_answers("allow")
    result = reader.unlock(ATTRS)
    assert result["immediately"] == [] and result["dismissed"] is False
    assert sorted(result["completed"]) == sorted(result["after"])
    assert sorted(result["after"].values()) == [f"SECRET v{n}" for n in range(5)]
    assert len(confirms(session)) == 1
    assert any("and 4 more items" in line for line in descriptions(session)), descriptions(session)


def test_unlock_prompt_denied_is_dismissed_and_reads_nothing(session, scratch):
    session.create_login()
    Client(session, scratch / "maker.py").store("Maker's", ATTRS, "no")
    session.pinentry_answers("deny")
    result = Client(session, scratch / "reader.py").unlock(ATTRS)
    assert result["dismissed"] is True and result["completed"] == []
    assert list(result["after"].values()) == ["ERROR org.freedesktop.Secret.Error.IsLocked"]


def scripted_pinentries(session) -> list[int]:
    """The scripted pinentries running on this bus's session (the daemon's children)."""
    out = subprocess.run(["pgrep", "-s", str(session.bus.pid), "-f", "scripted_pinentry"], capture_output=True, text=True)
    return [int(pid) for pid in out.stdout.split()]


def test_dismiss_withdraws_the_access_question_on_screen(session, scratch):
    session.create_login()
    Client(session, scratch / "maker.py").store("Maker's", ATTRS, "kept")
    # The dialog holds (answers nothing) until the daemon ends it; the second question allows.
    session.pinentry_answers({"hold": True}, "allow")
    result = Client(session, scratch / "reader.py").dismiss(ATTRS, session.pinentry_log)
    # Dismiss: Deny, Completed(dismissed=true), the dialog stopped.
    assert result["dismissed"] is True and result["completed"] == []
    assert list(result["after"].values()) == [{"locked": True, "secret": False}]
    assert scripted_pinentries(session) == []
    # The withdrawn question was no answer: the next Unlock, moments later, asks again.
    assert result["again"] == {"dismissed": False, "secrets": {path: "SECRET kept" for path in result["after"]}}
    assert len(confirms(session)) == 2


def test_unlock_of_a_locked_keychain_and_an_untrusted_item_asks_the_password_then_the_question(session, scratch):
    session.create_login()
    Client(session, scratch / "maker.py").store("Maker's", ATTRS, "both")
    session.native().Lock("login")
    session.pinentry_answers("login-password", "allow")
    result = Client(session, scratch / "reader.py").unlock(ATTRS)
    assert result["dismissed"] is False and list(result["after"].values()) == ["SECRET both"]
    lines = session.pinentry_lines()
    getpin = next(i for i, line in enumerate(lines) if line.startswith("GETPIN"))
    confirm = next(i for i, line in enumerate(lines) if line.startswith("CONFIRM"))
    assert getpin < confirm, "the password comes before the access question"


def test_a_keychain_that_does_not_enforce_trusts_any_program(session, scratch):
    session.create_login(enforce_access=False)
    Client(session, scratch / "maker.py").store("Open", ATTRS, "open")
    seen = Client(session, scratch / "reader.py").look(ATTRS)
    assert list(seen["secrets"].values()) == ["open"] and confirms(session) == []


def test_a_sandboxed_app_sees_only_its_own_items(session, scratch):
    session.create_login()
    host = Client(session, scratch / "host.py")
    host.store("Host's", {"service": "host"}, "host-secret")
    app = Client(session, scratch / "app.py")
    jail = sandbox(session, scratch, "org.example.Notes", "2000000001")

    # Nothing of the host's exists for the app: not in searches, not by its path.
    everything = app.look({}, prefix=jail)
    assert everything["unlocked"] == [] and everything["locked"] == []
    host_path = host.look({"service": "host"})["unlocked"][0]
    assert app.get(host_path, prefix=jail) == "ERROR org.freedesktop.DBus.Error.UnknownMethod"

    # Its own item: made and read silently.
    own = app.store("Notes sync", {"service": "notes"}, "app-secret", prefix=jail)
    mine = app.look({}, prefix=jail)
    assert mine["unlocked"] == [own] and mine["secrets"] == {own: "app-secret"}
    assert confirms(session) == []

    # From outside the sandbox the app's item is locked for the host program.
    outside = host.look({"service": "notes"})
    assert outside["locked"] == [own] and outside["items"][own]["secret"] == "ERROR org.freedesktop.Secret.Error.IsLocked"

    # Another app sees neither.
    other = Client(session, scratch / "other.py").look({}, prefix=sandbox(session, scratch, "org.example.Other", "2000000002"))
    assert other["unlocked"] == [] and other["locked"] == []


# Every test here calls keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
