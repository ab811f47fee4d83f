#!/usr/bin/env bash
# The main job: installs Keywell (scripts/install.sh), makes sure this user has a session bus,
# and gives them a working login keychain: created on first run, unlocked when a later run finds it
# locked (both ask for its password on the terminal, or read it from standard input), used once, and
# left running for them.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi
$sudo env PREFIX="${PREFIX:-/usr/local}" bash scripts/install.sh
bin="${PREFIX:-/usr/local}/bin"
export PATH="$bin:$PATH"

# A desktop session already has a runtime folder and a session bus; a bare ssh or root shell may
# have neither, so make them the way logind and dbus-user-session would.
uid="$(id -u)"
USER="${USER:-$(id -un)}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/run/user/$uid}"
if [ ! -d "$XDG_RUNTIME_DIR" ]; then
  $sudo install -d -m 0700 -o "$uid" -g "$(id -g)" "$XDG_RUNTIME_DIR"
fi
if [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ]; then
  export DBUS_SESSION_BUS_ADDRESS="unix:path=$XDG_RUNTIME_DIR/bus"
  if ! dbus-send --session --dest=org.freedesktop.DBus --type=method_call --print-reply \
       / org.freedesktop.DBus.Peer.Ping >/dev/null 2>&1; then
    rm -f "$XDG_RUNTIME_DIR/bus"
    dbus-daemon --session --address="$DBUS_SESSION_BUS_ADDRESS" --fork --print-pid >/dev/null
    echo "run: started a session bus at $XDG_RUNTIME_DIR/bus"
  fi
fi

# Created on the first run; unlocked (asking for its password) when it is locked on a later one.
source scripts/lib/login-keychain.sh
ensure_login_keychain

echo "run: keychains in your search list:"
keywell list-keychains
keywell show-keychain-info login
# The demo item trusts both programs that read it below (-T), so neither is asked or refused:
# an item otherwise trusts only the program that made it (docs/access-control.md).
account="${USER:-$(id -un)}"
trusted=(-T "$(command -v keywell)")
if command -v secret-tool >/dev/null; then trusted+=(-T "$(command -v secret-tool)"); fi
printf 'keywell-demo-secret\nkeywell-demo-secret\n' |
  keywell add-generic-password -U -a "$account" -s keywell-demo -l "Keywell demo" "${trusted[@]}" -w
echo "run: stored and read back a password: $(keywell find-generic-password -a "$account" -s keywell-demo -w)"
if command -v secret-tool >/dev/null; then
  echo "run: the same item through the Secret Service (secret-tool): $(secret-tool lookup service keywell-demo account "$account" 2>/dev/null || echo '(not available)')"
fi
cat <<MSG

Keywell is running. In this shell:
  export DBUS_SESSION_BUS_ADDRESS='$DBUS_SESSION_BUS_ADDRESS'
  keywell find-generic-password -s keywell-demo -w
  keywell help
MSG
