"""Pieces the integration tests share whatever they test: the built binaries they are pointed at,
the private session bus configuration, and (for the PAM tests) the `module` fixture and the
body of their `kit` fixture.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pam_helpers import Kit, SyslogCapture, module_path, require_root_and_tools


def built(variable: str, what: str = "binary", refuse_writable: bool = False) -> str:
    """The absolute path in the environment variable `variable`, which must name an executable
    file (the built `what`); with `refuse_writable`, one that others cannot write to either,
    since pam_keywell refuses to start such a program. Fails the test otherwise."""
    path = os.environ.get(variable)
    if not path:
        pytest.fail(f"{variable} is not set: point it at the built {what} (scripts/test.sh does)")
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        pytest.fail(f"{variable}={path} is not an executable file")
    if refuse_writable and os.stat(path).st_mode & 0o022:
        pytest.fail(f"{path} is writable by others; pam_keywell refuses to start it")
    return os.path.abspath(path)


def session_bus_config(socket: str | Path, services: str | Path, doctype: bool = True,
                       allow_user: bool = False) -> str:
    """A session bus configuration: listening on the unix socket `socket`, activating from the
    folder `services`, letting everyone send, eavesdrop and own any name (and, with
    `allow_user`, connect whoever they are)."""
    header = ('<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"\n'
              ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n') if doctype else ""
    users = '    <allow user="*"/>\n' if allow_user else ""
    return f"""{header}<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{services}</servicedir>
  <policy context="default">
{users}    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


@pytest.fixture(scope="session")
def module():
    """The built pam_keywell.so, once root and the tools the PAM tests need are checked."""
    require_root_and_tools()
    return module_path()


@pytest.fixture(scope="session")
def keywelld():
    """The built keywelld for PAM tests that start the real daemon (root runs it as the user, so
    a binary others could write is refused)."""
    return built("KEYWELLD", "keywelld", refuse_writable=True)


@pytest.fixture
def real_daemon_kit(module, keywelld):
    """A PAM test's Kit whose logins may start the real keywelld."""
    yield from open_kit(module)


@pytest.fixture
def real_daemon_stack(real_daemon_kit, keywelld):
    """A PAM service stack (pam_unix + pam_keywell) that starts the real keywelld."""
    return real_daemon_kit.stack(daemon=keywelld)


def open_kit(module: str):
    """The body of a PAM test's `kit` fixture (`yield from open_kit(module)`): a Kit over the
    module with syslog captured, checked for leaks after a test that passed, always closed."""
    k = Kit(module, SyslogCapture())
    try:
        yield k
        k.assert_no_leaks()
    finally:
        k.close()
