"""The attack access control exists for (gnome-keyring's CVE-2018-19358, docs/access-control.md):
a program the user runs (a malicious build script, a compromised extension) reads every secret
of the unlocked login keychain through the native API, as many times as it likes. With access
lists enforced, every read of another program's items goes through the person: refused, it
gets no secret, and a storm of requests is one question, not a hundred dialogs to click away.

Needs KEYWELL and KEYWELLD (scripts/test.sh sets them), dbus-send and python3-jeepney.
"""

from __future__ import annotations

from access_control_helpers import PYTHON, acl  # noqa: F401 (fixture)
from security_figures import record

ATTEMPTS = 100


def test_an_untrusted_program_reading_every_item_gets_nothing_and_one_question(acl):
    owner, thief = acl.script("owner.py"), acl.script("thief.py")
    acl.run([PYTHON, owner, "add", "stolen", str(ATTEMPTS)])
    acl.answer(["deny"])
    # ATTEMPTS reads at once, then ATTEMPTS one after another, on one connection.
    lines = acl.run([PYTHON, thief, "read", "stolen", str(ATTEMPTS)]).stdout.splitlines()
    leaked = [line for line in lines if line.startswith("DATA")]
    refused = [line for line in lines if line == "ERROR org.keywell.Keychain1.Error.AuthFailed"]
    questions = acl.questions
    # And the whole keychain in one call, on a new connection: asked (and refused) once more.
    everything = acl.run([PYTHON, thief, "readall", "-", "0"]).stdout
    met = not leaked and len(refused) == 2 * ATTEMPTS and questions == 1 and "DATA" not in everything and acl.questions == 2
    record("an untrusted program reads every item of the unlocked login keychain (native API)",
           f"{2 * ATTEMPTS} reads: {len(refused)} refused, {len(leaked)} secrets leaked, {questions} question(s) asked",
           "0 secrets without the person's answer; one question per burst", met)
    assert leaked == []
    assert len(refused) == 2 * ATTEMPTS
    assert questions == 1
    assert everything.startswith("ERROR org.keywell.Keychain1.Error.AuthFailed"), everything
    # The owner still reads its own, silently.
    assert acl.run([PYTHON, owner, "readall", "-", "0"]).stdout == f"ITEMS {ATTEMPTS}\n"
    assert acl.questions == 2


def test_an_untrusted_program_cannot_export_the_keychain_under_its_own_passphrase(acl):
    """An export hands every secret to whoever knows the passphrase the caller picks: the same
    theft as a read. Before exports were screened, any program got every secret this way, with no
    question at all."""
    owner = acl.program("owner")
    for n in range(5):
        acl.add(owner, f"export-{n}", f"export-secret-{n}")
    thief = acl.program("thief")
    acl.answer(["deny"])
    exported = acl.scratch / "loot.kwexport"
    native = acl.run([thief, "export", "--all", str(exported)], check=False, input="loot-passphrase\n" * 2)
    native_leaked = exported.exists() and exported.stat().st_size > 0
    gnome = acl.scratch / "loot.keyring"
    acl.answer(["deny"])
    back = acl.run([thief, "export", "--format", "gnome-keyring", "-k", "login", str(gnome)], check=False,
                   input="loot-passphrase\n" * 2)
    gnome_leaked = gnome.exists()
    met = native.returncode != 0 and back.returncode != 0 and not native_leaked and not gnome_leaked and acl.questions == 2
    record("an untrusted program exports the keychain under a passphrase it chose (keywell export, both formats)",
           f"2 exports of 5 items: {int(native.returncode != 0) + int(back.returncode != 0)} refused, "
           f"{int(native_leaked) + int(gnome_leaked)} files written, {acl.questions} question(s)",
           "refused after the person's Deny, no file", met)
    assert native.returncode != 0, native.stdout + native.stderr
    assert "denied" in native.stderr, native.stderr
    assert not native_leaked
    assert back.returncode != 0, back.stdout + back.stderr
    assert not gnome_leaked
    assert acl.questions == 2
    assert any("export-" in text and "more item" in text for text in acl.descriptions())
    # Allowed, the same export works: one question for all five items.
    acl.answer(["allow"])
    done = acl.run([thief, "export", "--all", str(exported)], check=False, input="loot-passphrase\n" * 2)
    assert done.returncode == 0, done.stderr
    assert "5 items" in done.stdout + done.stderr
    assert acl.questions == 3
