"""What the caller-identity tests share: a private account whose keywelld answers WhoAmI, real
callers of it (a python script over jeepney, two builds of a small libdbus program, dbus-send,
gdbus), and a bwrap sandbox made the way Flatpak makes one."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from keywell_helpers import PrivateAccount, built

HERE = Path(__file__).resolve().parent
WHO_AM_I_SOURCE = HERE / "fixtures" / "who_am_i.c"
PYTHON = "/usr/bin/python3"

# A caller written in python: jeepney is Debian's python3-jeepney (python3-secretstorage needs it).
PY_CALLER = '''
import sys
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import DBusErrorResponse, unwrap_msg
address = DBusAddress("/org/keywell/Keychain", bus_name="org.keywell.Keychain", interface="org.keywell.Keychain1")
with open_dbus_connection(bus="SESSION") as connection:
    try:
        body = unwrap_msg(connection.send_and_get_reply(new_method_call(address, "WhoAmI"), timeout=60))
    except DBusErrorResponse as error:
        print("ERROR", error.name, *error.data)
        sys.exit(3)
print("\\n".join(body))
'''


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass
class Answer:
    identity: str
    strength: str
    reason: str

    @staticmethod
    def parse(output: str) -> "Answer":
        lines = output.rstrip("\n").split("\n")
        assert len(lines) == 3 and not lines[0].startswith("ERROR"), f"WhoAmI failed: {output!r}"
        return Answer(*lines)


def root_only(path: str | Path) -> bool:
    """Whether only root can replace the program at `path` (docs/access-control.md, "Programs
    only root can replace"), worked out here apart from keywelld: a regular file owned by root,
    writable by neither group nor others, in folders up to / that are all the same."""
    real = os.path.realpath(path)
    status = os.lstat(real)
    if not stat.S_ISREG(status.st_mode) or status.st_uid != 0 or status.st_mode & 0o022:
        return False
    folder = os.path.dirname(real)
    while True:
        status = os.lstat(folder)
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != 0 or status.st_mode & 0o022:
            return False
        if folder == "/":
            return True
        folder = os.path.dirname(folder)


def exe(path: str | Path, digest: str | None = None) -> str:
    """The identity keywelld gives the program at `path`: its real path alone when only root can
    replace it, else with its SHA-256 (`digest`, given for a file no longer at that path)."""
    real = os.path.realpath(path)
    if digest is None and root_only(real):
        return f"exe:{real}"
    return f"exe:{real};sha256={digest or sha256(real)}"


class IdentityAccount(PrivateAccount):
    """A private account plus a scratch folder for callers."""

    def __init__(self, keywelld: str) -> None:
        super().__init__(keywelld, "keywell-identity-")
        self.scratch = self.root / "scratch"
        self.scratch.mkdir(mode=0o700)
        self.owner.give(self.scratch)
        self.runtime = Path(self.env["XDG_RUNTIME_DIR"])

    def run(self, argv: list[str], cwd: str | Path | None = None, check: bool = True) -> str:
        result = subprocess.run(argv, env=self.env, cwd=cwd or self.scratch, capture_output=True, text=True, timeout=120,
                                **self.owner.spawn)
        if check:
            assert result.returncode == 0, f"{argv} exited {result.returncode}: {result.stdout!r} {result.stderr!r}"
        return result.stdout

    def who_am_i(self, argv: list[str], cwd: str | Path | None = None) -> Answer:
        return Answer.parse(self.run(argv, cwd))

    def refusal(self, argv: list[str]) -> str:
        """The error a caller keywelld cannot identify gets."""
        result = subprocess.run(argv, env=self.env, cwd=self.scratch, capture_output=True, text=True, timeout=120,
                                **self.owner.spawn)
        assert result.returncode == 3, f"{argv} was identified: {result.stdout!r} {result.stderr!r}"
        assert result.stdout.startswith("ERROR org.keywell.Keychain1.Error.MissingEntitlement"), result.stdout
        return result.stdout

    def compile_who_am_i(self, name: str, variant: str) -> Path:
        output = self.scratch / name
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "dbus-1"], capture_output=True, text=True, check=True).stdout.split()
        subprocess.run(["gcc", "-O1", f'-DVARIANT="{variant}"', "-o", str(output), str(WHO_AM_I_SOURCE), *flags], check=True)
        return output

    def sandbox(self, argv: list[str], info: str | None, extra: list[str] | None = None) -> list[str]:
        """bwrap as Flatpak uses it: a fresh root holding /usr and the bus, and `info` bound at
        /.flatpak-info. Returns the command line, for `run_sandboxed`."""
        command = ["bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                   "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev",
                   "--bind", str(self.runtime), str(self.runtime), "--ro-bind", str(self.scratch), str(self.scratch),
                   "--chdir", str(self.scratch)]
        if info is not None:
            info_file = self.scratch / f"flatpak-info-{len(list(self.scratch.iterdir()))}"
            info_file.write_text(info)
            self.owner.give(info_file)  # as Flatpak writes it: the user's own
            command += ["--ro-bind", str(info_file), "/.flatpak-info"]
        command += extra or []
        return command + ["--", *argv]

    def run_sandboxed(self, command: list[str], instance: str | None = "1984473542") -> subprocess.CompletedProcess:
        """Runs a `sandbox` command line; with an `instance`, records it as Flatpak does: bwrap's
        --info-fd output in $XDG_RUNTIME_DIR/.flatpak/<instance>/bwrapinfo.json."""
        if instance is None:
            return subprocess.run(command, env=self.env, cwd=self.scratch, capture_output=True, text=True, timeout=120,
                                  **self.owner.spawn)
        folder = self.runtime / ".flatpak" / instance
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "bwrapinfo.json").touch()
        self.owner.give(self.runtime / ".flatpak")  # Flatpak's records are the user's own
        with open(folder / "bwrapinfo.json", "w") as record:
            return subprocess.run([command[0], "--info-fd", str(record.fileno()), *command[1:]], env=self.env,
                                  cwd=self.scratch, capture_output=True, text=True, timeout=120, pass_fds=(record.fileno(),),
                                  **self.owner.spawn)


def flatpak_info(app_id: str = "org.example.App", instance: str = "1984473542") -> str:
    return (f"[Application]\nname={app_id}\nruntime=runtime/org.freedesktop.Platform/x86_64/23.08\n\n"
            f"[Instance]\ninstance-id={instance}\nbranch=stable\n")


@pytest.fixture
def account():
    if shutil.which("bwrap") is None or shutil.which("gcc") is None:
        pytest.fail("bwrap and gcc are needed: run scripts/setup.sh")
    a = IdentityAccount(built("KEYWELLD", "keywelld"))
    try:
        yield a
    finally:
        a.close()
