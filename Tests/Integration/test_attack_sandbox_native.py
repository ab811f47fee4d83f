"""Attacks by a sandboxed app through the native API (docs/access-control.md, "Sandboxed
callers"): a Flatpak app (a python script over jeepney in a bwrap sandbox with a
`/.flatpak-info`, and the `keywell` CLI in the same sandbox over the direct socket) tries every
call that changes or reads what all the user's apps share — a keychain of its own made the
default and the only entry of the search list, so that everything stored afterwards lands where
it knows the password; the login keychain backed up into its own folder or over `~/.bashrc`; a
restore in place of `login`; deletes, locks and settings — and item calls that name keychains or
access lists. Each is refused before anything is done; an unconfined program then checks that
nothing changed, and makes the same calls itself."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from keywell_helpers import bodies_as_test_user, built
from secret_service_helpers import LOGIN_PASSWORD, session  # noqa: F401
from security_figures import record
from ss_access_helpers import PYTHON, sandbox

MISSING_ENTITLEMENT = "org.keywell.Keychain1.Error.MissingEntitlement"
# The calls open to a sandboxed app (docs/access-control.md, "Sandboxed callers"); every other
# method of the shipped interface must be among the attack's steps.
OPEN_TO_SANDBOXES = {"Add", "CopyMatching", "Update", "Delete", "WhoAmI"}
INTERFACE_XML = Path(__file__).resolve().parents[2] / "dbus" / "org.keywell.Keychain1.xml"

# `attack HOME` makes every shared-state call in turn and prints each one's outcome ("OK", or the
# error's name); `own` adds an item of its own and reads it back; `items` tries item calls that
# name keychains or access lists.
ATTACKER = r'''
import json, sys
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import DBusErrorResponse, unwrap_msg

connection = open_dbus_connection(bus="SESSION", enable_fds=True)
native = DBusAddress("/org/keywell/Keychain", bus_name="org.keywell.Keychain", interface="org.keywell.Keychain1")

def call(method, signature=None, *args):
    return unwrap_msg(connection.send_and_get_reply(new_method_call(native, method, signature, args), timeout=120))

def attempt(action):
    try:
        action()
        return "OK"
    except DBusErrorResponse as error:
        return error.name

def generic(**extra):
    query = {"class": ("s", "genp"), "svce": ("s", "spy-service"), "acct": ("s", "spy")}
    query.update(extra)
    return query

if sys.argv[1] == "attack":
    home = sys.argv[2]
    steps = {
        "CreateKeychain": lambda: call("CreateKeychain", "say", "spy", b"spy-password"),
        "SetDefaultKeychain": lambda: call("SetDefaultKeychain", "s", "spy"),
        "SetSearchList": lambda: call("SetSearchList", "as", ["spy"]),
        "BackupKeychain (own folder)": lambda: call("BackupKeychain", "ssb", "login", sys.argv[3] + "/loot.keychain-db", True),
        "BackupKeychain (~/.bashrc)": lambda: call("BackupKeychain", "ssb", "login", home + "/.bashrc", True),
        "RestoreKeychain": lambda: call("RestoreKeychain", "ssb", home + "/planted.keychain-db", "login", True),
        "DeleteKeychain": lambda: call("DeleteKeychain", "s", "other"),
        "Lock": lambda: call("Lock", "s", "login"),
        "LockAll": lambda: call("LockAll"),
        "Unlock": lambda: call("Unlock", "say", "other", b"guess"),
        "ChangePassword": lambda: call("ChangePassword", "sayay", "login", b"guess", b"spy-password"),
        "SetSettings": lambda: call("SetSettings", "sa{sv}", "login", {"enforceAccess": ("b", False)}),
        "GetInfo": lambda: call("GetInfo", "s", "login"),
        "ListKeychains": lambda: call("ListKeychains"),
        "GetSearchList": lambda: call("GetSearchList"),
        "GetDefaultKeychain": lambda: call("GetDefaultKeychain"),
        "GetLoginKeychain": lambda: call("GetLoginKeychain"),
        "MigrateKeyrings": lambda: call("MigrateKeyrings", "say", "", b""),
        "GetMigrationStatus": lambda: call("GetMigrationStatus"),
        "GetAccessStatus": lambda: call("GetAccessStatus"),
        "ExportGnomeKeyring": lambda: call("ExportGnomeKeyring", "ssayb", "login", sys.argv[3] + "/loot.keyring", b"x", True),
        # Files travel as descriptors the app opened: every keychain into one of its files, an
        # export file it planted read back (and merged into the user's keychains).
        "ExportKeychains": lambda: call("ExportKeychains", "ashay", ["login"], open(sys.argv[3] + "/loot.export", "wb"), b"x"),
        "InspectExport": lambda: call("InspectExport", "hay", open(sys.argv[3] + "/bait.export", "w+b"), b"x"),
        "ImportExport": lambda: call("ImportExport", "hayss", open(sys.argv[3] + "/bait.export", "w+b"), b"x", "", "replace"),
        # Its own X server as the place every later password prompt and question goes to.
        "SetSessionDisplay": lambda: call("SetSessionDisplay", "a{ss}", {"DISPLAY": ":66"}),
        "SyncEnable": lambda: call("SyncEnable", "ssayb", "login", sys.argv[3], b"spy-password", False),
        "SyncEnable (join)": lambda: call("SyncEnable", "ssayb", "login", sys.argv[3], b"spy-password", True),
        "SyncStatus": lambda: call("SyncStatus", "s", "login"),
        "SyncConflicts": lambda: call("SyncConflicts", "s", "login"),
        "SyncConflictSecret": lambda: call("SyncConflictSecret", "sx", "login", 1),
        "SyncDisable": lambda: call("SyncDisable", "s", "login"),
        "SyncRekey": lambda: call("SyncRekey", "say", "login", b"spy-password"),
    }
    print(json.dumps({name: attempt(step) for name, step in steps.items()}))
elif sys.argv[1] == "items":
    print(json.dumps({
        "Add u_Keychain": attempt(lambda: call("Add", "a{sv}", generic(u_Keychain=("s", "other"), v_Data=("ay", b"x")))),
        "Add u_Keychain path": attempt(lambda: call("Add", "a{sv}", generic(u_Keychain=("s", sys.argv[2]), v_Data=("ay", b"x")))),
        "Add acls any": attempt(lambda: call("Add", "a{sv}", generic(acls=("s", "any"), v_Data=("ay", b"x")))),
        "CopyMatching m_SearchList": attempt(lambda: call("CopyMatching", "a{sv}",
                                                          {"class": ("s", "genp"), "m_SearchList": ("as", ["other"])})),
        "Update acls": attempt(lambda: call("Update", "a{sv}a{sv}", generic(), {"acls": ("s", "any")})),
    }))
elif sys.argv[1] == "own":
    call("Add", "a{sv}", generic(v_Data=("ay", b"app-secret")))
    found = call("CopyMatching", "a{sv}", generic(r_Data=("b", True)))[0]
    print(json.dumps({"secret": bytes(found[0]["v_Data"][1]).decode(), "whoami": call("WhoAmI")[0]}))
'''
# The names of the attack's steps, as the script above spells them.
ATTACK_STEPS = re.findall(r'^        "([^"]+)": lambda', ATTACKER.split('elif sys.argv[1] == "items"')[0], re.M)


@pytest.fixture
def scratch(session):
    folder = session.root / "scratch"
    folder.mkdir(mode=0o700)
    (folder / "spy.py").write_text(ATTACKER)
    session.owner.give(folder)
    return folder


def run_attacker(session, scratch, *args: str, instance: str):
    command = [*sandbox(session, scratch, "org.example.Spy", instance), PYTHON, str(scratch / "spy.py"), *args]
    result = session.run(command, timeout=600, cwd=scratch)
    assert result.returncode == 0, f"{result.stderr.decode()}\ndaemon log:\n{session.daemon_log()[-3000:]}"
    return json.loads(result.stdout)


def shared_state(session) -> dict:
    """What an unconfined program sees of what all apps share, and the files an attack aims at."""
    import dbus
    native = session.native()
    info = {name: {str(key): str(value) for key, value in native.GetInfo(name).items()} for name in ("login", "other")}
    keychains = session.home / ".local/share/keywell/keychains"
    return {
        "default": str(native.GetDefaultKeychain()),
        "search list": [str(name) for name in native.GetSearchList()],
        "keychains": sorted(str(name) for name in native.ListKeychains()),
        "info": info,
        "files": sorted(path.name for path in keychains.iterdir()),
        "bashrc": (session.home / ".bashrc").read_bytes(),
        "login file": (keychains / "login.keychain-db").stat().st_ino,
        "sync": {str(key): str(value) for key, value in native.SyncStatus("login").items()},
    }


def prepare(session):
    import dbus
    session.create_login()
    native = session.native()
    native.CreateKeychain("other", dbus.ByteArray(b"other-password"))
    (session.home / ".bashrc").write_text("# the user's own shell set-up\n")
    # A keychain file the app would put in place of `login`, known password and all.
    native.BackupKeychain("other", str(session.home / "planted.keychain-db"), True)


def test_a_sandboxed_app_cannot_take_over_the_keychains_through_the_native_api(session, scratch):
    prepare(session)
    before = shared_state(session)
    outcomes = run_attacker(session, scratch, "attack", str(session.home), str(session.runtime), instance="2000000021")
    after = shared_state(session)
    refused = [name for name, outcome in outcomes.items() if outcome == MISSING_ENTITLEMENT]
    # The app creates loot.export itself (to hand its descriptor over): nothing may be written to
    # it; nor may sync put a header or a record into the app's folder.
    loot = [path.name for path in session.runtime.iterdir()
            if (path.name.startswith("loot") and path.stat().st_size > 0) or path.name.startswith("keywell-sync")]
    record("native API: a Flatpak app (bwrap, /.flatpak-info) creates a keychain and makes it the default and the "
           "search list, backs `login` up into its folder and over ~/.bashrc, restores over `login`, deletes, "
           "locks, unlocks, changes passwords and settings, reads lists, settings and Always Allow's grants, migrates and exports, "
           "and enables, joins, reads, disables and rekeys sync into its folder",
           f"{len(refused)} of {len(outcomes)} calls refused (MissingEntitlement); shared state "
           f"{'unchanged' if after == before else 'changed'}; {len(loot)} files written for the app",
           f"all {len(outcomes)} refused, nothing changed or written", len(refused) == len(outcomes) and after == before and not loot)
    assert outcomes == {name: MISSING_ENTITLEMENT for name in outcomes}, outcomes
    assert after == before
    assert loot == []
    assert "a sandboxed application cannot set the default keychain" in session.daemon_log()
    assert "a sandboxed application cannot set the display keywelld's dialogs go to" in session.daemon_log()
    assert "learned the session's display" not in session.daemon_log()


def test_the_attack_makes_every_shared_call_of_the_interface():
    """A method added to the native API that reaches shared state is attacked here too."""
    interface = next(node for node in ElementTree.parse(INTERFACE_XML).getroot().iter("interface")
                     if node.get("name") == "org.keywell.Keychain1")
    shared = {method.get("name") for method in interface.iter("method")} - OPEN_TO_SANDBOXES
    attacked = {name.split(" (")[0] for name in ATTACK_STEPS}
    assert shared - attacked == set(), f"shared calls the attack does not make: {sorted(shared - attacked)}"


def test_a_sandboxed_app_cannot_name_keychains_or_access_lists_in_item_calls(session, scratch):
    prepare(session)
    outcomes = run_attacker(session, scratch, "items", str(session.home / "planted.keychain-db"), instance="2000000022")
    assert outcomes == {name: MISSING_ENTITLEMENT for name in outcomes}, outcomes
    native = session.native()
    import dbus
    for keychain in ("login", "other"):
        try:
            native.CopyMatching({"class": "genp", "svce": "spy-service", "u_Keychain": keychain, "m_Limit": "m_LimitAll"})
            raise AssertionError(f"the refused calls left an item in {keychain}")
        except dbus.DBusException as error:
            assert error.get_dbus_name() == "org.keywell.Keychain1.Error.ItemNotFound"


def test_a_sandboxed_app_keeps_its_own_items(session, scratch):
    """The positive control: item calls on its own items work, and its item trusts it alone."""
    import dbus
    prepare(session)
    # Even in a keychain that does not enforce access lists, the app's item is its own.
    session.native().SetSettings("login", {"enforceAccess": dbus.Boolean(False)})
    answer = run_attacker(session, scratch, "own", instance="2000000023")
    assert answer == {"secret": "app-secret", "whoami": "flatpak:org.example.Spy"}
    found = session.native().CopyMatching({"class": "genp", "svce": "spy-service", "r_Access": True,
                                           "r_Attributes": True})
    assert [str(entry) for entry in found[0]["acls"]] == ["flatpak:org.example.Spy"]


def test_an_unconfined_program_keeps_every_call(session, scratch):
    import dbus
    prepare(session)
    native = session.native()
    native.CreateKeychain("mine", dbus.ByteArray(b"mine-password"))
    native.SetDefaultKeychain("mine")
    native.SetSearchList(["mine", "login"])
    native.BackupKeychain("login", str(session.root / "backup.keychain-db"), False)
    native.SetSettings("other", {"lockAfterSeconds": dbus.UInt32(60)})
    native.LockAll()
    assert str(native.GetDefaultKeychain()) == "mine"
    assert [str(name) for name in native.GetSearchList()] == ["mine", "login"]
    assert (session.root / "backup.keychain-db").stat().st_size > 0


def test_the_cli_in_a_sandbox_is_refused_over_the_direct_socket(session, scratch):
    """The same rule on the direct socket: `keywell` run inside the app's sandbox."""
    prepare(session)
    keywell = built("KEYWELL", "keywell")
    (scratch / "keywell").write_bytes(open(keywell, "rb").read())
    (scratch / "keywell").chmod(0o755)
    prefix = sandbox(session, scratch, "org.example.Spy", "2000000024")
    before = shared_state(session)
    outcomes = {}
    for argv in (["create-keychain", "-p", "spy-password", "spy"], ["default-keychain", "-s", "login"],
                 ["list-keychains", "-s", "login"], ["lock-keychain", "-a"],
                 ["set-keychain-settings", "--enforce-access", "off", "login"]):
        result = session.run([*prefix, str(scratch / "keywell"), *argv], timeout=120, cwd=scratch)
        outcomes[argv[0]] = (result.returncode, result.stderr.decode(errors="replace"))
    assert all(code != 0 for code, _ in outcomes.values()), outcomes
    assert all("sandboxed application cannot" in text or "entitlement" in text.lower() for _, text in outcomes.values()), outcomes
    assert shared_state(session) == before
    # The calls came over the direct socket, not the bus.
    assert "on the direct socket" in session.daemon_log()


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
