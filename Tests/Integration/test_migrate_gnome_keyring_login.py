"""Migration at a real PAM login (docs/migration.md, "At login"): a throwaway user whose real
gnome-keyring-daemon held items stored by secret-tool, python keyring and
git-credential-libsecret (and a plaintext keyring) logs in through pamtester with pam_keywell;
keywelld imports every keyring the login password opens, after answering the login, and the
same lookups answer with nothing asked. Back in gnome-keyring, one item changes; the next
login imports that one and says so; the source files never change.

Needs: root, KEYWELLD and KEYWELL (scripts/test.sh sets them), pamtester, gnome-keyring.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from gnome_keyring_helpers import KEYRING_GET, KEYRING_SET, GnomeKeyring, git_credential_libsecret, tree_digest
from keywell_helpers import built, keywelld, module, real_daemon_kit, real_daemon_stack, wait_for  # noqa: F401 (fixtures)
from pam_helpers import keywelld_pids, login, start_session_bus

GIT_REQUEST = "protocol=https\nhost=git.example.com\nusername=carol\n\n"


@pytest.fixture
def kit(real_daemon_kit):
    return real_daemon_kit


@pytest.fixture
def stack(real_daemon_stack):
    return real_daemon_stack


def as_user(kit, user, args, input: str = "", env: dict | None = None):
    r = kit.as_user(user, args, env={**kit.user_env(user), **(env or {})}, input=input.encode(),
                    capture_output=True, timeout=60)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def prefix(user) -> list[str]:
    return ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups", "--"]


def lookup(kit, user, service: str, account: str) -> str:
    return as_user(kit, user, ["secret-tool", "lookup", "service", service, "account", account])[1]



def status(kit, user) -> str:
    code, out, err = as_user(kit, user, [built("KEYWELL", "keywell"), "migrate", "--status"])
    assert code == 0, err
    return out


def stop_keywelld(user) -> None:
    for pid in keywelld_pids(user):
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not keywelld_pids(user), "keywelld to exit")


def test_login_imports_what_the_login_password_opens_and_later_changes(kit, stack):
    user = kit.user()
    start_session_bus(kit, user)
    env = kit.user_env(user)
    helper = git_credential_libsecret()
    gk = GnomeKeyring(env, user.password, run_as=prefix(user))
    try:
        assert as_user(kit, user, ["secret-tool", "store", "--label", "My app", "service", "myapp", "account", "alice"],
                       input="app-secret")[0] == 0
        gk.python(KEYRING_SET, "pysvc", "bob", input="py-secret")
        assert as_user(kit, user, [helper, "store"], input=GIT_REQUEST.rstrip("\n") + "\npassword=git-secret\n\n")[0] == 0
        opened = gk.create_collection("open", "")
        gk.store(opened, "Open note", {"service": "note", "account": "erin"}, "note-secret")
        stored_at = time.time()
    finally:
        gk.stop()
    keyrings = Path(user.home) / ".local/share/keyrings"
    before = tree_digest(keyrings)

    assert login(stack, user).ok
    # The import runs after the login's answer: its result shows up soon after.
    wait_for(lambda: lookup(kit, user, "myapp", "alice") == "app-secret", "the login keyring's items")
    code, out, _ = as_user(kit, user, ["/usr/bin/python3", "-c", KEYRING_GET, "pysvc", "bob"])
    assert out.strip() == "VALUE=py-secret"
    code, out, err = as_user(kit, user, ["git", "-c", f"credential.helper={helper}", "credential", "fill"],
                             input=GIT_REQUEST, env={"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/false"})
    assert "password=git-secret" in out.splitlines(), out + err
    # The plaintext keyring became a keychain with the login password.
    wait_for(lambda: lookup(kit, user, "note", "erin") == "note-secret", "the plaintext keyring's item")
    # What it did, as `keywell migrate --status` tells it (the daemon PAM starts logs to no terminal).
    wait_for(lambda: "login.keyring (gnome-keyring) → keychain login: 3 items" in status(kit, user)
             and "open.keyring (gnome-keyring-plaintext) → keychain open: 1 items" in status(kit, user),
             "the state of the first import")
    assert "3 added, 0 updated, 0 unchanged" in status(kit, user)

    # Back to gnome-keyring for a while: one item changes there (item times have whole seconds).
    stop_keywelld(user)
    while time.time() < stored_at + 1.5:
        time.sleep(0.1)
    gk = GnomeKeyring(env, user.password, run_as=prefix(user))
    try:
        assert as_user(kit, user, ["secret-tool", "store", "--label", "My app", "service", "myapp", "account", "alice"],
                       input="app-secret-2")[0] == 0
    finally:
        gk.stop()
    changed = tree_digest(keyrings)

    assert login(stack, user).ok
    wait_for(lambda: lookup(kit, user, "myapp", "alice") == "app-secret-2", "the changed item")
    wait_for(lambda: "0 added, 1 updated, 2 unchanged" in status(kit, user), "the second login's import")
    assert "login.keyring (gnome-keyring) → keychain login: 3 items" in status(kit, user)
    # Nothing twice: one item per lookup.
    code, out, _ = as_user(kit, user, ["secret-tool", "search", "--all", "service", "myapp"])
    assert out.count("label = My app") == 1, out
    assert tree_digest(keyrings) == changed
    assert before != changed


def test_login_imports_a_kwallet_wallet_with_the_login_password(kit, stack):
    """pam_kwallet's way: the wallet's password is the login password (docs/migration.md,
    "Switching from gnome-keyring / KWallet / KeePassXC"); a wallet the real kwalletd5 wrote."""
    import shutil
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Fixtures/kwallet"))
    from make_fixture import write_wallet

    user = kit.user()
    start_session_bus(kit, user)
    wallets = Path(user.home) / ".local/share/kwalletd"
    wallets.mkdir(parents=True)
    write_wallet(wallets, user.password)
    # A GPG wallet (its header, then what stands for an OpenPGP message) is left to `keywell
    # migrate`: no gpg runs at login, so none makes the user's ~/.gnupg. It sorts first, so it
    # has been looked at once kdewallet is in the state.
    (wallets / "agpg.kwl").write_bytes(b"KWALLET\n\r\x00\r\n" + bytes([0, 1, 2, 0, 0x85, 0x01, 0x0c]) + bytes(12))
    for path in [wallets.parent.parent, wallets.parent, wallets, *wallets.iterdir()]:
        shutil.chown(path, user.uid, user.gid)
    before = tree_digest(wallets)

    assert login(stack, user).ok
    wait_for(lambda: as_user(kit, user, ["secret-tool", "lookup", "server", "Passwords", "user", "mail@example.org"])[1]
             == "pässwörd ✓", "the wallet's entries")
    wait_for(lambda: "kdewallet.kwl (kwallet) → keychain login: 4 items" in status(kit, user), "the wallet in the state")
    assert tree_digest(wallets) == before
    assert not (Path(user.home) / ".gnupg").exists(), "gpg ran at login"
    assert "agpg.kwl" not in status(kit, user)
