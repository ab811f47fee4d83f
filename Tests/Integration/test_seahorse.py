"""The real Seahorse (GNOME's Passwords and Keys, libsecret inside) on keywelld's Secret Service,
under a real X server (Xvfb): keychains made and deleted with the `keywell` CLI while Seahorse
watches must show up in it, and must not crash it. libsecret updates its cached `Collections`
from `CollectionCreated` / `CollectionDeleted` and crashes if that cache is empty, which a
`PropertiesChanged` that only invalidated `Collections` left it (docs/secret-service.md, "Signals").

No timed waits: Seahorse has handled a `CollectionCreated` once it asks for the new collection's
properties (libsecret makes a proxy for it), which dbus-monitor shows; the bus delivers
keywelld's signals in order, so by then it has handled every earlier one too. Screenshots of the
screen go to $KEYWELL_ARTIFACTS (else a temp folder) when a test fails, and are kept there.

Every password action Seahorse has, done through its widgets as a person would: AT-SPI (the
accessibility bus, read by atspi_driver.py) finds buttons, menus, entries and dialogs by role and
name and clicks them; xdotool clicks where AT-SPI has no action (right-click menus, the eye icon).
Each action is checked by what keywelld holds afterwards (native API, Secret Service reads), and
waits are for positive signals: a widget appearing, a call's answer or a prompt's Completed in
dbus-monitor, keywelld's state turning. That test saves seahorse.png, Keywell's keychains as
Seahorse lists them, to $KEYWELL_ARTIFACTS/seahorse.png (docs/images/seahorse.png is one).
"""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from keywell_helpers import bodies_as_test_user, throwaway_user
from secret_service_helpers import SERVICE_PATH, KeywellBus, built, session  # noqa: F401

TOOLS = ("seahorse", "Xvfb", "xdotool", "import", "dbus-monitor")
# Hang guards only: Seahorse's first start on a busy 2-core machine took 30 s.
START_GUARD = 180
STEP_GUARD = 120


def abstract_socket_inodes(number: int) -> set[str]:
    """The inodes of the sockets listening on display `number`'s abstract name, which X clients
    try before the socket file. Lock files only keep X servers of one /tmp apart; a test run in
    another mount namespace on the same network namespace (another engineer's sandbox) can hold
    the abstract name of the same display, and clients then reach that server instead
    ("cannot open display", seen twice in runs beside other jobs)."""
    name = f"@/tmp/.X11-unix/X{number}"
    with open("/proc/net/unix") as table:
        next(table)
        return {fields[6] for fields in map(str.split, table) if len(fields) >= 8 and fields[7] == name}


def listens_on_its_abstract_socket(pid: int, number: int) -> bool:
    """Whether X server `pid` itself holds display `number`'s abstract name."""
    inodes = set()
    for descriptor in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{descriptor}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return bool(abstract_socket_inodes(number) & inodes)


def start_xvfb(number: int) -> subprocess.Popen | None:
    """Xvfb on display `number`, once it accepts clients on its own sockets; None if it could not."""
    read, write = os.pipe()
    # -noreset: by default an X server resets when its last client leaves, and a client that
    # connects meanwhile is turned away ("cannot open display"). Here at-spi-bus-launcher leaves
    # as Seahorse arrives: three loops of xdotool on one Xvfb lost 16-21 % of their connections
    # without it, none with it.
    server = subprocess.Popen(["Xvfb", f":{number}", "-displayfd", str(write), "-screen", "0", "1280x800x24",
                               "-nolisten", "tcp", "-noreset"], pass_fds=(write,), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    os.close(write)
    said = b""
    deadline = time.monotonic() + START_GUARD
    while not said.endswith(b"\n") and time.monotonic() < deadline:
        ready, _, _ = select.select([read], [], [], 1)
        if ready:
            chunk = os.read(read, 16)
            if not chunk:
                break
            said += chunk
    os.close(read)
    if said.strip() == str(number).encode() and listens_on_its_abstract_socket(server.pid, number):
        return server
    server.kill()
    server.wait(timeout=10)
    return None


@pytest.fixture
def display():
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: run scripts/setup.sh")
    # A display free both here (no lock file) and on the network namespace (no abstract socket),
    # from a range other runs' -displayfd (which counts up from 0) rarely reach.
    server, number = None, 0
    for number in random.sample(range(100, 1000), 40):
        if os.path.exists(f"/tmp/.X{number}-lock") or abstract_socket_inodes(number):
            continue
        server = start_xvfb(number)
        if server is not None:
            break
    if server is None:
        pytest.fail("no display number was free for Xvfb")
    try:
        yield f":{number}"
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
        self.reply_paths: list[str] = []
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

    def mark(self) -> int:
        """Where the lines printed so far end (those still in the pipe included): later waits
        look only after it."""
        while select.select([self.process.stdout], [], [], 0)[0]:
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                break
            self.partial += chunk
            *complete, self.partial = self.partial.split(b"\n")
            self.lines.extend(line.decode(errors="replace") for line in complete)
        return len(self.lines)

    def completed(self, prompt: str, alive, guard: float) -> bool:
        """Waits for the prompt's Completed signal; returns whether it was dismissed."""
        def found(lines: list[str]) -> bool:
            # The signal's line and the one after it, its `dismissed` argument.
            return any(_completes(line, prompt) for line in lines[:-1])
        self.read_until(found, alive, guard, f"Completed from {prompt}")
        index = next(index for index, line in enumerate(self.lines) if _completes(line, prompt))
        return self.lines[index + 1].strip() == "boolean true"

    def answer(self, member: str, alive, guard: float, since: int = 0, path: str | None = None, paths: int = 0) -> str:
        """Waits until some client's call of `member` (on `path`, if given) made after `since` is
        answered; returns "ok" for a method return, else the error's name. An ok reply is awaited
        with its first `paths` object paths (kept in `reply_paths`), which may come in a later read."""
        call: list[tuple[str, str]] = []

        def answered(lines: list[str]) -> bool:
            if not call:
                for line in lines[since:]:
                    if line.startswith("method call ") and line.endswith(f"; member={member}") \
                            and (path is None or f"path={path};" in line):
                        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
                        call.append((fields["sender"], fields["serial"]))
                        break
                if not call:
                    return False
            sender, serial = call[0]
            index = next((index for index in range(since, len(lines)) if _reply_to(lines[index], sender, serial)), None)
            if index is None:
                return False
            # The reply's arguments, one value a line (a prompt's path among them).
            self.reply_paths = []
            for line in lines[index + 1:]:
                if not line.startswith(" "):
                    break
                if line.strip().startswith("object path "):
                    self.reply_paths.append(line.strip().split('"')[1])
            return lines[index].startswith("error ") or len(self.reply_paths) >= paths

        self.read_until(answered, alive, guard, f"an answer to {member}")
        sender, serial = call[0]
        reply = next(line for line in self.lines[since:] if _reply_to(line, sender, serial))
        if reply.startswith("method return "):
            return "ok"
        return next(part.split("=", 1)[1] for part in reply.split() if part.startswith("error_name="))

    def close(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=10)


def _completes(line: str, prompt: str) -> bool:
    return line.startswith("signal ") and f"path={prompt};" in line and line.endswith("member=Completed")


def _reply_to(line: str, sender: str, serial: str) -> bool:
    return (line.startswith("method return ") or line.startswith("error ")) \
        and f"destination={sender} " in line and line.rstrip().endswith(f"reply_serial={serial}")


def _asked_for(path: str):
    """Whether some client called a method on `path` (libsecret's GetAll of a new proxy)."""
    def found(lines: list[str]) -> bool:
        return any(line.startswith("method call ") and f"path={path};" in line for line in lines)
    return found


class Seahorse:
    def __init__(self, bus: KeywellBus, display: str, artifacts: Path, accessible: bool = False) -> None:
        self.display = display
        self.artifacts = artifacts
        self.log = artifacts / "seahorse.log"
        self.env = {**bus.env, "DISPLAY": display, "GSETTINGS_BACKEND": "memory", "GNUPGHOME": str(bus.home / ".gnupg")}
        if not accessible:
            self.env.update(NO_AT_BRIDGE="1", GTK_A11Y="none")
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
    throwaway_user().give(folder)  # the test's body writes there as the test user
    passed = Passed(folder / ".passed")
    yield folder, passed
    if passed and not chosen:
        shutil.rmtree(folder, ignore_errors=True)


class Passed:
    """A test's "I passed" (`append(True)`), kept in a file: the body runs in a child process."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def append(self, _value: bool) -> None:
        self.marker.touch()

    def __bool__(self) -> bool:
        return self.marker.exists()


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


# ------------------------------------------------------------------ every password action, by AT-SPI

DRIVER = Path(__file__).resolve().parent / "atspi_driver.py"
SEAHORSE_APP = "seahorse"


class AccessibilityBus:
    """at-spi-bus-launcher on the test's session bus and display: the bus GTK programs publish their
    widgets on, which the driver reads."""

    LAUNCHER = "/usr/libexec/at-spi-bus-launcher"

    def __init__(self, env: dict, spawn: dict | None = None) -> None:
        """`spawn`: Popen arguments that start it as the session's user (keywell_helpers.Owner)."""
        if not os.access(self.LAUNCHER, os.X_OK):
            pytest.fail("at-spi-bus-launcher is missing: run scripts/setup.sh")
        self.process = subprocess.Popen([self.LAUNCHER, "--launch-immediately"], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                        **(spawn or {}))

    def close(self) -> None:
        try:
            os.killpg(self.process.pid, 15)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)


class Driver:
    """atspi_driver.py on the test's session: finds Seahorse's widgets by role and name, clicks
    them, types into them. `wait` polls the widget tree until what is asked for shows."""

    def __init__(self, seahorse: Seahorse) -> None:
        self.seahorse = seahorse
        # The driver's failures (a widget vanishing mid-walk), for the report when a wait fails.
        self.errors: list[str] = []

    def request(self, op: str, **selector) -> dict:
        """One command, in a driver process of its own (see atspi_driver.py for why)."""
        command = json.dumps({"op": op, "app": SEAHORSE_APP, **selector}) + "\n"
        try:
            done = subprocess.run([sys.executable, str(DRIVER)], input=command, env=self.seahorse.env,
                                  capture_output=True, text=True, timeout=STEP_GUARD)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the AT-SPI driver did not answer {op} {selector} within {STEP_GUARD} s") from None
        if not done.stdout.strip():
            raise AssertionError(f"the AT-SPI driver ended ({done.returncode}): {done.stderr[-2000:]}")
        return json.loads(done.stdout.splitlines()[-1])

    def find(self, **selector) -> list[dict]:
        reply = self.request("find", **selector)
        if not reply["ok"]:
            self.errors.append(reply["error"])
        return reply["found"] if reply["ok"] else []

    def wait(self, what: str, guard: float = STEP_GUARD, **selector) -> dict:
        deadline = time.monotonic() + guard
        while time.monotonic() < deadline:
            if not self.seahorse.alive():
                raise AssertionError(f"Seahorse ended while waiting for {what}")
            found = self.find(**selector)
            if found:
                return found[0]
            time.sleep(0.2)
        raise AssertionError(f"Seahorse never showed {what} within {guard} s; the driver's last errors: {self.errors[-3:]}")

    def wait_gone(self, what: str, guard: float = STEP_GUARD, **selector) -> None:
        deadline = time.monotonic() + guard
        while time.monotonic() < deadline:
            if not self.find(**selector):
                return
            time.sleep(0.2)
        raise AssertionError(f"{what} still showing after {guard} s")

    def act(self, op: str, **selector) -> None:
        reply = self.request(op, **selector)
        assert reply["ok"] and reply.get("done", True), f"{op} {selector}: {reply}"

    def click_at(self, widget: dict, button: int = 1, repeat: int = 1) -> None:
        x, y = widget["x"] + widget["width"] // 2, widget["y"] + widget["height"] // 2
        subprocess.run(["xdotool", "mousemove", "--sync", str(x), str(y), "click", "--repeat", str(repeat), str(button)],
                       env=self.seahorse.env, timeout=STEP_GUARD, check=True)

    def dump(self) -> str:
        reply = self.request("dump")
        return "\n".join(reply.get("lines", [])) if reply["ok"] else reply.get("error", "")



class Keywell:
    """What keywelld holds, read through its native API and its Secret Service (never Seahorse)."""

    def __init__(self, session: KeywellBus) -> None:
        self.session = session
        self.native = session.native()

    def keychains(self) -> list[str]:
        return [str(name) for name in self.native.ListKeychains()]

    def default(self) -> str:
        return str(self.native.GetDefaultKeychain())

    def locked(self, keychain: str) -> bool:
        return bool(self.native.GetInfo(keychain)["locked"])

    def unlock(self, keychain: str, password: str) -> None:
        import dbus
        self.native.Unlock(keychain, dbus.ByteArray(password.encode()))

    def opens_with(self, keychain: str, password: str) -> bool:
        """Locks the keychain, then whether the password unlocks it."""
        import dbus
        self.native.Lock(keychain)
        try:
            self.unlock(keychain, password)
            return True
        except dbus.DBusException:
            return False

    def notes(self) -> dict[str, str]:
        """Label → secret of the items Seahorse makes ("Password": schema org.gnome.keyring.Note)."""
        import secretstorage
        connection = self.session.jeepney()
        found = {}
        for item in secretstorage.search_items(connection, {"xdg:schema": "org.gnome.keyring.Note"}):
            found[item.get_label()] = item.get_secret().decode()
        return found

    def until(self, what: str, check, guard: float = STEP_GUARD):
        """Polls keywelld until `check()` holds (the change Seahorse asked for has landed)."""
        deadline = time.monotonic() + guard
        last = None
        while time.monotonic() < deadline:
            last = check()
            if last:
                return last
            time.sleep(0.2)
        raise AssertionError(f"keywelld never showed {what} within {guard} s (last: {last!r})")


def _sidebar_row(driver: Driver, label: str) -> dict:
    """The sidebar label of a keyring (its row is right-clicked for the keyring's menu). The header
    bar shows the selected keyring's name too: the sidebar's is the leftmost."""
    driver.wait(f"the keyring {label} in the sidebar", role="label", name=label)
    return min(driver.find(role="label", name=label), key=lambda widget: widget["x"])


def _keyring_menu(driver: Driver, keyring: str, entry: str) -> None:
    driver.click_at(_sidebar_row(driver, keyring), button=3)
    driver.wait(f"the menu entry {entry}", role="menu item", name=entry)
    driver.act("do", role="menu item", name=entry, action="click")


def _add_menu(driver: Driver, entry: str) -> None:
    """The "+" button at the top left (a toggle named Menu), then an entry of its popover."""
    buttons = [button for button in driver.find(role="toggle button", name="Menu")]
    assert buttons, f"no + button:\n{driver.dump()}"
    driver.click_at(min(buttons, key=lambda button: button["x"]))
    driver.click_at(driver.wait(f"{entry} in the + menu", role="label", name=entry))


def test_seahorse_does_every_password_action(session, display, artifacts):
    """Seahorse, driven as a person would through its widgets (AT-SPI), on keywelld: each action
    checked by what keywelld holds afterwards. Passwords Seahorse asks keywelld to prompt for go
    through keywelld's pinentry (the scripted one here)."""
    artifacts, passed = artifacts
    keywell_cli = built("KEYWELL")
    # The checks read the items Seahorse makes from this test's own process, another program:
    # the keychains do not enforce access lists (this test is about Seahorse's actions).
    session.create_login(enforce_access=False)
    session.run([keywell_cli, "create-keychain", "-p", "spare-pw", "spare"], check=True)
    session.secret_tool("store", "--label=Mail account", "xdg:schema", "org.gnome.keyring.Note", "app", "mail",
                        input="mail-secret", check=True)
    keywell = Keywell(session)
    watch = BusWatch(session)
    a11y = AccessibilityBus({**session.env, "DISPLAY": display, "GSETTINGS_BACKEND": "memory"})
    # Seahorse looks for the accessibility bus once, when it starts.
    watch.read_until(lambda lines: any('string "org.a11y.Bus"' in line for line in lines), lambda: True, START_GUARD,
                     "the accessibility bus")
    seahorse = Seahorse(session, display, artifacts, accessible=True)
    driver = None
    step = "start"
    try:
        driver = Driver(seahorse)
        window = seahorse.wait_for_window()
        subprocess.run(["xdotool", "windowsize", "--sync", window, "1200", "760"], env=seahorse.env, timeout=STEP_GUARD, check=False)
        try:
            step = "list keyrings and items"
            for keyring in ("login", "spare"):
                driver.wait(f"the keyring {keyring}", START_GUARD, role="label", name=keyring)
            driver.click_at(_sidebar_row(driver, "login"))
            driver.wait("the item Mail account", role="label", name="Mail account")

            step = "create a keyring"
            session.pinentry_answers("work-pw")
            mark = watch.mark()
            _add_menu(driver, "Password keyring")
            driver.wait("the Add password keyring dialog", role="dialog", name="Add password keyring")
            driver.act("text", within="Add password keyring", role="text", text="Work")
            driver.act("do", within="Add password keyring", role="push button", name="Add")
            assert watch.answer("CreateCollection", seahorse.alive, STEP_GUARD, mark) == "ok"
            keywell.until("the keychain Work", lambda: "Work" in keywell.keychains())
            driver.wait("the new keyring Work", role="label", name="Work")
            assert keywell.opens_with("Work", "work-pw")
            session.native().SetSettings("Work", {"enforceAccess": False})  # as the login keychain, above

            step = "set default"
            mark = watch.mark()
            _keyring_menu(driver, "Work", "Set as default")
            assert watch.answer("SetAlias", seahorse.alive, STEP_GUARD, mark) == "ok"
            assert keywell.default() == "Work"

            step = "lock"
            mark = watch.mark()
            keywell.unlock("Work", "work-pw")
            _keyring_menu(driver, "Work", "Lock")
            assert watch.answer("Lock", seahorse.alive, STEP_GUARD, mark, path=SERVICE_PATH) == "ok"
            assert keywell.locked("Work")

            step = "unlock"
            session.pinentry_answers("work-pw")
            mark = watch.mark()
            _keyring_menu(driver, "Work", "Unlock")
            assert watch.answer("Unlock", seahorse.alive, STEP_GUARD, mark, path=SERVICE_PATH, paths=1) == "ok"
            assert not watch.completed(watch.reply_paths[-1], seahorse.alive, STEP_GUARD)
            assert not keywell.locked("Work")
            # The picture of Keywell's keychains in Seahorse (docs/images/seahorse.png comes from it).
            driver.click_at(_sidebar_row(driver, "login"))
            driver.wait("the item Mail account", role="label", name="Mail account")
            shot = seahorse.screenshot("seahorse.png")
            if os.environ.get("KEYWELL_ARTIFACTS") and shot.exists():
                # At a fixed place too, for docs/images/seahorse.png.
                shutil.copyfile(shot, Path(os.environ["KEYWELL_ARTIFACTS"]) / "seahorse.png")

            step = "change a keyring's password"
            session.pinentry_answers("work-pw", "work-pw2")
            mark = watch.mark()
            _keyring_menu(driver, "Work", "Change Password")
            assert watch.answer("ChangeWithPrompt", seahorse.alive, STEP_GUARD, mark, paths=1) == "ok"
            assert not watch.completed(watch.reply_paths[-1], seahorse.alive, STEP_GUARD)
            assert keywell.opens_with("Work", "work-pw2")
            assert not keywell.opens_with("Work", "work-pw")
            keywell.unlock("Work", "work-pw2")

            step = "add a password"
            mark = watch.mark()
            _add_menu(driver, "Password")
            driver.wait("the Add Password dialog", role="dialog", name="Add Password")
            driver.act("text", within="Add Password", role="text", text="Bank")
            driver.act("text", within="Add Password", role="password text", text="bank-secret")
            driver.act("do", within="Add Password", role="push button", name="Add")
            assert watch.answer("CreateItem", seahorse.alive, STEP_GUARD, mark) == "ok"
            assert keywell.notes().get("Bank") == "bank-secret"

            step = "reveal a password"
            # The dialog put it in the default keyring.
            driver.click_at(_sidebar_row(driver, "Work"))
            driver.click_at(driver.wait("the item Bank", role="label", name="Bank"), repeat=2)
            driver.wait("the Item Properties dialog", role="dialog", name="Item Properties")
            entry = driver.wait("the password entry", within="Item Properties", role="password text")
            # The entry's eye icon sits at its right end.
            subprocess.run(["xdotool", "mousemove", "--sync", str(entry["x"] + entry["width"] - 12),
                            str(entry["y"] + entry["height"] // 2), "click", "1"], env=seahorse.env, timeout=STEP_GUARD, check=True)
            driver.wait_gone("the hidden password", within="Item Properties", role="password text")
            revealed = [widget.get("text") for widget in driver.find(within="Item Properties", role="text")]
            assert keywell.notes()["Bank"] in revealed, f"revealed {revealed!r}"

            step = "edit a password"
            mark = watch.mark()
            texts = driver.find(within="Item Properties", role="text")
            description = next(index for index, widget in enumerate(texts) if widget.get("text") == "Bank")
            password = next(index for index, widget in enumerate(texts) if widget.get("text") == "bank-secret")
            driver.act("text", within="Item Properties", role="text", index=description, text="Bank login")
            driver.act("text", within="Item Properties", role="text", index=password, text="bank-secret-2")
            driver.act("do", within="Item Properties", role="push button", name="Close")
            driver.wait("the Save changes question", role="push button", name="OK")
            driver.act("do", role="push button", name="OK")
            keywell.until("the edited item", lambda: keywell.notes().get("Bank login") == "bank-secret-2")
            assert "Bank" not in keywell.notes()

            step = "delete a password"
            mark = watch.mark()
            driver.click_at(driver.wait("the item Bank login", role="label", name="Bank login"), repeat=2)
            driver.wait("the Item Properties dialog", role="dialog", name="Item Properties")
            driver.act("do", within="Item Properties", role="push button", name="Delete Password")
            driver.wait("the delete question", role="push button", name="Delete")
            driver.act("do", role="push button", name="Delete")
            assert watch.answer("Delete", seahorse.alive, STEP_GUARD, mark) == "ok"
            assert "Bank login" not in keywell.notes()

            step = "delete a keyring"
            mark = watch.mark()
            _keyring_menu(driver, "spare", "Delete")
            check = driver.wait("the I understand check box", role="check box", name_contains="I understand")
            driver.act("do", role="check box", name=check["name"], action="click")
            driver.act("do", role="push button", name="Delete")
            assert watch.answer("Delete", seahorse.alive, STEP_GUARD, mark, path=f"{SERVICE_PATH}/collection/spare") == "ok"
            assert "spare" not in keywell.keychains()
            driver.wait_gone("the deleted keyring spare", role="label", name="spare")

            assert seahorse.alive(), f"Seahorse ended ({seahorse.process.returncode}):\n{seahorse.log_text()}"
        except AssertionError as failure:
            seahorse.screenshot("failure.png")
            (artifacts / "bus.log").write_text("\n".join(watch.lines))
            (artifacts / "widgets.txt").write_text(driver.dump() if driver and seahorse.alive() else "")
            raise AssertionError(f"step {step!r}: {failure}\nSeahorse's exit status: {seahorse.process.poll()}\n"
                                 f"Seahorse's output:\n{seahorse.log_text()}\nkeywelld's log:\n{session.daemon_log()[-3000:]}\n"
                                 f"screenshots, bus log and widget tree: {artifacts}") from None
        passed.append(True)
    finally:
        seahorse.close()
        a11y.close()
        watch.close()



# ------------------------------------------------------------------ other programs' items, the padlock

class AccessibleSeahorse:
    """The accessibility bus, Seahorse on it, the AT-SPI driver and dbus-monitor, for one test;
    on failure the screenshot, bus log, widget tree and both programs' output go to `artifacts`."""

    def __init__(self, session: KeywellBus, display: str, artifacts: Path) -> None:
        self.session = session
        self.artifacts = artifacts
        self.watch = BusWatch(session)
        self.a11y = AccessibilityBus({**session.env, "DISPLAY": display, "GSETTINGS_BACKEND": "memory"})
        # Seahorse looks for the accessibility bus once, when it starts.
        self.watch.read_until(lambda lines: any('string "org.a11y.Bus"' in line for line in lines), lambda: True,
                              START_GUARD, "the accessibility bus")
        self.seahorse = Seahorse(session, display, artifacts, accessible=True)
        self.driver = Driver(self.seahorse)
        window = self.seahorse.wait_for_window()
        subprocess.run(["xdotool", "windowsize", "--sync", window, "1200", "760"], env=self.seahorse.env,
                       timeout=STEP_GUARD, check=False)

    def failure(self, step: str, failure: AssertionError) -> AssertionError:
        seahorse = self.seahorse
        seahorse.screenshot("failure.png")
        (self.artifacts / "bus.log").write_text("\n".join(self.watch.lines))
        (self.artifacts / "widgets.txt").write_text(self.driver.dump() if seahorse.alive() else "")
        return AssertionError(f"step {step!r}: {failure}\nSeahorse's exit status: {seahorse.process.poll()}\n"
                              f"Seahorse's output:\n{seahorse.log_text()}\nkeywelld's log:\n{self.session.daemon_log()[-3000:]}\n"
                              f"screenshots, bus log and widget tree: {self.artifacts}")

    def close(self) -> None:
        self.seahorse.close()
        self.a11y.close()
        self.watch.close()


def _access_questions(session) -> list[str]:
    return [line for line in session.pinentry_lines() if line.startswith("CONFIRM")]


def _open_item(ui: AccessibleSeahorse, label: str) -> None:
    """Double-clicks the item: its Item Properties dialog opens, and Seahorse asks for the secret."""
    ui.driver.click_at(ui.driver.wait(f"the item {label}", role="label", name=label), repeat=2)
    ui.driver.wait("the Item Properties dialog", role="dialog", name="Item Properties")


def _reveal(ui: AccessibleSeahorse) -> list[str]:
    """Clicks the password entry's eye icon (its right end); the texts of the dialog then."""
    driver = ui.driver
    entry = driver.wait("the password entry", within="Item Properties", role="password text")
    subprocess.run(["xdotool", "mousemove", "--sync", str(entry["x"] + entry["width"] - 12),
                    str(entry["y"] + entry["height"] // 2), "click", "1"], env=ui.seahorse.env, timeout=STEP_GUARD, check=True)
    driver.wait_gone("the hidden password", within="Item Properties", role="password text")
    return [widget.get("text", "") for widget in driver.find(within="Item Properties", role="text")]


def test_seahorse_reveals_another_programs_password_after_the_question(session, display, artifacts):
    """Items secret-tool made trust secret-tool alone. Seahorse reads a password with GetSecret
    only (libsecret's secret_item_load_secret, when Item Properties opens), never Unlock on the
    item, and keeps a failed read for the dialog's life: the question is asked inside GetSecret
    (docs/secret-service.md, "GetSecret and Seahorse"). Deny: IsLocked, an empty field, nothing
    of the secret on screen; Allow: the password in Seahorse's field, and (the items trust
    secret-tool alone: one list) a third item's too, with no further question."""
    artifacts, passed = artifacts
    session.create_login()
    for label, secret in (("Mail account", "mail-secret"), ("Bank account", "bank-secret"), ("Card account", "card-secret")):
        session.secret_tool("store", f"--label={label}", "xdg:schema", "org.gnome.keyring.Note", "app", label,
                            input=secret, check=True)
    ui = AccessibleSeahorse(session, display, artifacts)
    driver, watch, seahorse = ui.driver, ui.watch, ui.seahorse
    step = "start"
    try:
        step = "list the items"
        driver.wait("the keyring login", START_GUARD, role="label", name="login")
        driver.click_at(_sidebar_row(driver, "login"))
        driver.wait("the item Mail account", role="label", name="Mail account")
        assert _access_questions(session) == [], "listing items asked something"

        step = "deny"
        session.pinentry_answers("deny")
        mark = watch.mark()
        _open_item(ui, "Mail account")
        assert watch.answer("GetSecret", seahorse.alive, STEP_GUARD, mark) == "org.freedesktop.Secret.Error.IsLocked"
        denied_at = time.monotonic()
        questions = _access_questions(session)
        assert len(questions) == 1, session.pinentry_lines()
        # Seahorse by its desktop entry's name.
        assert any(line.startswith("SETDESC") and "“Passwords and Keys” wants to use “Mail account”" in line
                   for line in session.pinentry_lines()), session.pinentry_lines()
        # Seahorse greys out (no "sensitive" state) a field it has no secret for: its eye cannot be clicked.
        entry = driver.wait("the password entry", within="Item Properties", role="password text")
        assert entry.get("text", "") == "" and "sensitive" not in entry["states"], entry
        shown = [widget.get("text", "") for widget in driver.find(within="Item Properties", role="text")]
        assert not any("mail-secret" in text for text in shown) and "mail-secret" not in driver.dump(), shown
        # The denial is logged, with the program and the item (docs/access-control.md).
        assert any("access denied" in line and "Mail account" in line and "exe:/usr/bin/seahorse" in line
                   for line in session.daemon_log().splitlines()), session.daemon_log()[-2000:]
        driver.act("do", within="Item Properties", role="push button", name="Close")
        driver.wait_gone("the Item Properties dialog", role="dialog", name="Item Properties")

        step = "allow"
        # A Deny holds for the connection's requests within the burst window (3 s,
        # docs/access-control.md "No storm"): the next item is asked about after it.
        time.sleep(max(0.0, 3.5 - (time.monotonic() - denied_at)))
        session.pinentry_answers("allow")
        mark = watch.mark()
        _open_item(ui, "Bank account")
        assert watch.answer("GetSecret", seahorse.alive, STEP_GUARD, mark) == "ok"
        assert len(_access_questions(session)) == 2, session.pinentry_lines()
        assert "bank-secret" in _reveal(ui)
        assert seahorse.alive(), f"Seahorse ended ({seahorse.process.returncode}):\n{seahorse.log_text()}"
        # The question said the answer covers the other item secret-tool saved (the same list,
        # docs/access-control.md "One answer per program and list")…
        assert any(line.startswith("SETDESC") and "“Bank account”" in line and "and the 2 other items “secret-tool” saved there" in line
                   for line in session.pinentry_lines()), session.pinentry_lines()
        driver.act("do", within="Item Properties", role="push button", name="Close")
        driver.wait_gone("the Item Properties dialog", role="dialog", name="Item Properties")
        # …so a third is revealed with no further question. (Not the item denied before:
        # Seahorse keeps a failed read for as long as it runs and never asks for it again.)
        step = "reveal the third item"
        mark = watch.mark()
        _open_item(ui, "Card account")
        assert watch.answer("GetSecret", seahorse.alive, STEP_GUARD, mark) == "ok"
        assert "card-secret" in _reveal(ui)
        assert len(_access_questions(session)) == 2, session.pinentry_lines()
        # secret-tool's own read still works, nothing changed.
        assert session.secret_tool("lookup", "app", "Mail account").stdout == b"mail-secret"
    except AssertionError as failure:
        raise ui.failure(step, failure) from None
    finally:
        ui.close()
    passed.append(True)


def _padlock(ui: AccessibleSeahorse, keyring: str) -> Path:
    """A picture of the keyring's sidebar padlock (its row's only button), the pointer away from it."""
    row = _sidebar_row(ui.driver, keyring)
    buttons = [button for button in ui.driver.find(role="push button", name="")
               if abs(button["y"] + button["height"] // 2 - (row["y"] + row["height"] // 2)) < row["height"]
               and button["x"] > row["x"]]
    assert len(buttons) == 1, f"padlock buttons of {keyring}: {buttons}"
    button = buttons[0]
    subprocess.run(["xdotool", "mousemove", "--sync", "1100", "700"], env=ui.seahorse.env, timeout=STEP_GUARD, check=True)
    shot = ui.seahorse.screenshot(f"padlock-{time.monotonic_ns()}.png")
    crop = shot.with_suffix(".crop.png")
    subprocess.run(["convert", str(shot), "-crop", f"{button['width']}x{button['height']}+{button['x']}+{button['y']}",
                    "+repage", str(crop)], timeout=STEP_GUARD, check=True)
    return crop


def _pixels_apart(first: Path, second: Path) -> int:
    """How many pixels of two padlock pictures differ by more than 10 %: the row's blue shifts
    by a shade once it has keyboard focus (0 then); the open and the closed padlock differ by
    about 50 of their 676."""
    compared = subprocess.run(["compare", "-metric", "AE", "-fuzz", "10%", str(first), str(second), "null:"],
                              capture_output=True, text=True, timeout=STEP_GUARD)
    return int(float(compared.stderr.strip().split()[0]))


def _same_picture(first: Path, second: Path) -> bool:
    return _pixels_apart(first, second) <= 5


def _other_picture(first: Path, second: Path) -> bool:
    return _pixels_apart(first, second) >= 20


def _menu_offers(ui: AccessibleSeahorse, keyring: str, entry: str) -> bool:
    """Whether the keyring's right-click menu shows `entry` (Lock or Unlock: Seahorse reads the
    collection's cached `Locked` as the menu opens); the menu is closed again."""
    ui.driver.click_at(_sidebar_row(ui.driver, keyring), button=3)
    ui.driver.wait("the keyring menu", role="menu item", name="Delete")
    offered = bool(ui.driver.find(role="menu item", name=entry))
    subprocess.run(["xdotool", "key", "Escape"], env=ui.seahorse.env, timeout=STEP_GUARD, check=True)
    ui.driver.wait_gone("the keyring menu", role="menu item", name="Delete")
    return offered


def test_seahorse_shows_the_lock_state_after_locks_and_unlocks(session, display, artifacts):
    """Locked and unlocked from outside (`keywell`) and from Seahorse: its page (the items, or
    "Keyring is locked" with an Unlock button) and its menu follow keywelld's PropertiesChanged of
    the collection's `Locked`; its sidebar padlock, which Seahorse redraws only after its own Lock
    or Unlock, shows the state that call left, read from that same property (sent before the
    prompt's Completed). Seahorse 43 does not redraw the padlock for a change made elsewhere,
    with gnome-keyring either (docs/secret-service.md, "Signals")."""
    artifacts, passed = artifacts
    keywell_cli = built("KEYWELL")
    session.create_login()
    session.run([keywell_cli, "create-keychain", "-p", "work-pw", "Work"], check=True)
    session.native().SetDefaultKeychain("Work")
    session.secret_tool("store", "--label=Work item", "app", "work", input="work-secret", check=True)
    ui = AccessibleSeahorse(session, display, artifacts)
    driver, watch, seahorse = ui.driver, ui.watch, ui.seahorse
    step = "start"
    try:
        driver.wait("the keyring Work", START_GUARD, role="label", name="Work")
        driver.click_at(_sidebar_row(driver, "Work"))
        driver.wait("the item Work item", role="label", name="Work item")
        unlocked_padlock = _padlock(ui, "Work")
        assert _menu_offers(ui, "Work", "Lock")

        step = "locked from outside"
        session.run([keywell_cli, "lock-keychain", "Work"], check=True)
        driver.wait("the locked keyring's Unlock button", role="push button", name="Unlock")
        driver.wait_gone("the item of the locked keyring", role="label", name="Work item")
        assert _menu_offers(ui, "Work", "Unlock")

        step = "unlocked from outside"
        session.run([keywell_cli, "unlock-keychain", "-p", "work-pw", "Work"], check=True)
        driver.wait("the item Work item", role="label", name="Work item")
        assert _menu_offers(ui, "Work", "Lock")

        step = "locked in Seahorse"
        mark = watch.mark()
        _keyring_menu(driver, "Work", "Lock")
        assert watch.answer("Lock", seahorse.alive, STEP_GUARD, mark, path=SERVICE_PATH) == "ok"
        driver.wait("the locked keyring's Unlock button", role="push button", name="Unlock")
        assert _other_picture(_padlock(ui, "Work"), unlocked_padlock), "the padlock still shows Work unlocked"

        step = "unlocked in Seahorse"
        session.pinentry_answers("work-pw")
        mark = watch.mark()
        _keyring_menu(driver, "Work", "Unlock")
        assert watch.answer("Unlock", seahorse.alive, STEP_GUARD, mark, path=SERVICE_PATH, paths=1) == "ok"
        prompt = watch.reply_paths[-1]
        assert not watch.completed(prompt, seahorse.alive, STEP_GUARD)
        # The collection's new Locked reached libsecret's cache before Completed did.
        completed = next(index for index, line in enumerate(watch.lines) if _completes(line, prompt))
        changed = [index for index, line in enumerate(watch.lines[mark:completed], mark)
                   if "member=PropertiesChanged" in line and f"path={SERVICE_PATH}/collection/Work;" in line]
        assert changed, "no PropertiesChanged of the collection before Completed"
        driver.wait("the item Work item", role="label", name="Work item")
        assert _same_picture(_padlock(ui, "Work"), unlocked_padlock), "the padlock still shows Work locked"
        assert _menu_offers(ui, "Work", "Lock")
    except AssertionError as failure:
        raise ui.failure(step, failure) from None
    finally:
        ui.close()
    passed.append(True)


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
