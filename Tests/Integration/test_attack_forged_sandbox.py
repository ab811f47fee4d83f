"""Forged Flatpak sandboxes: a program that is not in Flatpak's sandbox tries to be identified as
a Flatpak app (`flatpak:<app id>`, a strong identity) with a /.flatpak-info of its own making.

keywelld trusts /.flatpak-info as xdg-desktop-portal does (docs/access-control.md "Flatpak"):
a regular file in the caller's root, parsed strictly, naming a valid app id and a Flatpak
instance that is recorded in the user's runtime folder. Anything else is refused outright (the
caller gets no identity at all, rather than an `exe:` one it could share with host programs).
What remains possible is written down and asserted last: a program outside any sandbox can run
bwrap itself and record an instance, exactly as Flatpak does, so `flatpak:` is strong against
sandboxed apps, not against unconfined programs of the same user.

Needs KEYWELLD (scripts/test.sh sets it), bwrap and python3-jeepney.
"""

from __future__ import annotations

import os

from identity_helpers import PY_CALLER, PYTHON, Answer, account, flatpak_info  # noqa: F401 (fixture)
from keywell_helpers import bodies_as_test_user
from security_figures import record

FORGERIES = {
    # The sandbox points /.flatpak-info at a file of its choosing: a symlink would be followed
    # in keywelld's root, not the sandbox's, so it is never followed.
    "symlink": lambda a, script: a.sandbox([PYTHON, str(script)], None,
                                           extra=["--symlink", str(a.scratch / "planted"), "/.flatpak-info"]),
    "directory": lambda a, script: a.sandbox([PYTHON, str(script)], None, extra=["--dir", "/.flatpak-info"]),
    "fifo": lambda a, script: a.sandbox([PYTHON, str(script)], None, extra=["--ro-bind", str(a.scratch / "fifo"), "/.flatpak-info"]),
    "two app groups": lambda a, script: a.sandbox(
        [PYTHON, str(script)], flatpak_info("org.example.App") + "[Application]\nname=org.evil.App\n"),
    "app id with a slash": lambda a, script: a.sandbox([PYTHON, str(script)], flatpak_info("org.example/../App")),
    "instance id with a path": lambda a, script: a.sandbox([PYTHON, str(script)], flatpak_info(instance="../../x")),
    "oversized": lambda a, script: a.sandbox([PYTHON, str(script)], flatpak_info() + "#" * 70000 + "\n"),
}


def test_forged_flatpak_info_files_get_no_identity(account):
    script = account.scratch / "app.py"
    script.write_text(PY_CALLER)
    (account.scratch / "planted").write_text(flatpak_info("org.example.App"))
    os.mkfifo(account.scratch / "fifo")
    refused = 0
    for name, make in FORGERIES.items():
        result = account.run_sandboxed(make(account, script), instance="1984473542")
        assert result.returncode == 3, f"{name}: identified as {result.stdout!r} {result.stderr!r}"
        assert "MissingEntitlement" in result.stdout and "sandbox cannot be trusted" in result.stdout, (name, result.stdout)
        refused += 1
    record("forged /.flatpak-info (symlink, directory, FIFO, duplicate group, bad app or instance id, oversized)",
           f"{refused} of {len(FORGERIES)} refused", "all refused", refused == len(FORGERIES))


def test_an_unrecorded_instance_gets_no_identity(account):
    script = account.scratch / "app.py"
    script.write_text(PY_CALLER)
    # A valid file, but Flatpak never ran this instance: nothing in $XDG_RUNTIME_DIR/.flatpak.
    result = account.run_sandboxed(account.sandbox([PYTHON, str(script)], flatpak_info(instance="777")), instance=None)
    assert result.returncode == 3, result
    assert "instance 777 is not registered" in result.stdout
    # A record naming a process that is gone is no better.
    folder = account.runtime / ".flatpak" / "778"
    folder.mkdir(parents=True)
    (folder / "bwrapinfo.json").write_text('{"child-pid": 2147483000}')
    result = account.run_sandboxed(account.sandbox([PYTHON, str(script)], flatpak_info(instance="778")), instance=None)
    assert result.returncode == 3, result
    assert "no longer running" in result.stdout
    record("/.flatpak-info naming an instance Flatpak never ran", "refused", "refused", True)


def test_an_unconfined_program_can_still_make_its_own_flatpak_sandbox(account):
    """The documented limit: bwrap is available to every program, and the instance record lives
    in the user's own runtime folder. Running bwrap as Flatpak does is enough."""
    script = account.scratch / "app.py"
    script.write_text(PY_CALLER)
    result = account.run_sandboxed(account.sandbox([PYTHON, str(script)], flatpak_info("org.example.Victim")))
    assert result.returncode == 0, result
    assert Answer.parse(result.stdout).identity == "flatpak:org.example.Victim"


# The forgeries are planted as the user's own programs would plant them: each body runs as the test user.
bodies_as_test_user(globals())
