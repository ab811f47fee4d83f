"""KWallet's wallet files (docs/migration.md, "KWallet's wallet file"): a wallet the real
kwalletd5 wrote (Tests/Fixtures/kwallet/, made by its make_fixture.py) imported by
`keywell migrate`, every entry then read through `secret-tool`, `keywell` and KDE's
`kwallet-query` against keywelld; a second wallet into its own keychain; a re-run that imports
nothing; `--status`; the source files unchanged; a damaged wallet refused by name."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from keywell_helpers import built
from secret_service_helpers import KeywellBus

FIXTURES = Path(__file__).resolve().parents[1] / "Fixtures/kwallet"
PASSWORD = "kwallet fixture password"
KDE_ENV = {"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":kwallet-test"}


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


def test_keywell_migrate_imports_wallets_readable_through_every_face(bus):
    folder = place(bus, "kdewallet")
    place(bus, "work")
    before = digest(folder)
    bus.install_activation()
    # One password line per wallet: kdewallet's (which makes `login`), then work's.
    run = bus.run([keywell(), "migrate"], input=f"{PASSWORD}\n{PASSWORD}\n", timeout=180)
    out = run.stdout.decode()
    assert run.returncode == 0, f"{out}\n{run.stderr.decode()}\n{bus.daemon_log()[-3000:]}"
    assert "kdewallet.kwl → login: imported (4 added, 0 updated, 0 unchanged)" in out, out
    assert "work.kwl → work: imported (4 added" in out, out
    assert PASSWORD not in bus.daemon_log() and "s3cret" not in bus.daemon_log()

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
