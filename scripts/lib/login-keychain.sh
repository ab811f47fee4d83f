# Sourced by scripts/run.sh (and its test): gives this user a login keychain that is there and
# unlocked. Needs `keywell` on PATH and a session bus in DBUS_SESSION_BUS_ADDRESS.
#
# First run: creates it, asking for its password on the terminal or reading one line of standard
# input. Later runs with `login` locked (the daemon restarted, the user locked it, no PAM unlock):
# asks for its password the same way and unlocks it, up to three tries on a terminal.

# Whether `login` is locked. show-keychain-info exits 36 for a locked keychain even with --json,
# so its output is read whatever the status (a pipe under pipefail would take that status).
keywell_login_is_locked() {
  local info
  info="$(keywell show-keychain-info --json login 2>/dev/null || true)"
  case "$info" in
    *'"locked":true'* | *'"locked": true'*) return 0 ;;
    *) return 1 ;;
  esac
}

ensure_login_keychain() {
  local password tries
  if ! keywell login-keychain >/dev/null 2>&1; then
    echo "run: creating your login keychain. Choose its password (use your login password, so that"
    echo "     pam_keywell unlocks it when you log in)."
    if [ -t 0 ]; then
      keywell create-keychain login
    else
      # keywell asks twice (as security does); give it the one line we were handed, twice.
      # printf is a shell builtin: the password never reaches an argv.
      IFS= read -r password || true
      printf '%s\n%s\n' "$password" "$password" | keywell create-keychain login
      unset password
    fi
    return
  fi
  keywell_login_is_locked || return 0
  echo "run: your login keychain is locked; enter its password to unlock it."
  if [ -t 0 ]; then
    for tries in 1 2 3; do
      if keywell unlock-keychain login; then return 0; fi
      keywell_login_is_locked || return 0
    done
    echo "run: the login keychain is still locked: run \`keywell unlock-keychain login\` and then this script again." >&2
    return 1
  fi
  # Standard input holds the password (one line); unlock-keychain reads it from there.
  if ! keywell unlock-keychain login; then
    echo "run: wrong password for the login keychain: it stays locked. Run \`keywell unlock-keychain login\` to try again." >&2
    return 1
  fi
}
