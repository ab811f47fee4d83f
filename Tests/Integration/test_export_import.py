"""`keywell export` / `keywell import` (docs/export-import.md): the real keywell and keywelld on
private session buses, items made by the CLI and by `secret-tool store`, each import into a
fresh account (its own HOME, XDG folders, bus and daemon).

Secrets and passphrases go through standard input, never argv (except `-w` of the items the
tests make, which is how `security` adds them). Needs KEYWELL and KEYWELLD (scripts/test.sh sets
both); without them the tests fail, they do not skip.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from keywell_helpers import CLIAccount, accounts_of, built, user_tmp  # noqa: F401 (user_tmp: a fixture)

PASSPHRASE = "export passphrase"


class Account(CLIAccount):
    """A fresh account driven through the `keywell` CLI and `secret-tool`."""

    def __init__(self, keywell: str, keywelld: str) -> None:
        super().__init__(keywell, keywelld, prefix="kwexport-", extra_env={"KEYWELL_TEST_FAST_KDF": "1"})

    def secret_tool(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["secret-tool", *args], capture_output=True, text=True, env=self.env,
                              input=input, timeout=60, **self.owner.spawn)

    def dump(self, *keychains: str) -> list[dict]:
        """`dump-keychain -d --json`, without the keychain files' paths (they must differ
        between accounts: each has its own HOME)."""
        items = json.loads(self.run("dump-keychain", "-d", "--json", *keychains).stdout)
        for item in items:
            assert "error" not in item, item
            item["keychain"] = Path(item["keychain"]).name
        return items


@pytest.fixture
def accounts():
    if shutil.which("secret-tool") is None:
        pytest.fail("secret-tool is needed: run scripts/setup.sh")
    binaries = built("KEYWELL"), built("KEYWELLD")
    yield from accounts_of(lambda: Account(*binaries))


def fill(account: Account) -> None:
    """Items in two keychains: native ones made by the CLI, Secret Service ones by secret-tool."""
    account.run("create-keychain", "-p", "login-pw", "login")
    account.run("create-keychain", "-p", "work-pw", "work")
    # The CLI exports and dumps what secret-tool made: not their creator. Access control has its
    # own tests (test_access_control*.py, test_attack_acl.py's export); here every item trusts any program.
    for keychain in ("login", "work"):
        account.run("set-keychain-settings", "--enforce-access", "off", keychain)
    account.run("add-generic-password", "-a", "alice", "-s", "myapp", "-l", "My App", "-j", "a comment",
                "-w", "alice-secret", "login")
    account.run("add-internet-password", "-a", "bob", "-s", "example.com", "-r", "htps", "-P", "8443",
                "-p", "/login", "-d", "realm", "-w", "bob-secret", "work")
    stored = account.secret_tool("store", "--label=Mail", "service", "mail", "user", "carol", input="carol-secret")
    assert stored.returncode == 0, stored.stderr
    stored = account.secret_tool("store", "--label=VPN", "--collection=/org/freedesktop/secrets/collection/work",
                                 "xdg:schema", "org.example.vpn", "gateway", "vpn.example.com", input="vpn-secret")
    assert stored.returncode == 0, stored.stderr


def export(account: Account, path: Path, *args: str) -> subprocess.CompletedProcess:
    return account.run("export", *args, str(path), input=PASSPHRASE + "\n")


def test_an_export_imported_into_an_empty_account_dumps_identically(accounts, user_tmp):
    source = accounts()
    fill(source)
    exported = user_tmp / "all.kwexport"
    result = export(source, exported, "--all")
    assert "exported 4 items" in result.stdout
    assert exported.stat().st_mode & 0o777 == 0o600
    content = exported.read_bytes()
    assert content.startswith(b"KWEXPORT")
    for plaintext in (b"alice-secret", b"carol-secret", b"vpn.example.com", b"alice"):
        assert plaintext not in content

    target = accounts()
    # The passphrase, then the passwords of the two keychains the import creates.
    result = target.run("import", str(exported), input=f"{PASSPHRASE}\nnew-login-pw\nnew-work-pw\n")
    assert "4 added, 0 replaced, 0 skipped" in result.stdout, result.stdout
    before, after = source.dump("login", "work"), target.dump("login", "work")
    assert len(before) == 4
    assert after == before
    # The Secret Service attributes are part of the dump, and libsecret finds the items.
    vpn = next(item for item in after if item["label"] == "VPN")
    assert vpn["secretService"]["attributes"] == {"xdg:schema": "org.example.vpn", "gateway": "vpn.example.com"}
    # A Secret Service item's access group names its id: the same id came across.
    assert vpn["accessGroup"].startswith("org.freedesktop.secrets/")
    assert target.secret_tool("lookup", "service", "mail", "user", "carol").stdout == "carol-secret"
    assert target.secret_tool("lookup", "gateway", "vpn.example.com").stdout == "vpn-secret"
    # The created keychains have the passwords typed for them.
    target.run("lock-keychain", "work")
    assert target.run("unlock-keychain", "-p", "work-pw", "work", check=False).returncode != 0
    target.run("unlock-keychain", "-p", "new-work-pw", "work")


def test_conflict_policies(accounts, user_tmp):
    source = accounts()
    fill(source)
    exported = user_tmp / "login.kwexport"
    export(source, exported, "-k", "login")
    target = accounts()
    target.run("create-keychain", "-p", "pw", "login")
    target.run("add-generic-password", "-a", "alice", "-s", "myapp", "-w", "theirs", "login")

    def alice() -> str:
        return target.run("find-generic-password", "-a", "alice", "-s", "myapp", "-w", "login").stdout.strip()

    def imported(*policy: str) -> str:
        return target.run("import", *policy, str(exported), input=PASSPHRASE + "\n").stdout

    # alice exists (made later than the export's), the Mail item does not.
    assert "1 added, 0 replaced, 1 skipped" in imported()
    assert alice() == "theirs"
    assert "0 added, 0 replaced, 2 skipped" in imported("--newer")
    assert alice() == "theirs"
    assert "0 added, 2 replaced, 0 skipped" in imported("--replace")
    assert alice() == "alice-secret"
    assert target.secret_tool("lookup", "service", "mail", "user", "carol").stdout == "carol-secret"
    # Replaced items keep one copy: the Secret Service item was matched by its identity.
    assert len(target.dump("login")) == 2
    both = target.run("import", "--skip", "--replace", str(exported), input=PASSPHRASE + "\n", check=False)
    assert both.returncode == 2


def test_bad_files_import_nothing(accounts, user_tmp):
    source = accounts()
    fill(source)
    exported = user_tmp / "all.kwexport"
    export(source, exported, "--all")
    target = accounts()
    target.run("create-keychain", "-p", "pw", "login")
    target.run("create-keychain", "-p", "pw", "work")
    content = exported.read_bytes()
    cut = user_tmp / "cut.kwexport"
    cut.write_bytes(content[:-1])
    flipped = user_tmp / "flipped.kwexport"
    flipped.write_bytes(content[:200] + bytes([content[200] ^ 0x10]) + content[201:])
    for path, passphrase, why in [(exported, "wrong", "passphrase"), (cut, PASSPHRASE, "truncated"),
                                  (flipped, PASSPHRASE, "altered")]:
        result = target.run("import", str(path), input=passphrase + "\n", check=False)
        assert result.returncode != 0
        assert why in result.stderr and "nothing was imported" in result.stderr, result.stderr
    assert target.run("dump-keychain", "login", "work").stdout == ""


def test_a_locked_keychain_is_refused_with_advice(accounts, user_tmp):
    source = accounts()
    fill(source)
    source.run("lock-keychain", "work")
    exported = user_tmp / "locked.kwexport"
    result = source.run("export", "-k", "work", str(exported), input=PASSPHRASE + "\n", check=False)
    assert result.returncode != 0
    assert "unlock-keychain work" in result.stderr, result.stderr
    assert not exported.exists()
    # An existing file is never written over.
    exported.write_text("keep me")
    source.run("unlock-keychain", "-p", "work-pw", "work")
    assert source.run("export", "-k", "work", str(exported), input=PASSPHRASE + "\n", check=False).returncode != 0
    assert exported.read_text() == "keep me"


def test_csv_round_trip_and_browser_files(accounts, user_tmp):
    source = accounts()
    fill(source)
    csv = user_tmp / "passwords.csv"
    refused = source.run("export", "--all", "--format", "csv", str(csv), check=False)
    assert refused.returncode != 0 and "--plaintext" in refused.stderr
    assert not csv.exists()
    result = source.run("export", "--all", "--format", "csv", "--plaintext", str(csv))
    assert "plaintext" in result.stderr
    assert csv.stat().st_mode & 0o777 == 0o600
    lines = csv.read_text().splitlines()
    assert lines[0] == "name,url,username,password,note"
    assert "My App,myapp,alice,alice-secret,a comment" in lines
    assert "example.com,https://example.com:8443/login,bob,bob-secret," in lines

    target = accounts()
    target.run("create-keychain", "-p", "pw", "login")
    target.run("import", "--format", "csv", "--plaintext", str(csv))
    assert target.run("find-generic-password", "-a", "alice", "-s", "myapp", "-w").stdout.strip() == "alice-secret"
    assert target.run("find-internet-password", "-a", "bob", "-s", "example.com", "-r", "htps", "-P", "8443",
                      "-w").stdout.strip() == "bob-secret"
    mine = {(item["class"], item["account"], item.get("service") or item.get("server")): item
            for item in target.dump("login")}
    assert mine[("genp", "alice", "myapp")]["label"] == "My App"
    assert mine[("genp", "alice", "myapp")]["comment"] == "a comment"
    assert mine[("inet", "bob", "example.com")]["path"] == "/login"

    firefox = user_tmp / "firefox.csv"
    firefox.write_text(
        '"url","username","password","httpRealm","formActionOrigin","guid","timeCreated","timeLastUsed","timePasswordChanged"\n'
        '"https://accounts.example.org","dave","dave, ""quoted"" secret",,"https://accounts.example.org",'
        '"{0b2b4f3e-1c1a-4b7a-9a51-3f0b5b0e7a11}","1700000000000","1700000000000","1700000000000"\n'
        '"https://intranet.example.net:8080","erin","erin-secret","Staff Only",,'
        '"{1b2b4f3e-1c1a-4b7a-9a51-3f0b5b0e7a11}","1700000000000","1700000000000","1700000000000"\n')
    result = target.run("import", "--format", "csv", "--plaintext", str(firefox))
    assert "2 added" in result.stdout
    assert target.run("find-internet-password", "-a", "dave", "-s", "accounts.example.org", "-r", "htps",
                      "-w").stdout.strip() == 'dave, "quoted" secret'
    erin = target.run("find-internet-password", "-a", "erin", "-s", "intranet.example.net", "-P", "8080", "--json").stdout
    assert json.loads(erin)["securityDomain"] == "Staff Only"

    chromium = user_tmp / "chromium.csv"
    chromium.write_text("name,url,username,password,note\r\n"
                        "forum.example.com,https://forum.example.com/login,frank,frank-secret,\"two\r\nlines\"\r\n")
    target.run("import", "--format", "csv", "--plaintext", str(chromium))
    frank = json.loads(target.run("find-internet-password", "-a", "frank", "-s", "forum.example.com", "-g", "--json").stdout)
    assert frank["path"] == "/login" and frank["comment"] == "two\r\nlines" and frank["password"] == "frank-secret"

    bitwarden = user_tmp / "bitwarden.csv"
    bitwarden.write_text("folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp\n"
                         ",,login,Router,,,0,http://192.168.1.1,admin,router-secret,\n"
                         ",,note,Recipe,secret sauce,,0,,,,\n")
    result = target.run("import", "--format", "csv", "--plaintext", str(bitwarden))
    assert "1 added" in result.stdout and "1 rows that are not logins ignored" in result.stdout, result.stdout
    assert target.run("find-internet-password", "-a", "admin", "-s", "192.168.1.1", "-r", "http",
                      "-w").stdout.strip() == "router-secret"
    keepassxc = user_tmp / "keepassxc.csv"
    keepassxc.write_text('"Group","Title","Username","Password","URL","Notes","TOTP","Icon","Last Modified","Created"\n'
                         '"Root","Backup server","grace","grace-secret","","nightly","","0",'
                         '"2024-01-01T00:00:00Z","2024-01-01T00:00:00Z"\n')
    target.run("import", "--format", "csv", "--plaintext", str(keepassxc))
    grace = json.loads(target.run("find-generic-password", "-a", "grace", "-s", "Backup server", "-g", "--json").stdout)
    assert grace["password"] == "grace-secret" and grace["comment"] == "nightly"

    broken = user_tmp / "broken.csv"
    broken.write_text('name,url,username,password,note\nok,ok.example,u,p,\n"unclosed,x,y,z,\n')
    result = target.run("import", "--format", "csv", "--plaintext", str(broken), check=False)
    assert result.returncode != 0 and "never closed" in result.stderr
    assert target.run("find-generic-password", "-s", "ok.example", check=False).returncode != 0
