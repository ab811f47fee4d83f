"""Programs only root can replace (docs/access-control.md): named by their path alone, so a
package upgrade (a new build written beside the program and renamed over it, as dpkg does) keeps
every item it was trusted with; entries written while such a program was named with its hash
still match it by path; a program the user could replace keeps its hash and is asked again
after the same upgrade.

Runs as root (it makes root-owned folders under /opt). Needs KEYWELL and KEYWELLD (scripts/test.sh
sets them), gcc with libdbus-1-dev, dbus-send and python3-jeepney.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from access_control_helpers import acl  # noqa: F401 (fixture)
from identity_helpers import WHO_AM_I_SOURCE, Answer, exe, root_only, sha256

UPGRADED = b"\0upgraded build"


@pytest.fixture
def opt_bin():
    """A fresh `/opt/keywell-test-*/bin`, root's alone (mode 0755 up to /)."""
    if os.geteuid() != 0:
        pytest.fail("root is needed to make folders only root can write")
    top = Path(tempfile.mkdtemp(prefix="keywell-test-", dir="/opt"))
    try:
        top.chmod(0o755)
        folder = top / "bin"
        folder.mkdir(mode=0o755)
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(top)


def install(source: Path | str, target: Path, extra: bytes = b"") -> Path:
    """Installs `source` (and `extra` bytes: another build) at `target` as a package manager
    does: written under a temporary name in the same folder, then renamed over the path."""
    staged = target.with_name(f".{target.name}.dpkg-new")
    shutil.copyfile(source, staged)
    with open(staged, "ab") as f:
        f.write(extra)
    staged.chmod(0o755)
    os.rename(staged, target)
    return target


def compile_who_am_i(folder: Path, variant: str) -> Path:
    output = folder / f"who-am-i-{variant}.build"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "dbus-1"], capture_output=True, text=True, check=True).stdout.split()
    subprocess.run(["gcc", "-O1", f'-DVARIANT="{variant}"', "-o", str(output), str(WHO_AM_I_SOURCE), *flags], check=True)
    return output


def access_entries(acl, service: str) -> list[str]:
    """The identities the item named `service` trusts, from `dump-keychain -a`."""
    dump = acl.access_lists()
    block = dump[dump.index(f'"svce"<blob>="{service}"'):]
    block = block[block.index("applications ("):].split("\n", 1)[1]
    entries = []
    for line in block.splitlines():
        number, _, entry = line.strip().partition(": ")
        if not number.isdigit():
            break
        entries.append(entry)
    return entries


def test_a_root_only_program_is_its_path_before_and_after_an_upgrade(acl, opt_bin):
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed: run scripts/setup.sh")
    program = install(compile_who_am_i(acl.scratch, "a"), opt_bin / "who-am-i")
    assert root_only(program)
    before = Answer.parse(acl.run([program]).stdout)
    assert before.identity == f"exe:{program}"
    assert before.strength == "weak"
    assert "only root can replace" in before.reason and "LD_PRELOAD" in before.reason
    old_hash = sha256(program)
    install(compile_who_am_i(acl.scratch, "b"), program)
    assert sha256(program) != old_hash
    assert Answer.parse(acl.run([program]).stdout).identity == f"exe:{program}"


def test_an_upgraded_root_only_program_reads_its_items_with_no_question(acl, opt_bin):
    tool = install(acl.keywell, opt_bin / "tool")
    granted = install(acl.keywell, opt_bin / "granted")
    acl.add(tool, "mail", "s3cret")
    # -T resolves symbolic links first, then judges the program as keywelld does.
    link = acl.scratch / "granted-link"
    link.symlink_to(granted)
    acl.add(tool, "shared", "g", "-T", str(link))
    assert access_entries(acl, "mail") == [f"exe:{tool}"]
    assert access_entries(acl, "shared") == [f"exe:{granted}"]
    doctor = acl.run([tool, "doctor"], check=False).stdout
    assert f"identity: exe:{tool} (weak: only root can replace" in doctor, doctor

    install(acl.keywell, tool, UPGRADED)
    install(acl.keywell, granted, UPGRADED)
    acl.answer([])  # a question would be answered Deny
    assert acl.read(tool, "mail").stdout == "s3cret\n"
    assert acl.read(granted, "shared").stdout == "g\n"
    assert acl.questions == 0
    # Another root-only program is not the one trusted.
    other = install(acl.keywell, opt_bin / "other")
    assert acl.read(other, "mail").returncode != 0
    assert acl.questions == 1


def test_a_program_the_user_could_replace_is_asked_after_an_upgrade(acl):
    tool = acl.program("tool")  # below /tmp: anyone may write there
    granted = acl.program("granted")
    assert not root_only(tool)
    acl.add(tool, "mail", "s3cret", "-T", str(tool), "-T", str(granted))
    old = [exe(tool), exe(granted)]
    assert all(";sha256=" in entry for entry in old)
    assert access_entries(acl, "mail") == old
    assert acl.read(tool, "mail").stdout == "s3cret\n"

    install(acl.keywell, tool, UPGRADED)
    install(acl.keywell, granted, UPGRADED)
    acl.answer([])
    assert acl.read(tool, "mail").returncode != 0
    assert acl.read(granted, "mail").returncode != 0
    assert acl.questions == 2
    # The entries written before still name the old builds only.
    assert access_entries(acl, "mail") == old


def test_an_entry_without_a_hash_does_not_match_a_program_others_can_replace(acl, opt_bin):
    tool = install(acl.keywell, opt_bin / "tool")
    acl.add(tool, "mail", "s3cret")
    assert access_entries(acl, "mail") == [f"exe:{tool}"]
    # The folder becomes writable by a group: the same file is now named with its hash.
    opt_bin.chmod(0o775)
    assert not root_only(tool)
    acl.answer([])
    assert acl.read(tool, "mail").returncode != 0
    assert acl.questions == 1


def test_an_old_hashed_entry_matches_a_program_now_only_root_can_replace(acl, opt_bin):
    # Written while the program's folder let a group write: the entry carries the hash.
    opt_bin.chmod(0o775)
    tool = install(acl.keywell, opt_bin / "tool")
    acl.add(tool, "mail", "s3cret")
    [entry] = access_entries(acl, "mail")
    assert entry == f"exe:{tool};sha256={sha256(tool)}"

    opt_bin.chmod(0o755)
    assert root_only(tool)
    acl.answer([])
    assert acl.read(tool, "mail").stdout == "s3cret\n"
    # And after an upgrade, whatever hash the entry holds.
    install(acl.keywell, tool, UPGRADED)
    assert acl.read(tool, "mail").stdout == "s3cret\n"
    assert acl.questions == 0
    assert access_entries(acl, "mail") == [entry]
