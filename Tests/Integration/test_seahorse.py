"""The real Seahorse (GNOME's Passwords and Keys, libsecret inside) on keywelld's Secret Service,
under a real X server (Xvfb): keychains made and deleted with the `keywell` CLI while Seahorse
watches must show up in it, and must not crash it. libsecret updates its cached `Collections`
from `CollectionCreated` / `CollectionDeleted` and crashes if that cache is empty, which a
`PropertiesChanged` that only invalidated `Collections` left it (docs/secret-service.md, "Signals").

No timed waits: Seahorse has handled a `CollectionCreated` once it asks for the new collection's
properties (libsecret makes a proxy for it), which dbus-monitor shows; the bus delivers
keywelld's signals in order, so by then it has handled every earlier one too. Screenshots of the
screen go to $KEYWELL_ARTIFACTS (else a temp folder) when a test fails, and are kept there.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from secret_service_helpers import SERVICE_PATH, KeywellBus, built, session  # noqa: F401

TOOLS = ("seahorse", "Xvfb", "xdotool", "import", "dbus-monitor")
# Hang guards only: Seahorse's first start on a busy 2-core machine took 30 s.
START_GUARD = 180
STEP_GUARD = 120


@pytest.fixture
def display():
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: run scripts/setup.sh")
    read, write = os.pipe()
    # -displayfd: Xvfb picks a free display and writes its number once it accepts clients.
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                              pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    number = b""
    deadline = time.monotonic() + START_GUARD
    while not number.endswith(b"\n") and time.monotonic() < deadline:
        ready, _, _ = select.select([read], [], [], 1)
        if ready:
            chunk = os.read(read, 16)
            if not chunk:
                break
            number += chunk
    os.close(read)
    if not number.strip():
        server.kill()
        pytest.fail("Xvfb never said which display it serves")
    try:
        yield f":{number.decode().strip()}"
    finally:
        server.terminate()
        server.wait(timeout=10)


class BusWatch:
    """dbus-monitor on the whole bus, lines kept as they come."""

    def __init__(self, bus: KeywellBus) -> None:
        self.process = subprocess.Popen(["dbus-monitor", "--address", bus.address], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=bus.env)
        self.lines: list[str] = []
        self.partial = b""
        # It is a monitor once the bus took its name back (BecomeMonitor ends with NameLost).
        self.read_until(lambda lines: any("member=NameLost" in line for line in lines), lambda: True,
                        START_GUARD, "dbus-monitor listening")

    def read_until(self, found, alive, guard: float, what: str) -> None:
        """Reads until `found(lines)` holds; fails when `alive()` turns false first, or at the guard."""
        deadline = time.monotonic() + guard
        while time.monotonic() < deadline:
            if found(self.lines):
                return
            if not alive():
                raise AssertionError(f"Seahorse ended while waiting for {what}")
            # Raw reads: a buffered readline could keep lines that select then never reports.
            ready, _, _ = select.select([self.process.stdout], [], [], 0.2)
            if ready:
                chunk = os.read(self.process.stdout.fileno(), 65536)
                if not chunk:
                    raise AssertionError("dbus-monitor ended")
                self.partial += chunk
                *complete, self.partial = self.partial.split(b"\n")
                self.lines.extend(line.decode(errors="replace") for line in complete)
        raise AssertionError(f"no {what} within {guard} s")

    def close(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=10)


def _asked_for(path: str):
    """Whether some client called a method on `path` (libsecret's GetAll of a new proxy)."""
    def found(lines: list[str]) -> bool:
        return any(line.startswith("method call ") and f"path={path};" in line for line in lines)
    return found


class Seahorse:
    def __init__(self, bus: KeywellBus, display: str, artifacts: Path) -> None:
        self.display = display
        self.artifacts = artifacts
        self.log = artifacts / "seahorse.log"
        self.env = {**bus.env, "DISPLAY": display, "GSETTINGS_BACKEND": "memory", "NO_AT_BRIDGE": "1",
                    "GTK_A11Y": "none", "GNUPGHOME": str(bus.home / ".gnupg")}
        self.process = subprocess.Popen(["seahorse"], env=self.env, stdout=self.log.open("wb"),
                                        stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.process.poll() is None

    def windows(self) -> list[str]:
        found = subprocess.run(["xdotool", "search", "--onlyvisible", "--pid", str(self.process.pid), "--name", "."],
                               env=self.env, capture_output=True, text=True, timeout=STEP_GUARD)
        return found.stdout.split()

    def wait_for_window(self) -> str:
        deadline = time.monotonic() + START_GUARD
        while time.monotonic() < deadline:
            if not self.alive():
                raise AssertionError(f"Seahorse ended at start ({self.process.returncode}):\n{self.log_text()}")
            windows = self.windows()
            if windows:
                return windows[0]
            time.sleep(0.2)
        raise AssertionError(f"Seahorse showed no window within {START_GUARD} s")

    def screenshot(self, name: str) -> Path:
        shot = self.artifacts / name
        subprocess.run(["import", "-window", "root", str(shot)], env=self.env, timeout=STEP_GUARD, check=False)
        return shot

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def close(self) -> None:
        if self.alive():
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait(timeout=10)


@pytest.fixture
def artifacts(request):
    """Where screenshots and Seahorse's output go: $KEYWELL_ARTIFACTS, kept; else a temp folder,
    removed when the test passed."""
    chosen = os.environ.get("KEYWELL_ARTIFACTS")
    base = Path(chosen) if chosen else Path(tempfile.gettempdir())
    folder = base / f"keywell-seahorse-{request.node.name}-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    passed = []
    yield folder, passed
    if passed and not chosen:
        shutil.rmtree(folder, ignore_errors=True)


def test_seahorse_survives_keychains_made_and_deleted_by_the_cli(session, display, artifacts):
    artifacts, passed = artifacts
    keywell = built("KEYWELL")
    session.create_login()
    watch = BusWatch(session)
    seahorse = Seahorse(session, display, artifacts)
    try:
        window = seahorse.wait_for_window()
        # Wide enough for the sidebar that lists the keychains.
        subprocess.run(["xdotool", "windowsize", window, "1200", "760"], env=seahorse.env, timeout=STEP_GUARD, check=False)
        # Seahorse has loaded the collections once it asked for the login collection's properties.
        watch.read_until(_asked_for(f"{SERVICE_PATH}/collection/login"), seahorse.alive, START_GUARD,
                         "Seahorse reading the login collection")
        try:
            for name in ("spare1", "spare2"):
                session.run([keywell, "create-keychain", "-p", "pw", name], check=True)
            for name in ("spare1", "spare2"):
                watch.read_until(_asked_for(f"{SERVICE_PATH}/collection/{name}"), seahorse.alive, STEP_GUARD,
                                 f"Seahorse reading the new collection {name}")
            session.run([keywell, "delete-keychain", "spare1"], check=True)
            # A keychain made after the deletion: once Seahorse reads it, it has handled the
            # CollectionDeleted sent before it.
            session.run([keywell, "create-keychain", "-p", "pw", "spare3"], check=True)
            watch.read_until(_asked_for(f"{SERVICE_PATH}/collection/spare3"), seahorse.alive, STEP_GUARD,
                             "Seahorse reading the new collection spare3")
            assert seahorse.alive(), f"Seahorse ended ({seahorse.process.returncode}):\n{seahorse.log_text()}"
            assert window in seahorse.windows(), "Seahorse's window went"
        except AssertionError as failure:
            seahorse.screenshot("failure.png")
            (artifacts / "bus.log").write_text("\n".join(watch.lines))
            raise AssertionError(f"{failure}\nSeahorse's exit status: {seahorse.process.poll()}\n"
                                 f"Seahorse's output:\n{seahorse.log_text()}\n"
                                 f"screenshot and bus log: {artifacts}") from None
        # For a look by eye (kept when KEYWELL_ARTIFACTS names the folder).
        seahorse.screenshot("keychains.png")
        passed.append(True)
    finally:
        seahorse.close()
        watch.close()
