"""Attacks on access control through the Secret Service (docs/secret-service.md, "Access
control"), each as the attacker would run it, with real programs: gnome-keyring's CVE-2018-19358
(any program of the user reads every secret with one `secret-tool search --all --unlock`), a
sandboxed app reaching for another app's items by path, and a sandboxed app overwriting an item
it cannot see by storing one with the same attributes."""

from __future__ import annotations

from keywell_helpers import bodies_as_test_user
from secret_service_helpers import session  # noqa: F401
from security_figures import record
from ss_access_helpers import Client, confirms, sandbox, scratch  # noqa: F401


def test_secret_tool_search_all_unlock_by_an_untrusted_program_gets_no_secret(session, scratch):
    session.create_login()
    maker = Client(session, scratch / "password_manager.py")
    count = 20
    for n in range(count):
        maker.store(f"Account {n}", {"service": "bank", "n": str(n)}, f"bank-secret-{n}")

    # The attacker's command, answered Deny. Without --unlock secret-tool reads each secret with
    # GetSecret, which asks: one question for all twenty (the burst shares the Deny).
    session.pinentry_answers("deny")
    quiet = session.secret_tool("search", "--all", "service", "bank")
    leaked_quietly = sum(f"bank-secret-{n}".encode() in quiet.stdout + quiet.stderr for n in range(count))
    asked_quietly = len(confirms(session))
    # With --unlock: one question (Unlock's prompt) for all twenty, answered Deny.
    session.pinentry_answers("deny")
    loud = session.secret_tool("search", "--all", "--unlock", "service", "bank")
    leaked = sum(f"bank-secret-{n}".encode() in loud.stdout + loud.stderr for n in range(count))
    questions = len(confirms(session)) - asked_quietly
    record("Secret Service: `secret-tool search --all [--unlock]` by an untrusted program (gnome-keyring's CVE-2018-19358), "
           "person answers Deny",
           f"{count} items: {leaked_quietly + leaked} secrets returned, {asked_quietly} and {questions} question(s)",
           "0 secrets, 1 question a command", leaked_quietly + leaked == 0 and asked_quietly == 1 and questions == 1)
    assert leaked_quietly == 0, quiet.stdout
    assert leaked == 0, loud.stdout
    assert asked_quietly == 1 and questions == 1
    # The maker still reads its own.
    assert maker.look({"service": "bank", "n": "0"})["secrets"]


def test_a_sandboxed_app_cannot_reach_another_apps_item_by_its_path(session, scratch):
    session.create_login()
    host = Client(session, scratch / "host.py")
    host.store("Host's", {"service": "host"}, "host-secret")
    target = host.look({"service": "host"})["unlocked"][0]
    app = Client(session, scratch / "app.py")
    probe = app.probe(target, prefix=sandbox(session, scratch, "org.example.Spy", "2000000003"))
    missing = "org.freedesktop.DBus.Error.UnknownMethod"  # what a path that names nothing answers
    ways = ["Locked", "Attributes", "Label", "GetSecret", "SetSecret", "Delete"]
    reached = [way for way in ways if probe[way] != missing]
    record("Secret Service: a Flatpak app (bwrap, /.flatpak-info) at another app's item by its path "
           "(Locked, Attributes, Set Label, GetSecret, SetSecret, Delete) and in Collection.Items",
           f"{len(ways) - len(reached)} of {len(ways)} refused as a missing object; {len(probe['Items'])} items listed",
           "all refused, none listed", not reached and not probe["Items"])
    assert not reached, probe
    assert probe["Items"] == []
    assert probe["DeleteCollection"] == "org.freedesktop.DBus.Error.AccessDenied"
    # The item is untouched.
    assert host.look({"service": "host"})["secrets"] == {target: "host-secret"}


def test_a_sandboxed_app_cannot_overwrite_an_item_it_cannot_see(session, scratch):
    session.create_login()
    host = Client(session, scratch / "host.py")
    attributes = {"service": "git", "host": "example.org"}
    host.store("Git token", attributes, "real-token")
    target = host.look(attributes)["unlocked"][0]
    # The same attributes, replace=true: a plain CreateItem would have replaced the host's item.
    app = Client(session, scratch / "app.py")
    planted = app.store("Git token", attributes, "attacker-token", prefix=sandbox(session, scratch, "org.example.Spy", "2000000004"))
    after = host.look(attributes)
    kept = after["secrets"].get(target)
    record("Secret Service: a Flatpak app stores an item with the exact attributes of one it cannot see (replace=true)",
           f"host's item {'kept' if kept == 'real-token' else 'overwritten'}; the app got an item of its own: {planted != target}",
           "kept, separate item", kept == "real-token" and planted != target)
    assert kept == "real-token"
    assert planted != target
    # The planted item trusts only the app: the host sees it locked for it.
    assert planted in after["locked"]


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
