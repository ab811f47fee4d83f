#!/usr/bin/env python3
"""Writes the golden files in this folder with the built `keywell` and `keywelld`, on a private
session bus in a throwaway HOME: a keychain file, a backup of it, and an export of it
(README.md here says what they hold). Run from the repository root, once, with the build whose
formats the files are to guard:

    KEYWELL=.build/debug/keywell KEYWELLD=.build/debug/keywelld python3 Tests/Fixtures/golden/make_golden.py

Tests/KeywellCoreTests/GoldenFileTests.swift opens them with every later build. Regenerating
them defeats their purpose: add new golden files beside them instead."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "Integration"))
from keywell_helpers import CLIAccount  # noqa: E402

PASSWORD = "golden test password"
PASSPHRASE = "golden export passphrase"
KEYCHAIN = "golden"


def main() -> None:
    account = CLIAccount(os.environ["KEYWELL"], os.environ["KEYWELLD"], prefix="kwgolden-")
    try:
        run = account.run
        keywell = os.path.realpath(account.keywell)
        run("create-keychain", "-p", PASSWORD, KEYCHAIN)
        run("default-keychain", "-s", KEYCHAIN)
        # A generic password with every optional attribute, trusting two programs.
        run("add-generic-password", "-a", "alice", "-s", "mail", "-l", "Mail", "-j", "golden comment",
            "-D", "golden kind", "-c", "GCrt", "-C", "GTyp", "-G", "golden generic", "-T", "/usr/bin/true",
            "-T", keywell, "-w", "mail secret", KEYCHAIN)
        # One trusting every program, with a secret that is not text.
        run("add-generic-password", "-a", "any", "-s", "open", "-A", "-X", "00ff10e2", KEYCHAIN)
        # An internet password with every optional attribute, trusting its creator (keywell).
        run("add-internet-password", "-a", "bob", "-s", "bank.example", "-r", "htps", "-P", "8443", "-p", "/login",
            "-d", "Bank Realm", "-t", "form", "-l", "Bank", "-j", "inet comment", "-w", "bank secret", KEYCHAIN)
        # An SSH key (class keys), trusting ssh, ssh-keygen and keywell.
        key = account.root / "id_golden"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "golden key", "-f", str(key)], check=True)
        run("ssh-add", "-k", KEYCHAIN, "-T", keywell, str(key))
        shutil.copy(str(key) + ".pub", HERE / "golden-ssh-key.pub")
        # A Secret Service item with attributes, made while enforcement is off: open to any program
        # (the CLI reads it for the dump and the export); enforcement is on again in the files.
        run("set-keychain-settings", "--enforce-access", "off", KEYCHAIN)
        store = subprocess.run(
            ["secret-tool", "store", "--label=Wi-Fi home", "xdg:schema", "org.example.wifi", "ssid", "home", "band", "5GHz"],
            input="wifi secret", text=True, capture_output=True, env=account.env, timeout=60)
        assert store.returncode == 0, store.stderr

        dump = json.loads(run("dump-keychain", "-d", "-a", "--json", KEYCHAIN).stdout)
        (HERE / "golden-dump.json").write_text(json.dumps(dump, indent=1, sort_keys=True) + "\n")

        for name in ("golden.kwexport", "golden.backup"):
            (HERE / name).unlink(missing_ok=True)
        run("export", "-k", KEYCHAIN, str(HERE / "golden.kwexport"), input=PASSPHRASE + "\n")
        run("set-keychain-settings", "--enforce-access", "on", KEYCHAIN)
        run("backup", "-k", KEYCHAIN, str(HERE / "golden.backup"))
        # Locked, the file on disk is the whole keychain (docs/cli.md, "Backing up").
        run("lock-keychain", KEYCHAIN)
        shutil.copy(account.keychains / f"{KEYCHAIN}.keychain-db", HERE / "golden.keychain-db")
        version = run("--version").stdout.strip()
        print(f"written by {version}")
    finally:
        account.close()


if __name__ == "__main__":
    main()
