"""The Secret portal as a sandboxed app meets it: the real xdg-desktop-portal on a private session
bus (KeywellBus), Keywell's own keywell.portal in the folder xdg-desktop-portal reads backends
from, keywelld activated for the backend's name, and apps run inside a bwrap sandbox whose
/.flatpak-info names them, which is how xdg-desktop-portal tells a Flatpak app's id.

xdg-desktop-portal 1.16 (Debian 12) reads backend files from XDG_DESKTOP_PORTAL_DIR when set (its
build-time /usr/share/xdg-desktop-portal/portals otherwise); it knows nothing of portals.conf.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from secret_service_helpers import KeywellBus

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CLIENT = HERE / "portal_client.py"
XDP = Path("/usr/libexec/xdg-desktop-portal")
FRONTEND = "org.freedesktop.portal.Desktop"
BACKEND = "org.freedesktop.impl.portal.desktop.keywell"
PYTHON = "/usr/bin/python3"
# Hang guard for start-ups: each wait ends as soon as its name is owned.
PATIENCE = 60


def require_tools() -> None:
    missing = [tool for tool in (str(XDP), "bwrap") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: run scripts/setup.sh (xdg-desktop-portal, bubblewrap)")


class PortalSession:
    """A KeywellBus with keywelld activatable for the portal backend's name and a running
    xdg-desktop-portal that routes the Secret portal to it."""

    def __init__(self, bus: KeywellBus, portal_files: dict[str, str] | None = None) -> None:
        """`portal_files`: backend files by name instead of Keywell's own keywell.portal."""
        require_tools()
        self.bus = bus
        (bus.services / f"{BACKEND}.service").write_text(f"[D-BUS Service]\nName={BACKEND}\nExec={bus.wrapper}\n")
        self.portals = bus.root / "portals"
        self.portals.mkdir()
        if portal_files is None:
            shutil.copy(REPO / "dbus/keywell.portal", self.portals / "keywell.portal")
        for name, content in (portal_files or {}).items():
            (self.portals / name).write_text(content)
        self.log_path = bus.root / "xdg-desktop-portal.log"
        self.apps = bus.root / "apps"
        self.apps.mkdir()
        bus.owner.give(self.portals, self.apps)
        environment = {**bus.env, "XDG_DESKTOP_PORTAL_DIR": str(self.portals), "XDG_CURRENT_DESKTOP": "GNOME"}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen([str(XDP), "--verbose"], env=environment, stdout=log, stderr=log,
                                            **bus.owner.spawn)
        bus.owner.call(self.wait_for_owner, FRONTEND)

    def wait_for_owner(self, name: str) -> None:
        connection = self.bus.dbus()
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            if connection.name_has_owner(name):
                return
            if self.portal_gone():
                break
            time.sleep(0.05)
        raise AssertionError(f"{name} never appeared on the bus; xdg-desktop-portal log:\n{self.log()[-3000:]}")

    def portal_gone(self) -> bool:
        """Whether xdg-desktop-portal has exited: read from /proc, since this may run in a child
        of the process that started it (Owner.call), which cannot wait for it."""
        try:
            state = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        return state in ("Z", "X")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def sandbox(self, app_id: str, command: list[str], env: dict | None = None,
                binds: list[Path] = (), input: str | None = None, timeout: float = PATIENCE * 3) -> subprocess.CompletedProcess:
        """Runs `command` in a bwrap sandbox whose /.flatpak-info names `app_id`: a fresh root with
        /usr, /etc, the bus socket's folder and this test's files, as Flatpak builds one."""
        info = self.apps / f"{app_id or 'empty'}.flatpak-info"
        info.write_text(f"[Application]\nname={app_id}\n")
        arguments = [
            "bwrap", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin", "--ro-bind", "/etc", "/etc",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
            "--ro-bind", str(info), "/.flatpak-info",
            "--bind", str(self.bus.runtime), str(self.bus.runtime),
            "--ro-bind", str(HERE), str(HERE),
        ]
        for folder in binds:
            arguments += ["--bind", str(folder), str(folder)]
        return self.bus.run([*arguments, "--", *command], env=env, input=input, timeout=timeout)

    def retrieve(self, app_id: str | None, token: str, *options: str) -> dict:
        """RetrieveSecret through the portal from a sandboxed app (`app_id`), or from the host (None)."""
        command = [PYTHON, str(CLIENT), self.bus.address, token, *options]
        binds = [Path(option[5:]).parent for option in options if option.startswith("file:")]
        if "--close-when" in options:
            binds.append(Path(options[options.index("--close-when") + 1]).parent)
        result = self.sandbox(app_id, command, binds=binds) if app_id is not None else self.bus.run(command, timeout=PATIENCE * 3)
        assert result.returncode == 0, (f"portal client failed: {result.stderr.decode(errors='replace')}\n"
                                        f"keywelld log:\n{self.bus.daemon_log()[-3000:]}\nportal log:\n{self.log()[-3000:]}")
        return json.loads(result.stdout)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def portal():
    bus = KeywellBus()
    session = None
    try:
        bus.owner.call(bus.create_login)
        session = PortalSession(bus)
        yield session
    finally:
        if session is not None:
            session.close()
        bus.close()
