"""KWallet's wallet files (docs/migration.md, "KWallet's wallet file"): a wallet the real
kwalletd5 wrote (Tests/Fixtures/kwallet/, made by its make_fixture.py) imported by
`keywell migrate`, every entry then read through `secret-tool`, `keywell` and KDE's
`kwallet-query` against keywelld; a second wallet into its own keychain; a re-run that imports
nothing; `--status`; the source files unchanged; a damaged wallet refused by name.

GPG wallets: a key without a passphrase made in a throwaway GNUPGHOME (copied to the session's
~/.gnupg, where keywelld's gpg looks), and a GPG wallet the real kwalletd5 made and wrote
(make_fixture.write_gpg_wallet answers its KNewWalletDialog under Xvfb with xdotool, choosing GPG
and that key). A wallet gpg cannot open (that wallet's plaintext sealed here to another key) is
refused by name, with the exit code of a wrong password, and the other wallets are still
imported."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from keywell_helpers import bodies_as_test_user, built, throwaway_user
from secret_service_helpers import KeywellBus

FIXTURES = Path(__file__).resolve().parents[1] / "Fixtures/kwallet"
PASSWORD = "kwallet fixture password"
KDE_ENV = {"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":kwallet-test"}


sys.path.insert(0, str(FIXTURES))
from make_fixture import write_gpg_wallet  # noqa: E402


def keywell() -> str:
    return built("KEYWELL", "keywell")


@pytest.fixture
def bus():
    session = KeywellBus(activate=False)
    for name in ("org.kde.kwalletd5", "org.kde.kwalletd6"):
        (session.services / f"{name}.service").write_text(f"[D-BUS Service]\nName={name}\nExec={session.wrapper}\n")
    try:
        yield session
    finally:
        session.close()


def place(bus: KeywellBus, name: str, kwl: bytes | None = None) -> Path:
    folder = bus.home / ".local/share/kwalletd"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.kwl").write_bytes(kwl if kwl is not None else (FIXTURES / "kdewallet.kwl").read_bytes())
    shutil.copy(FIXTURES / "kdewallet.salt", folder / f"{name}.salt")
    return folder


def digest(folder: Path) -> str:
    return hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in sorted(folder.iterdir()))).hexdigest()


def migrate_both(bus) -> None:
    """`keywell migrate` of kdewallet (into `login`) and work, a password line each: all their
    entries imported, and no secret in keywelld's log."""
    run = bus.run([keywell(), "migrate"], input=f"{PASSWORD}\n{PASSWORD}\n", timeout=180)
    out = run.stdout.decode()
    assert run.returncode == 0, f"{out}\n{run.stderr.decode()}\n{bus.daemon_log()[-3000:]}"
    assert "kdewallet.kwl → login: imported (4 added, 0 updated, 0 unchanged)" in out, out
    assert "work.kwl → work: imported (4 added" in out, out
    log = bus.daemon_log()
    assert PASSWORD not in log and "s3cret" not in log and "pässwörd" not in log


def test_keywell_migrate_imports_wallets_readable_through_every_face(bus):
    folder = place(bus, "kdewallet")
    place(bus, "work")
    before = digest(folder)
    bus.install_activation()
    # One password line per wallet: kdewallet's (which makes `login`), then work's.
    migrate_both(bus)

    assert bus.secret_tool("lookup", "server", "Passwords", "user", "mail@example.org").stdout.decode() == "pässwörd ✓"
    assert bus.secret_tool("lookup", "server", "Form Data", "user", "https://example.org/login").stdout.decode() == \
        '{"login":"alice","password":"s3cret","ü":""}'
    assert bus.secret_tool("lookup", "server", "Network Management", "user", "wifi-key").stdout.decode() == "AAH+/yBibG9i"
    found = bus.run([keywell(), "find-generic-password", "-s", "org.qt.keychain", "-a", "mail@example.org", "-w"])
    # `-w` prints a secret that is not ASCII in hex, as macOS's `security` does.
    assert found.returncode == 0, found.stderr.decode()
    assert bytes.fromhex(found.stdout.decode().strip()).decode() == "pässwörd ✓"
    query = bus.run(["kwallet-query", "-r", "mail@example.org", "-f", "Passwords", "kdewallet"], env=KDE_ENV, timeout=60)
    assert query.stdout.decode().strip() == "pässwörd ✓", query.stderr.decode()

    again = bus.run([keywell(), "migrate"], input="")
    assert again.returncode == 0, again.stderr.decode()
    assert again.stdout.decode().count(": unchanged (0 added, 0 updated") == 2, again.stdout.decode()
    status = bus.run([keywell(), "migrate", "--status"], check=True).stdout.decode()
    assert "kdewallet.kwl (kwallet) → keychain login: 4 items" in status, status
    assert "work.kwl (kwallet) → keychain work: 4 items" in status, status
    assert digest(folder) == before, "the wallet files must never change"


def test_a_wrong_password_and_a_damaged_wallet_are_said(bus):
    data = (FIXTURES / "kdewallet.kwl").read_bytes()
    place(bus, "kdewallet")
    place(bus, "broken", data[:40])
    bus.install_activation()
    run = bus.run([keywell(), "migrate", "--keyring", "kdewallet"], input="not it\n")
    assert run.returncode != 0
    assert "wrong password for keyring kdewallet" in run.stdout.decode() + run.stderr.decode()
    assert bus.secret_tool("lookup", "server", "Passwords", "user", "mail@example.org").stdout == b""
    # Damaged where it is readable without the password: said before a password is asked.
    broken = bus.run([keywell(), "migrate", "--keyring", "broken"], input="")
    said = broken.stdout.decode() + broken.stderr.decode()
    assert broken.returncode != 0 and "keyring broken is damaged" in said, said


def gpg(home: Path, *args: str, input: bytes | None = None) -> bytes:
    run = subprocess.run(["gpg", "--batch", *args], input=input, capture_output=True, timeout=60,
                         env={"GNUPGHOME": str(home), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr.decode()
    return run.stdout


def new_gnupghome(user: str) -> Path:
    home = Path(tempfile.mkdtemp(prefix="kwgpg-"))
    home.chmod(0o700)
    gpg(home, "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key", user, "default", "default", "never")
    return home


def stop_agent(home: Path) -> None:
    subprocess.run(["gpgconf", "--kill", "gpg-agent"], env={"GNUPGHOME": str(home), "PATH": "/usr/bin:/bin"},
                   capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def gpg_wallets():
    """(GNUPGHOME with the key, a GPG wallet kwalletd5 wrote, a GPG wallet for a key not there)."""
    for tool in ("gpg", "kwalletd5", "Xvfb", "xdotool"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing: run scripts/setup.sh")
    ours, theirs = new_gnupghome("Wallet Owner <owner@example.org>"), new_gnupghome("Someone Else <else@example.org>")
    out = Path(tempfile.mkdtemp(prefix="kwgpg-out-"))
    try:
        write_gpg_wallet(out, "kdewallet", ours)
        written = (out / "kdewallet.kwl").read_bytes()
        # The same wallet sealed to the other key: only its recipient differs.
        plain = gpg(ours, "--decrypt", input=written[16:])
        foreign = written[:16] + gpg(theirs, "--trust-model", "always", "-r", "else@example.org", "--encrypt", input=plain)
        # The bodies run as the test user, who copies the key into its session's ~/.gnupg.
        throwaway_user().give(ours)
        yield ours, written, foreign
    finally:
        for home in (ours, theirs):
            stop_agent(home)
            shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


def give_key(bus: KeywellBus, gnupghome: Path) -> Path:
    """The key into the session's ~/.gnupg (sockets left behind), for keywelld's gpg."""
    home = bus.home / ".gnupg"
    shutil.copytree(gnupghome, home, ignore=shutil.ignore_patterns("S.*", "*.lock"))
    home.chmod(0o700)
    return home


def test_a_gpg_wallet_is_imported_through_gpg(bus, gpg_wallets):
    gnupghome, written, _ = gpg_wallets
    assert written[:12] == b"KWALLET\n\r\x00\r\n" and written[14:16] == bytes([2, 0]), written[:16]
    session_gpg = give_key(bus, gnupghome)
    try:
        folder = place(bus, "kdewallet", written)
        (folder / "kdewallet.salt").unlink()  # a GPG wallet has none
        place(bus, "work")
        before = digest(folder)
        bus.install_activation()
        # The first line makes `login` (the GPG wallet brings no password), the second opens work.
        migrate_both(bus)

        assert bus.secret_tool("lookup", "server", "Passwords", "user", "mail@example.org").stdout.decode() == "pässwörd ✓"
        login = bus.run([keywell(), "find-generic-password", "-s", "org.qt.keychain", "-a", "https://example.org/login",
                         "-w"])
        assert login.returncode == 0, login.stderr.decode()
        # Not ASCII, so printed in hex (as macOS's `security` does).
        assert bytes.fromhex(login.stdout.decode().strip()).decode() == '{"login":"alice","password":"s3cret","ü":""}'
        blob = bus.run([keywell(), "find-generic-password", "-s", "org.qt.keychain", "-a", "wifi-key", "-w"])
        assert blob.stdout.decode().strip() == "AAH+/yBibG9i", blob.stderr.decode()
        empty = bus.run([keywell(), "find-generic-password", "-s", "org.qt.keychain", "-a", "empty", "-w"])
        assert empty.returncode == 0 and empty.stdout.decode().strip() == "", empty.stderr.decode()

        again = bus.run([keywell(), "migrate"], input="")
        assert again.returncode == 0, again.stderr.decode()
        assert again.stdout.decode().count(": unchanged (0 added, 0 updated") == 2, again.stdout.decode()
        status = bus.run([keywell(), "migrate", "--status"], check=True).stdout.decode()
        assert "kdewallet.kwl (kwallet) → keychain login: 4 items" in status, status
        assert digest(folder) == before, "the wallet files must never change"
    finally:
        stop_agent(session_gpg)


def test_a_gpg_wallet_gpg_cannot_open_is_said_and_the_others_imported(bus, gpg_wallets):
    gnupghome, written, foreign = gpg_wallets
    session_gpg = give_key(bus, gnupghome)
    try:
        folder = place(bus, "kdewallet", written)
        place(bus, "elsewhere", foreign)
        place(bus, "work")
        bus.install_activation()
        wrong = bus.run([keywell(), "migrate", "--keyring", "work"], input="not it\n")
        assert wrong.returncode != 0
        run = bus.run([keywell(), "migrate"], input=f"{PASSWORD}\n{PASSWORD}\n", timeout=180)
        out, err = run.stdout.decode(), run.stderr.decode()
        assert run.returncode == wrong.returncode, f"{run.returncode} {out}\n{err}"
        said = out + err
        assert "keyring elsewhere cannot be decrypted: gpg exit 2: gpg: decryption failed: No secret key" in said, said
        assert "kdewallet.kwl → login: imported (4 added" in out, out
        assert "work.kwl → work: imported (4 added" in out, out
        # Nothing of it went in: no keychain, nothing recorded for it.
        keychains = bus.run([keywell(), "list-keychains"]).stdout.decode()
        assert "elsewhere" not in keychains, keychains
        status = bus.run([keywell(), "migrate", "--status"], check=True).stdout.decode()
        assert "elsewhere.kwl" not in status and "kdewallet.kwl (kwallet) → keychain login: 4 items" in status, status
    finally:
        stop_agent(session_gpg)


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
