"""The Secret Service clients' own test suites, run against keywelld: SecretStorage's (unittest)
and python-keyring's SecretService backend tests (pytest), from the PyPI sdists of the installed
Debian versions (scripts/upstream-tests.sh fetches them, pinned by sha256, into .build-upstream/).

Each runs as a subprocess of the system python3, importing the installed packages, on a private
session bus where keywelld is D-Bus activated, after the login keychain was made the way
pam_keywell makes it at a user's first login (default keychain, unlocked): the state a real
session is in. A failure is a conformance bug of keywelld. Each suite must also run at least a
known number of tests, so one that collects nothing fails.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from keywell_helpers import bodies_as_test_user
from secret_service_helpers import session  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".build-upstream"
SECRETSTORAGE = CACHE / "SecretStorage-3.3.3"
KEYRING = CACHE / "keyring-23.9.3"


@pytest.fixture(scope="module", autouse=True)
def upstream_tests():
    """The suites, fetched now if scripts/setup.sh has not (needs PyPI)."""
    if not (SECRETSTORAGE / "tests").is_dir() or not (KEYRING / "tests").is_dir():
        fetched = subprocess.run(["bash", str(REPO / "scripts/upstream-tests.sh")], capture_output=True, text=True,
                                 timeout=300)
        assert fetched.returncode == 0, f"scripts/upstream-tests.sh failed:\n{fetched.stdout}{fetched.stderr}"


def run_suite(session, args: list[str], cwd: Path) -> str:
    result = session.run(["/usr/bin/python3", *args], timeout=600, env={"PYTHONDONTWRITEBYTECODE": "1"},
                         cwd=cwd)
    output = result.stdout.decode(errors="replace") + result.stderr.decode(errors="replace")
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{output[-8000:]}\ndaemon log:\n{session.daemon_log()[-3000:]}"
    return output


def test_secretstorage_suite(session):
    session.create_login()
    # unittest, as the suite's own run_tests.py runs it, from the folder that holds only `tests`
    # (so `import secretstorage` is the installed package). The mocked-server tests
    # (MockCollectionTest, LockingUnlockingTest) skip themselves on the real bus name: they need
    # the suite's mock service, not a Secret Service.
    output = run_suite(session, ["-m", "unittest", "discover", "-v", "-s", "tests", "-t", "."], SECRETSTORAGE)
    ran = re.search(r"^Ran (\d+) tests?", output, re.MULTILINE)
    assert ran, output[-3000:]
    assert re.search(r"^OK\b", output, re.MULTILINE), output[-3000:]
    skipped = re.search(r"skipped=(\d+)", output)
    executed = int(ran.group(1)) - (int(skipped.group(1)) if skipped else 0)
    # 3.3.3: 26 tests, 6 of them for the mock only.
    assert executed >= 20, output[-3000:]
    for name in ("test_double_deleting", "test_non_existing_item", "test_non_existing_collection",
                 "test_create_empty_item", "test_modified"):
        assert re.search(rf"^{name} .* ok$", output, re.MULTILINE), f"{name} did not pass:\n{output[-3000:]}"


def test_keyring_secretservice_suite(session):
    session.create_login()
    # The backend tests store in the in-memory `session` collection (preferred_collection).
    # `-c /dev/null`: none of the sdist's or this repository's pytest settings apply.
    output = run_suite(session, ["-m", "pytest", "-c", "/dev/null", "--rootdir", ".", "-p", "no:cacheprovider", "-v",
                                 "-rs", "tests/backends/test_SecretService.py"], KEYRING)
    passed = re.search(r"(\d+) passed", output)
    assert passed, output[-3000:]
    assert not re.search(r"\d+ (failed|error)", output), output[-3000:]
    # 23.9.3: 12 backend tests and 1 unit test, none skipped.
    assert int(passed.group(1)) >= 13 and "skipped" not in output, output[-3000:]
    assert "test_password_set_get PASSED" in output and "test_delete_present PASSED" in output


# These tests call keywelld from this process too: each body runs as the test user.
bodies_as_test_user(globals())
