#!/usr/bin/env python3
"""Makes Tests/Fixtures/kwallet/kdewallet.kwl and kdewallet.salt with Debian's real kwalletd5
(libkf5wallet-bin), headless, on a private bus — the path a user's password takes: the salt file
exists, and the key is PBKDF2-SHA512(password, salt, 50000 rounds, 56 bytes), which is what
pam_kwallet hands to `pamOpen` and what kwalletd derives from a typed password
(docs/migration.md, "KWallet's wallet file"). Run from the repository root:

    python3 Tests/Fixtures/kwallet/make_fixture.py

The wallet's password is FIXTURE_PASSWORD; the unit and integration tests check the entries
written below. `write_wallet` makes the same wallet with another password (the login test)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import dbus

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Integration"))
from keywell_helpers import session_bus_config  # noqa: E402

FIXTURE_PASSWORD = "kwallet fixture password"
IFACE = "org.kde.KWallet"
APP = "keywell-fixture"


def qstring(text: str) -> bytes:
    data = text.encode("utf-16-be")
    return struct.pack(">I", len(data)) + data


def qmap(pairs: dict[str, str]) -> bytes:
    keys = sorted(pairs, key=lambda k: k.encode("utf-16-be"), reverse=True)
    return struct.pack(">I", len(pairs)) + b"".join(qstring(k) + qstring(pairs[k]) for k in keys)


def qbytes(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def ay(value: bytes):
    return dbus.Array([dbus.Byte(b) for b in value], signature="y")


def wait_for(condition, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@contextlib.contextmanager
def kwalletd5(home: Path, extra_env: dict[str, str] | None = None):
    """Debian's real kwalletd5 on a private bus with HOME=`home`; yields `call(member, signature,
    *args)` on its org.kde.KWallet interface."""
    root = Path(tempfile.mkdtemp(prefix="kwl-daemon-"))
    socket, config, services = root / "bus", root / "session.conf", root / "services"
    services.mkdir()
    config.write_text(session_bus_config(socket, services))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_RUNTIME_DIR": str(root),
           "XDG_DATA_HOME": str(home / ".local/share"), "XDG_CONFIG_HOME": str(home / ".config"),
           "DBUS_SESSION_BUS_ADDRESS": f"unix:path={socket}", "QT_QPA_PLATFORM": "offscreen",
           "DISPLAY": ":kwallet-fixture", **(extra_env or {})}
    bus = subprocess.Popen(["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    bus.stdout.readline()
    daemon = subprocess.Popen(["kwalletd5"], env=env, stderr=subprocess.DEVNULL, start_new_session=True)
    connection = dbus.bus.BusConnection(env["DBUS_SESSION_BUS_ADDRESS"])

    def call(member, signature, *args):
        return connection.call_blocking("org.kde.kwalletd5", "/modules/kwalletd5", IFACE, member, signature, args,
                                        timeout=60)
    try:
        assert wait_for(lambda: connection.name_has_owner("org.kde.kwalletd5"))
        yield call
    finally:
        connection.close()
        for process in (daemon, bus):
            process.terminate()
            process.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)


def write_entries(call, wallet: str) -> None:
    """ENTRIES into the open wallet `wallet`, then closed, which makes kwalletd write its file."""
    h = int(call("open", "sxs", wallet, dbus.Int64(0), APP))
    assert h >= 0
    for folder in ("Passwords", "Form Data", "Network Management"):
        call("createFolder", "iss", h, folder, APP)
    assert call("writePassword", "issss", h, "Passwords", "mail@example.org", "pässwörd ✓", APP) == 0
    assert call("writePassword", "issss", h, "Passwords", "empty", "", APP) == 0
    assert call("writeEntry", "issays", h, "Network Management", "wifi-key", ay(b"\x00\x01\xfe\xff blob"), APP) == 0
    assert call("writeMap", "issays", h, "Form Data", "https://example.org/login",
                ay(qmap({"login": "alice", "password": "s3cret", "ü": ""})), APP) == 0
    assert int(call("close", "sb", wallet, True)) >= 0
    time.sleep(0.5)


def write_wallet(out: Path, password: str = FIXTURE_PASSWORD) -> None:
    """kdewallet.kwl and kdewallet.salt with ENTRIES, written by kwalletd5 into `out`."""
    home = Path(tempfile.mkdtemp(prefix="kwl-fixture-"))
    wallets = home / ".local/share/kwalletd"
    wallets.mkdir(parents=True)
    salt = os.urandom(56)
    (wallets / "kdewallet.salt").write_bytes(salt)
    key = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, 50000, 56)
    try:
        with kwalletd5(home) as call:
            call("pamOpen", "sayi", "kdewallet", dbus.ByteArray(key), 0)
            assert wait_for(lambda: bool(call("isOpen", "s", "kdewallet")))
            write_entries(call, "kdewallet")
        for name in ("kdewallet.kwl", "kdewallet.salt"):
            shutil.copyfile(wallets / name, out / name)
        print("wrote", out / "kdewallet.kwl", (out / "kdewallet.kwl").stat().st_size, "bytes")
    finally:
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def xvfb():
    """A private X server (Xvfb picks a free display); yields its DISPLAY."""
    server = subprocess.Popen(["Xvfb", "-displayfd", "1", "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield ":" + server.stdout.readline().decode().strip()
    finally:
        server.terminate()
        server.wait(timeout=10)


def write_gpg_wallet(out: Path, name: str, gnupghome: Path) -> None:
    """`name`.kwl with ENTRIES, a GPG wallet the real kwalletd5 made and wrote: it is asked to open
    a wallet that does not exist, shows its KNewWalletDialog on a private X server, and the dialog
    is answered with the keyboard as a user would (its intro page has "Use GPG encryption"
    chosen: Next; its key page lists `gnupghome`'s ultimately trusted key, chosen: Finish).
    kwalletd5 then seals the wallet to that key through gpgme (GpgPersistHandler::write)."""
    home = Path(tempfile.mkdtemp(prefix="kwl-gpg-fixture-"))
    wallets = home / ".local/share/kwalletd"
    wallets.mkdir(parents=True)
    try:
        with xvfb() as display:
            x = {"DISPLAY": display, "PATH": "/usr/bin:/bin"}
            with kwalletd5(home, {"GNUPGHOME": str(gnupghome), "QT_QPA_PLATFORM": "xcb", "DISPLAY": display}) as call:
                opened: dict = {}

                def open_wallet():
                    try:
                        opened["handle"] = int(call("open", "sxs", name, dbus.Int64(0), APP))
                    except Exception as error:  # noqa: BLE001 (reported below)
                        opened["error"] = error
                opener = threading.Thread(target=open_wallet, daemon=True)
                opener.start()
                window = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--class", "kwalletd5"],
                                        env=x, capture_output=True, timeout=30).stdout.split()[-1].decode()
                subprocess.run(["xdotool", "windowfocus", "--sync", window], env=x, check=True, timeout=30)
                # Next (intro page, GPG chosen), then Finish (key page, the key chosen); again
                # if a key press came before its page did.
                deadline = time.monotonic() + 30
                while opener.is_alive() and time.monotonic() < deadline:
                    subprocess.run(["xdotool", "key", "Return"], env=x, check=True, timeout=30)
                    opener.join(1.5)
                assert opened.get("handle", -1) >= 0, f"kwalletd5 did not make the GPG wallet: {opened}"
                write_entries(call, name)
        written = (wallets / f"{name}.kwl").read_bytes()
        assert written[12:16] in (bytes([0, 0, 2, 0]), bytes([0, 1, 2, 0])), "kwalletd5 did not write a GPG wallet"
        shutil.copyfile(wallets / f"{name}.kwl", out / f"{name}.kwl")
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    write_wallet(Path(__file__).resolve().parent)
