"""An app asks keywelld for another app's portal secret by going around xdg-desktop-portal.

The Secret portal's backend is told the app id by xdg-desktop-portal, which reads it from the
caller's sandbox. Many Flatpak apps may also talk to org.freedesktop.secrets (their manifests
say --talk-name=org.freedesktop.secrets, from before the portal), and keywelld answers the
backend interface on that name too (gnome-keyring's portal file routes there). Such an app,
sandboxed as org.example.Mallory, calls org.freedesktop.impl.portal.Secret.RetrieveSecret
itself, on org.freedesktop.secrets and on Keywell's backend name, claiming to be
org.example.App, and passes its own pipe. keywelld must refuse (AccessDenied: only the
frontend's connection is served) and write nothing into the pipe; the victim's secret, fetched
through the portal, stays unknown to the attacker.
"""

from __future__ import annotations

from portal_helpers import BACKEND, portal  # noqa: F401 (fixture)
from secret_service_helpers import SECRETS
from security_figures import record

VICTIM = "org.example.App"
ATTACKER = "org.example.Mallory"
ACCESS_DENIED = "org.freedesktop.DBus.Error.AccessDenied"


def test_an_app_cannot_take_another_apps_secret_by_calling_the_backend_itself(portal):
    victim = portal.retrieve(VICTIM, "victim")
    assert victim["response"] == 0 and len(bytes.fromhex(victim["secret"])) == 64

    attempts = refused = 0
    for name in (SECRETS, BACKEND):
        attempts += 1
        stolen = portal.retrieve(ATTACKER, f"steal{attempts}", "--direct", name, VICTIM)
        if stolen["error"] == ACCESS_DENIED and stolen["secret"] == "":
            refused += 1
        assert stolen["error"] == ACCESS_DENIED, stolen
        assert stolen["secret"] == "", "the backend wrote a secret for a caller that is not the portal"
    record("Secret portal: an app calls the backend directly claiming another app's id",
           f"{refused}/{attempts} refused, 0 bytes written", "every call refused", refused == attempts)
    assert "which is not org.freedesktop.portal.Desktop" in portal.bus.daemon_log()

    # The victim's secret did not change.
    assert portal.retrieve(VICTIM, "victim_again")["secret"] == victim["secret"]
