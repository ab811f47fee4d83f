"""Who is calling: keywelld's WhoAmI names real, distinct programs as access control will
(docs/access-control.md): two executables, dbus-send and gdbus, a python script and its
changes, a binary replaced on disk while an old copy still runs, and a Flatpak-style sandbox.

Needs KEYWELLD (scripts/test.sh sets it), gcc with libdbus-1-dev, bwrap, python3-jeepney.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

from identity_helpers import PY_CALLER, PYTHON, Answer, account, exe, flatpak_info, sha256  # noqa: F401 (fixture)

WHO_AM_I = ["--dest=org.keywell.Keychain", "/org/keywell/Keychain", "org.keywell.Keychain1.WhoAmI"]


def test_two_executables_are_two_identities(account):
    a = account.compile_who_am_i("who-a", "a")
    b = account.compile_who_am_i("who-b", "b")
    assert sha256(a) != sha256(b)
    first, second = account.who_am_i([str(a)]), account.who_am_i([str(b)])
    assert first.identity == exe(a)
    assert second.identity == exe(b)
    assert first.strength == second.strength == "weak"
    assert "LD_PRELOAD" in first.reason and "ptrace" in first.reason


def test_dbus_send_and_gdbus_are_named_by_their_real_paths(account):
    sent = account.run(["dbus-send", "--session", "--print-reply=literal", *WHO_AM_I])
    assert sent.split()[0] == exe(shutil.which("dbus-send"))
    called = account.run(["gdbus", "call", "--session", "--dest", "org.keywell.Keychain", "--object-path",
                          "/org/keywell/Keychain", "--method", "org.keywell.Keychain1.WhoAmI"])
    assert f"('{exe(shutil.which('gdbus'))}', 'weak'," in called


def test_a_symlinked_program_is_named_by_its_target(account):
    a = account.compile_who_am_i("who-a", "a")
    link = account.scratch / "link-to-who"
    link.symlink_to(a)
    assert account.who_am_i([str(link)]).identity == exe(a)


def test_a_python_script_is_named_with_its_hash_and_a_change_is_another_identity(account):
    script = account.scratch / "tool.py"
    script.write_text(PY_CALLER)
    python = os.path.realpath(PYTHON)
    before = account.who_am_i([PYTHON, "-u", "tool.py"])
    assert before.identity == f"{exe(python)};script={script};script-sha256={sha256(script)}"
    # Absolute path, and options in front: the same script.
    assert account.who_am_i([PYTHON, "-B", "-X", "dev", str(script)]).identity == before.identity
    script.write_text(PY_CALLER + "# changed\n")
    after = account.who_am_i([PYTHON, "-u", "tool.py"])
    assert after.identity == f"{exe(python)};script={script};script-sha256={sha256(script)}"
    assert after.identity != before.identity


def test_python_without_a_script_file_is_the_interpreter_and_says_so(account):
    package = account.scratch / "callerpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(PY_CALLER)
    module = account.who_am_i([PYTHON, "-m", "callerpkg"])
    assert module.identity == exe(os.path.realpath(PYTHON))
    assert '"callerpkg" (-m)' in module.reason
    inline = account.who_am_i([PYTHON, "-c", PY_CALLER])
    assert inline.identity == exe(os.path.realpath(PYTHON))
    assert "-c" in inline.reason


def test_a_binary_replaced_on_disk_is_a_new_identity_and_the_old_process_keeps_its_own(account):
    a = account.compile_who_am_i("who-a", "a")
    b = account.compile_who_am_i("who-b", "b")
    tool = account.scratch / "tool"
    shutil.copy(a, tool)
    old_hash = sha256(tool)
    assert account.who_am_i([str(tool)]).identity == exe(tool, old_hash)

    # `cp` over a program nobody runs rewrites the same file (same inode): the next run is new.
    shutil.copyfile(b, tool)
    assert account.who_am_i([str(tool)]).identity == exe(tool, sha256(b))
    shutil.copyfile(a, tool)

    # A running program cannot be rewritten (ETXTBSY), so it is replaced the way package managers
    # do: a new file renamed over the path. The old process still runs the old file.
    old = subprocess.Popen([str(tool), "again"], env=account.env, cwd=account.scratch, **account.owner.spawn,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        first = [old.stdout.readline() for _ in range(3)]
        assert Answer.parse("".join(first)).identity == exe(tool, old_hash)
        replacement = account.scratch / "tool.new"
        shutil.copy(b, replacement)
        os.rename(replacement, tool)
        assert account.who_am_i([str(tool)]).identity == exe(tool, sha256(b))
        # The old process, asking on a new connection (so keywelld works it out afresh).
        output, _ = old.communicate("go\n", timeout=120)
        assert old.returncode == 0, output
        assert Answer.parse(output).identity == f"exe:{tool};sha256={old_hash}"
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()


def test_a_process_in_a_flatpak_sandbox_is_its_app_id(account):
    script = account.scratch / "app.py"
    script.write_text(PY_CALLER)
    result = account.run_sandboxed(account.sandbox([PYTHON, str(script)], flatpak_info("org.example.App")))
    assert result.returncode == 0, result
    answer = Answer.parse(result.stdout)
    assert answer.identity == "flatpak:org.example.App"
    assert answer.strength == "strong"
    # The same program outside the sandbox is itself again.
    assert account.who_am_i([PYTHON, str(script)]).identity.startswith("exe:")


def test_a_sandbox_without_flatpak_info_is_an_ordinary_program(account):
    a = account.compile_who_am_i("who-a", "a")
    result = account.run_sandboxed(account.sandbox([str(a)], None), instance=None)
    assert result.returncode == 0, result
    assert Answer.parse(result.stdout).identity == exe(a)


# Opens a connection, forks, and exits: the child keeps the connection and, once told on stdin
# (after the test reaped the parent), asks WhoAmI on it.
HANDED_OVER = PY_CALLER.split("with open_dbus_connection")[0] + '''
import os
connection = open_dbus_connection(bus="SESSION")
child = os.fork()
if child:
    print(child, flush=True)
    os._exit(0)
sys.stdin.readline()
try:
    body = unwrap_msg(connection.send_and_get_reply(new_method_call(address, "WhoAmI"), timeout=60))
    print("\\n".join(body), flush=True)
except DBusErrorResponse as error:
    print("ERROR", error.name, *error.data, flush=True)
'''


def test_a_connection_that_outlived_its_process_is_not_identified(account):
    """The bus knows a connection by the process that opened it. Once that process is gone, the
    connection (kept by a child) has no identity: the pid cannot be pinned any more."""
    output = account.scratch / "handed-over.out"
    with open(output, "w") as sink:
        opener = subprocess.Popen([PYTHON, "-c", HANDED_OVER], env=account.env, cwd=account.scratch, **account.owner.spawn,
                                  stdin=subprocess.PIPE, stdout=sink, text=True)
        opener_pid = opener.pid
        assert opener.wait(timeout=120) == 0
    child = int(output.read_text().split()[0])
    assert child != opener_pid
    opener.stdin.write("go\n")
    opener.stdin.close()
    # The child's answer is a second line in the file (a hang guard, not a timing).
    deadline = time.monotonic() + 120
    while not output.read_text().split("\n", 1)[1].endswith("\n") and time.monotonic() < deadline:
        time.sleep(0.01)
    answer = output.read_text().split("\n", 1)[1]
    assert answer.startswith("ERROR org.keywell.Keychain1.Error.MissingEntitlement"), answer
    assert "changed while it was examined" in answer
