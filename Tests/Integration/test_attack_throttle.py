"""Attack: guessing a keychain's password around the daemon's throttle.

The throttle belongs to the keychain's identity (in its header), so copies of the file under
other names share one count; and every way in that checks a password (the native `Unlock` and
`ChangePassword`, the control socket's `O` and `P`, the Secret Service's unlock prompt) counts
against it and is refused inside a delay. A refused attempt says so in its message
("too many wrong passwords for …"); every other wrong answer was a real check.

The daemon runs with its real 1 s first delay (doubling, 30 s cap) and the fast test KDF, so
checks are cheap and only the throttle stands in the way. The bound each test asserts follows
from the schedule and the time the attack actually took: the k-th check (k ≥ 3) cannot come
before 2^(k-3) - 1 s, so T seconds allow at most 3 + log2(T + 1) checks. That every door shares
one count is checked on the daemon as shipped (no test switch): wrong passwords through one door
after another, under two names, raise the delay step by step (1, 2, 4, 8, 16 s), which only one
shared count can do; then the right password is refused through every door inside the last
delay, which is long enough not to depend on how fast the machine is.
"""

from __future__ import annotations

import math
import os
import shutil
import socket
import struct
import time

import dbus
import secretstorage

from keywell_helpers import bodies_as_test_user
from secret_service_helpers import LOGIN_PASSWORD, session  # noqa: F401
from security_figures import record

REFUSAL = "too many wrong passwords for "
RIGHT = "the-right-password"


def allowed_checks(seconds: float) -> int:
    """The most real checks the schedule lets through in `seconds` (the 30 s cap not reached)."""
    return 3 + int(math.floor(math.log2(seconds + 1)))


def keychain_file(session, name: str) -> str:
    return str(session.home / ".local/share/keywell/keychains" / f"{name}.keychain-db")


def wrong_unlock(native, name: str, attempt: int) -> str:
    try:
        native.Unlock(name, dbus.ByteArray(f"guess-{attempt}".encode()))
    except dbus.DBusException as error:
        assert error.get_dbus_name().endswith(".AuthFailed"), error
        return error.get_dbus_message()
    raise AssertionError("a wrong password unlocked the keychain")


def control(session, op: str, *fields: bytes) -> tuple[int, str]:
    """One request on the daemon's control socket, as pam_keywell.so sends it."""
    request = b"KWC1" + op.encode() + bytes([len(fields)])
    for field in fields:
        request += struct.pack(">I", len(field)) + field
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(30)
        connection.connect(str(session.runtime / "keywell" / "control"))
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(4096):
            answer += chunk
    assert answer[:4] == b"KWC1", answer
    status, length = struct.unpack(">iI", answer[4:12])
    return status, answer[12:12 + length].decode()


def test_copies_of_a_keychain_share_one_throttle(session):
    native = session.native()
    native.CreateKeychain("target", dbus.ByteArray(RIGHT.encode()))
    native.Lock("target")
    names = ["target"] + [f"copy{n}" for n in range(1, 6)]
    for name in names[1:]:
        shutil.copyfile(keychain_file(session, "target"), keychain_file(session, name))
        os.chmod(keychain_file(session, name), 0o600)  # a keychain file is the user's alone (docs/file-format.md)
    assert set(names) <= set(native.ListKeychains())

    attempts = checks = 0
    start = time.monotonic()
    while time.monotonic() - start < 10:
        message = wrong_unlock(native, names[attempts % len(names)], attempts)
        attempts += 1
        checks += REFUSAL not in message
    elapsed = time.monotonic() - start
    bound = allowed_checks(elapsed)
    record("5 copies of a keychain (6 names), wrong passwords round-robin through Unlock for 10 s",
           f"{checks} real checks of {attempts} attempts", "≤ 8", checks <= 8)
    assert checks <= bound, f"{checks} real checks of {attempts} attempts in {elapsed:.1f} s across {len(names)} copies"


def test_control_socket_open_and_change_password_are_throttled(session):
    session.create_login(RIGHT)
    native = session.native()
    native.Lock("login")

    attempts = checks = 0
    start = time.monotonic()
    while time.monotonic() - start < 10:
        guess = f"guess-{attempts}".encode()
        status, message = control(session, "O", guess) if attempts % 2 == 0 else control(session, "P", guess, b"mine")
        assert status == -25293, (status, message)  # errSecAuthFailed
        attempts += 1
        checks += REFUSAL not in message
    elapsed = time.monotonic() - start
    record("wrong passwords through the control socket's O and P, alternating, for 10 s",
           f"{checks} real checks of {attempts} attempts", "≤ 8", checks <= 8)
    assert checks <= allowed_checks(elapsed), f"{checks} real checks of {attempts} attempts in {elapsed:.1f} s"


def test_secret_service_prompt_is_throttled(session):
    session.create_login(LOGIN_PASSWORD)
    session.native().Lock("login")
    connection = session.jeepney()
    collection = secretstorage.get_default_collection(connection)

    prompts, per_prompt = 4, 5
    start = time.monotonic()
    for prompt in range(prompts):
        session.pinentry_answers(*[f"guess-{prompt}-{n}" for n in range(per_prompt)])
        assert collection.unlock() is True, "the prompt gives up after its tries (dismissed)"
    elapsed = time.monotonic() - start
    attempts = prompts * per_prompt
    checks = session.daemon_log().count('wrong password for keychain "login" in a Secret Service prompt')
    dialog = "\n".join(session.pinentry_lines())
    record("wrong passwords typed into Secret Service unlock prompts (4 prompts × 5 tries)",
           f"{checks} real checks of {attempts} attempts", "≤ 8", checks <= 8)
    assert sum(line == "GETPIN" for line in session.pinentry_lines()) == attempts
    assert checks <= allowed_checks(elapsed), f"{checks} real checks of {attempts} attempts in {elapsed:.1f} s"
    assert "Too many wrong passwords" in dialog, "the dialog says why a password was not checked"


NEXT_ATTEMPT = "next attempt allowed in "


def started_delay(message: str) -> float:
    """The delay (in seconds) a wrong password's message says it started ("… in 4 s")."""
    assert REFUSAL not in message, f"refused unchecked, not counted: {message}"
    assert NEXT_ATTEMPT in message, f"no delay started: {message}"
    return float(message.split(NEXT_ATTEMPT, 1)[1].split(" s", 1)[0])


def test_every_door_counts_against_one_keychain_identity(session):
    session.create_login(RIGHT)
    native = session.native()
    native.Lock("login")
    shutil.copyfile(keychain_file(session, "login"), keychain_file(session, "copy"))
    os.chmod(keychain_file(session, "copy"), 0o600)

    # Wrong passwords through each door and name in turn; each is a real check (the delay before
    # it is waited out), and each raises the one shared count. `O` comes among the free ones: a
    # wrong login password there answers that `login` drifted, not with the delay it started.
    unlock_copy = lambda attempt: wrong_unlock(native, "copy", attempt)  # noqa: E731
    unlock_login = lambda attempt: wrong_unlock(native, "login", attempt)  # noqa: E731
    open_session = lambda attempt: control(session, "O", f"guess-{attempt}".encode())  # noqa: E731
    change = lambda attempt: control(session, "P", f"guess-{attempt}".encode(), b"mine")  # noqa: E731
    doors = [unlock_copy, open_session, change, unlock_login, change, unlock_copy, change]
    delays = []
    for attempt, door in enumerate(doors):
        answer = door(attempt)
        if isinstance(answer, tuple):
            status, answer = answer
            assert status == -25293, (status, answer)  # errSecAuthFailed
        if attempt < 2:
            assert REFUSAL not in answer and NEXT_ATTEMPT not in answer, f"a free failure: {answer}"
            continue
        delays.append(started_delay(answer))
        if attempt < 6:
            time.sleep(delays[-1] + 0.3)
    assert delays == [1, 2, 4, 8, 16], f"the doors do not share one count: delays {delays}"

    # Now the right password is refused, unchecked, whichever way it comes.
    status, message = control(session, "O", RIGHT.encode())
    assert status == -25293 and REFUSAL in message, (status, message)
    for name in ("login", "copy"):
        try:
            native.Unlock(name, dbus.ByteArray(RIGHT.encode()))
            raise AssertionError(f"Unlock({name}) was checked inside the delay")
        except dbus.DBusException as error:
            assert REFUSAL in error.get_dbus_message(), error
    session.pinentry_answers(RIGHT)
    collection = secretstorage.get_default_collection(session.jeepney())
    assert collection.unlock() is True, "the prompt's right password was refused too; it gives up"
    assert "Too many wrong passwords" in "\n".join(session.pinentry_lines())
    assert bool(native.GetInfo("login")["locked"]) and bool(native.GetInfo("copy")["locked"])


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
