"""scripts/install.sh into a staging root (DESTDIR) and back out with --uninstall: every file in
its place with its mode, man pages that render without warnings, the version of both programs,
a systemd unit systemd accepts, an autostart entry desktop-file-validate accepts, and an uninstall
that leaves the staging root exactly as it was, another service's Secret Service activation file
included (docs/install.md).

Needs the built binaries: KEYWELL and KEYWELLD (scripts/test.sh sets both); install.sh takes them
with --bin-dir instead of making a release build.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from keywell_helpers import built

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "scripts" / "install.sh"
PREFIX = "/usr/local"

# What install.sh must put where (paths inside the staging root), and with which mode.
EXPECTED = {
    f"{PREFIX}/bin/keywelld": 0o755,
    f"{PREFIX}/bin/keywell": 0o755,
    f"{PREFIX}/bin/git-credential-keywell": 0o755,
    f"{PREFIX}/share/man/man1/keywell.1": 0o644,
    f"{PREFIX}/share/man/man8/keywelld.8": 0o644,
    f"{PREFIX}/share/man/man8/pam_keywell.8": 0o644,
    f"{PREFIX}/share/man/man1/git-credential-keywell.1": 0o644,
    f"{PREFIX}/share/bash-completion/completions/keywell": 0o644,
    f"{PREFIX}/share/zsh/site-functions/_keywell": 0o644,
    f"{PREFIX}/share/fish/vendor_completions.d/keywell.fish": 0o644,
    f"{PREFIX}/share/dbus-1/services/org.keywell.Keychain.service": 0o644,
    f"{PREFIX}/share/dbus-1/services/org.freedesktop.secrets.service": 0o644,
    f"{PREFIX}/share/dbus-1/services/org.kde.kwalletd5.service": 0o644,
    f"{PREFIX}/share/dbus-1/services/org.kde.kwalletd6.service": 0o644,
    f"{PREFIX}/share/dbus-1/interfaces/org.keywell.Keychain1.xml": 0o644,
    f"{PREFIX}/lib/systemd/user/keywelld.service": 0o644,
    "/etc/xdg/autostart/keywelld.desktop": 0o644,
    f"{PREFIX}/lib/environment.d/60-keywell-ssh-agent.conf": 0o644,
    f"{PREFIX}/share/dbus-1/services/org.freedesktop.impl.portal.desktop.keywell.service": 0o644,
    "/usr/share/xdg-desktop-portal/portals/keywell.portal": 0o644,
    "/usr/share/xdg-desktop-portal/portals.conf": 0o644,
}
PORTALS_CONF = "/usr/share/xdg-desktop-portal/portals.conf"
MAN_PAGES = ["man1/keywell.1", "man8/keywelld.8", "man8/pam_keywell.8"]
SECRETS_ACTIVATION = f"{PREFIX}/share/dbus-1/services/org.freedesktop.secrets.service"
# Another Secret Service that owned the name before Keywell came (its file at the same path).
FOREIGN_SECRETS = b"[D-BUS Service]\nName=org.freedesktop.secrets\nExec=/opt/other/secretsd\n"


def the_version() -> str:
    """The one definition of the version, read from its source."""
    source = (REPO / "Sources/KeywellProtocol/KeywellVersion.swift").read_text()
    match = re.search(r'static let string = "([^"]+)"', source)
    assert match, "KeywellVersion.string not found"
    return match.group(1)


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under `root` with its type, mode and content (or link target)."""
    entries = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        relative = "/" + str(path.relative_to(root))
        if path.is_symlink():
            entries[relative] = ("link", os.readlink(path))
        elif path.is_dir():
            entries[relative] = ("dir", info.st_mode & 0o7777)
        else:
            entries[relative] = ("file", info.st_mode & 0o7777, hashlib.sha256(path.read_bytes()).hexdigest())
    return entries


def run_install(root: Path, bin_dir: Path, *arguments: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "DESTDIR": str(root), "PREFIX": PREFIX}
    result = subprocess.run(["bash", str(INSTALL), *arguments], env=environment, cwd="/",
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"install.sh {arguments} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture
def staging(tmp_path):
    """A staging root holding another Secret Service's activation file and an unrelated program,
    and a bin folder with the built keywell and keywelld."""
    keywell = built("KEYWELL", "keywell")
    keywelld = built("KEYWELLD", "keywelld")
    bin_dir = tmp_path / "built"
    bin_dir.mkdir()
    (bin_dir / "keywell").symlink_to(keywell)
    (bin_dir / "keywelld").symlink_to(keywelld)
    root = tmp_path / "root"
    foreign = root / SECRETS_ACTIVATION.lstrip("/")
    foreign.parent.mkdir(parents=True)
    foreign.write_bytes(FOREIGN_SECRETS)
    foreign.chmod(0o640)
    other = root / PREFIX.lstrip("/") / "bin" / "other-tool"
    other.parent.mkdir(parents=True)
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    return root, bin_dir


def test_install_puts_every_file_in_place_and_uninstall_restores_the_root(staging):
    root, bin_dir = staging
    before = snapshot(root)

    first = run_install(root, bin_dir, "--bin-dir", str(bin_dir))
    assert f"saved the previous {SECRETS_ACTIVATION}" in first.stdout
    # Installing again over itself must not take its own files for "previous" ones.
    again = run_install(root, bin_dir, "--bin-dir", str(bin_dir))
    assert "saved the previous" not in again.stdout

    for path, mode in EXPECTED.items():
        installed = root / path.lstrip("/")
        assert installed.is_file(), f"{path} was not installed"
        assert installed.stat().st_mode & 0o7777 == mode, f"{path}: mode {oct(installed.stat().st_mode)}"
    pamdir = subprocess.run(["make", "-s", "-C", str(REPO / "pam"), "print-pamdir"],
                            capture_output=True, text=True, check=True).stdout.strip()
    module = root / pamdir.lstrip("/") / "pam_keywell.so"
    assert module.is_file() and module.stat().st_mode & 0o7777 == 0o644
    if Path("/usr/share/pam-configs").is_dir():
        profile = root / "usr/share/pam-configs/keywell"
        assert profile.read_bytes() == (REPO / "pam/pam-configs/keywell").read_bytes()

    # Completions are the checked-in scripts, under the names the shells look for.
    share = root / PREFIX.lstrip("/") / "share"
    assert (share / "bash-completion/completions/keywell").read_bytes() == (REPO / "completions/keywell.bash").read_bytes()
    assert (share / "zsh/site-functions/_keywell").read_bytes() == (REPO / "completions/_keywell").read_bytes()
    assert (share / "fish/vendor_completions.d/keywell.fish").read_bytes() == (REPO / "completions/keywell.fish").read_bytes()
    completion = subprocess.run(["bash", "-c", f"source {share}/bash-completion/completions/keywell && complete -p keywell"],
                                capture_output=True, text=True)
    assert completion.returncode == 0 and "keywell" in completion.stdout, completion.stderr

    # Templates name the installed programs; the bus starts keywelld through systemd where it can.
    unit = (root / f"{PREFIX}/lib/systemd/user/keywelld.service".lstrip("/")).read_text()
    assert f"ExecStart={PREFIX}/bin/keywelld\n" in unit
    assert "Type=dbus\n" in unit and "BusName=org.keywell.Keychain\n" in unit
    for name in ("org.keywell.Keychain", "org.freedesktop.secrets", "org.freedesktop.impl.portal.desktop.keywell"):
        activation = (share / f"dbus-1/services/{name}.service").read_text()
        assert f"Name={name}\n" in activation
        assert f"Exec={PREFIX}/bin/keywelld\n" in activation
        assert "SystemdService=keywelld.service\n" in activation
    # The portal backend file names the name keywelld's activation file starts it for.
    portal = (root / "usr/share/xdg-desktop-portal/portals/keywell.portal").read_text()
    assert "DBusName=org.freedesktop.impl.portal.desktop.keywell\n" in portal
    assert "Interfaces=org.freedesktop.impl.portal.Secret;\n" in portal
    assert "org.freedesktop.impl.portal.Secret=keywell;" in (root / PORTALS_CONF.lstrip("/")).read_text()
    autostart = root / "etc/xdg/autostart/keywelld.desktop"
    assert f"TryExec={PREFIX}/bin/keywelld\n" in autostart.read_text()
    assert f"Exec={PREFIX}/bin/keywell session-display\n" in autostart.read_text()
    for path in EXPECTED:
        assert b"@BINDIR@" not in (root / path.lstrip("/")).read_bytes(), path

    # Every man page the unit names exists, and every page renders without a warning.
    for page, section in re.findall(r"man:([\w.-]+)\((\d)\)", unit):
        assert (share / f"man/man{section}/{page}.{section}").is_file(), f"the unit names man:{page}({section})"
    for page in MAN_PAGES:
        path = share / "man" / page
        groff = subprocess.run(["groff", "-ww", "-z", "-man", str(path)], capture_output=True, text=True)
        assert groff.returncode == 0 and groff.stderr == "", f"{page}: {groff.stderr}"
        rendered = subprocess.run(["man", "--warnings=w", "-l", str(path)], capture_output=True, text=True,
                                  env={**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": ""})
        assert rendered.returncode == 0 and rendered.stderr == "", f"{page}: {rendered.stderr}"
        assert "\nNAME\n" in rendered.stdout and "SEE ALSO" in rendered.stdout

    desktop = subprocess.run(["desktop-file-validate", str(autostart)], capture_output=True, text=True)
    assert desktop.returncode == 0 and desktop.stdout == "", desktop.stdout + desktop.stderr

    # Both installed programs report the one version.
    version = the_version()
    for program in ("keywell", "keywelld"):
        result = subprocess.run([str(root / PREFIX.lstrip("/") / "bin" / program), "--version"],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 0 and result.stdout == f"{program} {version}\n", result

    run_install(root, bin_dir, "--uninstall")
    after = snapshot(root)
    assert after == before
    restored = root / SECRETS_ACTIVATION.lstrip("/")
    assert restored.read_bytes() == FOREIGN_SECRETS and restored.stat().st_mode & 0o7777 == 0o640


def test_the_systemd_unit_passes_systemd_analyze_verify(staging, tmp_path):
    """systemd's own check of the installed unit. systemd-analyze 252 cannot take --root with
    --user, so the unit is checked from a user-unit folder of its own with ExecStart pointing at
    the staged keywelld, and MANPATH at the staged pages: verify runs `man` for every
    Documentation=man: entry and fails when the page is missing."""
    if shutil.which("systemd-analyze") is None:
        pytest.fail("systemd-analyze is not installed: run scripts/setup.sh (it installs systemd)")
    root, bin_dir = staging
    run_install(root, bin_dir, "--bin-dir", str(bin_dir))
    staged_prefix = root / PREFIX.lstrip("/")
    installed = (staged_prefix / "lib/systemd/user/keywelld.service").read_text()
    assert f"ExecStart={PREFIX}/bin/keywelld\n" in installed
    units = tmp_path / "units"
    units.mkdir()
    (units / "keywelld.service").write_text(
        installed.replace(f"ExecStart={PREFIX}/bin/", f"ExecStart={staged_prefix}/bin/"))
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    environment = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "MANPATH": str(staged_prefix / "share/man")}
    result = subprocess.run(["systemd-analyze", "verify", "--user", str(units / "keywelld.service")],
                            capture_output=True, text=True, timeout=120, env=environment)
    assert result.returncode == 0 and result.stderr == "", result.stdout + result.stderr
    run_install(root, bin_dir, "--uninstall")


def test_uninstall_without_a_record_refuses_and_changes_nothing(tmp_path):
    root = tmp_path / "root"
    (root / "usr/local/bin").mkdir(parents=True)
    before = snapshot(root)
    result = subprocess.run(["bash", str(INSTALL), "--uninstall"], capture_output=True, text=True,
                            env={**os.environ, "DESTDIR": str(root), "PREFIX": PREFIX}, timeout=60)
    assert result.returncode == 1
    assert "nothing to uninstall" in result.stderr
    assert snapshot(root) == before


def test_a_portals_conf_that_is_not_ours_stays_untouched(staging):
    """A portals.conf already in xdg-desktop-portal's folder is someone's choice for every portal:
    install.sh neither replaces it nor takes it away, and says which line routes the Secret portal."""
    root, bin_dir = staging
    theirs = root / PORTALS_CONF.lstrip("/")
    theirs.parent.mkdir(parents=True)
    content = b"[preferred]\ndefault=gtk\n"
    theirs.write_bytes(content)
    result = run_install(root, bin_dir, "--bin-dir", str(bin_dir))
    assert theirs.read_bytes() == content
    assert "org.freedesktop.impl.portal.Secret=keywell" in result.stdout
    assert (root / "usr/share/xdg-desktop-portal/portals/keywell.portal").is_file()
    run_install(root, bin_dir, "--uninstall")
    assert theirs.read_bytes() == content
    assert not (root / "usr/share/xdg-desktop-portal/portals").exists()


def test_ssh_auth_sock_is_set_only_when_nothing_else_sets_it(staging):
    """The environment.d file pointing SSH_AUTH_SOCK at keywelld's agent (docs/ssh.md) is
    installed when no other file claims the variable; when a user unit does (gcr-ssh-agent),
    install.sh leaves it alone and names that unit."""
    root, bin_dir = staging
    ours = root / PREFIX.lstrip("/") / "lib/environment.d/60-keywell-ssh-agent.conf"
    run_install(root, bin_dir, "--bin-dir", str(bin_dir))
    assert "SSH_AUTH_SOCK=${XDG_RUNTIME_DIR}/keywell/ssh-agent" in ours.read_text()
    run_install(root, bin_dir, "--uninstall")
    assert not ours.exists()
    unit = root / "usr/lib/systemd/user/gcr-ssh-agent.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nExecStartPost=-/usr/bin/systemctl --user set-environment SSH_AUTH_SOCK=%t/gcr/ssh\n")
    result = run_install(root, bin_dir, "--bin-dir", str(bin_dir))
    assert not ours.exists()
    assert "SSH_AUTH_SOCK is left to /usr/lib/systemd/user/gcr-ssh-agent.service" in result.stdout
    run_install(root, bin_dir, "--uninstall")
