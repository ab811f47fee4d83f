"""git-credential-keywell with the real git: `git credential fill/approve/reject` through the
helper, against the real keywelld on a private session bus (started by D-Bus activation).

Needs the built binaries: KEYWELL=/path/to/keywell and KEYWELLD=/path/to/keywelld
(scripts/test.sh sets both). Without them the tests fail; they do not skip.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from keywell_helpers import PrivateAccount, built

LOGIN_PASSWORD = "login-pw"


class Session(PrivateAccount):
    """A fresh account (keywell_helpers.PrivateAccount) with a bin folder holding `keywell` and
    `git-credential-keywell`, a link to it (as scripts/install.sh lays them out)."""

    def __init__(self, keywell: str, keywelld: str) -> None:
        if shutil.which("git") is None:
            pytest.fail("git is needed: run scripts/setup.sh")
        super().__init__(keywelld, prefix="kwgit-", bin_dir=True, extra_env={
            # git must not fall back to prompting, nor read the machine's or user's config.
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
        })
        self.keywell = keywell
        (self.bin / "keywell").symlink_to(keywell)
        (self.bin / "git-credential-keywell").symlink_to("keywell")

    def run(self, *args: str, stdin: str = "", check: bool = False) -> subprocess.CompletedProcess:
        result = subprocess.run(list(args), input=stdin, capture_output=True, text=True, env=self.env, timeout=60,
                                **self.owner.spawn)
        if check and result.returncode != 0:
            pytest.fail(f"{args} failed: {result}")
        return result

    def keywell_cmd(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return self.run(self.keywell, *args, **kw)

    def git(self, helper: str, *args: str, stdin: str = "", config: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
        options = ["-c", f"credential.helper={helper}"]
        for item in config:
            options += ["-c", item]
        return self.run("git", *options, *args, stdin=stdin)



@pytest.fixture
def session():
    s = Session(built("KEYWELL"), built("KEYWELLD"))
    try:
        s.keywell_cmd("create-keychain", "-p", LOGIN_PASSWORD, "login", check=True)
        yield s
    finally:
        s.close()


# The three ways git can be pointed at the helper: by name on PATH (what `credential.helper
# keywell` does once installed), by absolute path to the wrapper, and as a shell command.
HELPERS = ["keywell", "wrapper-path", "shell"]


def helper_spec(session: Session, kind: str) -> str:
    if kind == "keywell":
        return "keywell"
    if kind == "wrapper-path":
        return str(session.bin / "git-credential-keywell")
    return f"!{session.keywell} git-credential"


def fields(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def approve(session, helper, url, user, password, config=()):
    r = session.git(helper, "credential", "approve", stdin=f"url={url}\nusername={user}\npassword={password}\n\n",
                    config=config)
    assert r.returncode == 0, r
    return r


def fill(session, helper, url, config=()):
    return session.git(helper, "credential", "fill", stdin=f"url={url}\n\n", config=config)


@pytest.mark.parametrize("kind", HELPERS)
def test_approve_then_fill_returns_the_credential(session, kind):
    helper = helper_spec(session, kind)
    approve(session, helper, "https://git.example.com", "alice", "s3cret")
    r = fill(session, helper, "https://git.example.com")
    assert r.returncode == 0, r
    got = fields(r.stdout)
    assert got["username"] == "alice"
    assert got["password"] == "s3cret"
    assert got["protocol"] == "https" and got["host"] == "git.example.com"


def test_item_is_kept_like_osxkeychain(session):
    approve(session, "keywell", "https://git.example.com:8443/org/repo.git", "alice", "pw",
            config=("credential.useHttpPath=true",))
    r = session.keywell_cmd("find-internet-password", "-s", "git.example.com")
    assert r.returncode == 0, r
    block = r.stdout
    assert '0x00000007 <blob>="git.example.com"' in block  # label = host
    assert '"acct"<blob>="alice"' in block
    assert '"ptcl"<uint32>="htps"' in block
    assert '"srvr"<blob>="git.example.com"' in block
    assert '"path"<blob>="org/repo.git"' in block
    assert '"port"<uint32>=0x000020FB ' in block  # 8443
    r = session.keywell_cmd("find-internet-password", "-s", "git.example.com", "-r", "htps", "-P", "8443", "-w")
    assert r.stdout == "pw\n"


def test_http_and_unknown_protocols(session):
    approve(session, "keywell", "http://plain.example.com", "bob", "pw-http")
    r = session.keywell_cmd("find-internet-password", "-s", "plain.example.com", "-r", "http", "-w")
    assert r.stdout == "pw-http\n", r
    # A scheme without a four-character code is stored with no protocol ("any"): port 0 prints.
    session.run("git", "-c", "credential.helper=keywell", "credential", "approve",
                stdin="protocol=cvs\nhost=odd.example.com\nusername=carol\npassword=pw-odd\n\n")
    r = session.keywell_cmd("find-internet-password", "-s", "odd.example.com")
    assert '"ptcl"<uint32>=0x00000000 ' in r.stdout, r
    r = fill(session, "keywell", "cvs://odd.example.com")
    assert fields(r.stdout).get("password") == "pw-odd", r


def test_store_replaces_the_password_instead_of_failing(session):
    approve(session, "keywell", "https://git.example.com", "alice", "first")
    approve(session, "keywell", "https://git.example.com", "alice", "second")
    r = fill(session, "keywell", "https://git.example.com")
    assert fields(r.stdout)["password"] == "second"
    dump = session.keywell_cmd("dump-keychain").stdout
    assert dump.count('class: "inet"') == 1, dump


def test_ports_and_users_are_separate_credentials(session):
    approve(session, "keywell", "https://git.example.com", "alice", "pw-a")
    approve(session, "keywell", "https://git.example.com:444", "alice", "pw-444")
    approve(session, "keywell", "https://bob@git.example.com", "bob", "pw-b")
    assert fields(fill(session, "keywell", "https://git.example.com:444").stdout)["password"] == "pw-444"
    assert fields(fill(session, "keywell", "https://bob@git.example.com").stdout)["password"] == "pw-b"
    assert fields(fill(session, "keywell", "https://alice@git.example.com").stdout)["password"] == "pw-a"


@pytest.mark.parametrize("kind", HELPERS)
def test_reject_erases(session, kind):
    helper = helper_spec(session, kind)
    approve(session, helper, "https://git.example.com", "alice", "s3cret")
    r = session.git(helper, "credential", "reject",
                    stdin="url=https://git.example.com\nusername=alice\npassword=s3cret\n\n")
    assert r.returncode == 0, r
    r = fill(session, helper, "https://git.example.com")
    # Nothing stored and prompting disabled: git gives up.
    assert r.returncode != 0
    assert "password=" not in r.stdout
    r = session.keywell_cmd("find-internet-password", "-s", "git.example.com")
    assert r.returncode == 44


def test_reject_keeps_a_password_that_changed_meanwhile(session):
    approve(session, "keywell", "https://git.example.com", "alice", "new-password")
    session.git("keywell", "credential", "reject",
                stdin="url=https://git.example.com\nusername=alice\npassword=old-password\n\n")
    assert fields(fill(session, "keywell", "https://git.example.com").stdout)["password"] == "new-password"


def test_helper_prints_only_username_and_password(session):
    approve(session, "keywell", "https://git.example.com", "alice", "s3cret")
    r = session.keywell_cmd("git-credential", "get",
                            stdin="protocol=https\nhost=git.example.com\nwwwauth[]=Basic realm=\"x\"\n\n")
    assert r.returncode == 0, r
    assert r.stdout == "username=alice\npassword=s3cret\n"
    assert r.stderr == ""
    # Unknown actions are ignored, as gitcredentials(7) asks.
    r = session.keywell_cmd("git-credential", "frobnicate", stdin="host=x\n\n")
    assert r.returncode == 0 and r.stdout == ""


def test_nothing_stored_prints_nothing(session):
    r = session.keywell_cmd("git-credential", "get", stdin="protocol=https\nhost=nowhere.example.com\n\n")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""


def test_locked_keychain_explains_on_stderr_only(session):
    approve(session, "keywell", "https://git.example.com", "alice", "s3cret")
    session.keywell_cmd("lock-keychain", "login", check=True)
    r = session.keywell_cmd("git-credential", "get", stdin="protocol=https\nhost=git.example.com\n\n")
    assert r.stdout == ""
    assert "unlock-keychain" in r.stderr
    session.keywell_cmd("unlock-keychain", "-p", LOGIN_PASSWORD, "login", check=True)
    assert fields(fill(session, "keywell", "https://git.example.com").stdout)["password"] == "s3cret"
