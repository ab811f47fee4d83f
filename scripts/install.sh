#!/usr/bin/env bash
# Installs Keywell under PREFIX (default /usr/local), or takes it out again (--uninstall).
#
#   bash scripts/install.sh [--bin-dir DIR]     build (release) and install
#   bash scripts/install.sh --uninstall         remove what was installed, put back what it replaced
#
# Installs keywelld, keywell and git-credential-keywell (a link to keywell) in PREFIX/bin, the man pages, the shell
# completions, the D-Bus activation files, the systemd user unit, the XDG autostart entry
# (SYSCONFDIR/xdg/autostart, SYSCONFDIR default /etc), the Secret portal's backend file and
# configuration (XDP_DATADIR/xdg-desktop-portal, XDP_DATADIR default /usr/share) and
# pam_keywell.so in the system's PAM module folder with its pam-auth-update profile. It never
# turns the PAM module on. scripts/lib/files lists every file, for the Debian package too.
#
# DESTDIR is a staging root: every file goes under it, and the record below lives there too.
# --bin-dir takes keywell and keywelld already built (tests use the debug build) instead of
# building them in release mode.
#
# What was installed is recorded in PREFIX/share/keywell/install-record: the files written, the
# folders created, a saved copy of every file that was there before and was not ours (an
# org.freedesktop.secrets activation file of another service, an older PAM profile), and whether
# the keywell PAM profile was on. --uninstall uses the record and nothing else (docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX="${PREFIX:-/usr/local}"
DESTDIR="${DESTDIR:-}"
SYSCONFDIR="${SYSCONFDIR:-/etc}"
mode=install
bin_dir=
while [ "$#" -gt 0 ]; do
  case "$1" in
    --uninstall) mode=uninstall ;;
    --bin-dir) bin_dir="${2:?--bin-dir needs a folder}"; shift ;;
    *) echo "install: unknown argument $1 (use --uninstall or --bin-dir DIR)" >&2; exit 2 ;;
  esac
  shift
done

record="$PREFIX/share/keywell/install-record"
root_record="$DESTDIR$record"
pam_profile_is_live() { [ -z "$DESTDIR" ] && command -v pam-auth-update >/dev/null 2>&1; }

if [ "$mode" = uninstall ]; then
  if [ ! -f "$root_record/files" ]; then
    echo "install: nothing to uninstall: no record at $root_record" >&2
    exit 1
  fi
  profile="$(grep -m1 '/pam-configs/keywell$' "$root_record/files" || true)"
  # PAM must never refer to a missing module: take the profile out of /etc/pam.d first, as
  # pam-auth-update(8) asks, unless the profile we replaced comes back (then its state does).
  if [ -n "$profile" ] && pam_profile_is_live; then
    if [ -e "$root_record/saved$profile" ]; then
      grep -qx 'pam-enabled=yes' "$root_record/state" || pam-auth-update --disable keywell
    else
      pam-auth-update --package --remove keywell
    fi
  fi
  while IFS= read -r path; do
    rm -f "$DESTDIR$path"
    if [ -e "$root_record/saved$path" ]; then
      cp -a "$root_record/saved$path" "$DESTDIR$path"
      echo "install: restored the previous $path"
    fi
  done < "$root_record/files"
  if [ -n "$profile" ] && [ -e "$root_record/saved$profile" ] && pam_profile_is_live &&
     grep -qx 'pam-enabled=yes' "$root_record/state"; then
    pam-auth-update --enable keywell
  fi
  created_dirs="$(cat "$root_record/dirs")"
  rm -rf "$root_record"
  # Deepest first; a folder someone else has put files in since stays.
  printf '%s\n' "$created_dirs" | sort -r | while IFS= read -r dir; do
    [ -n "$dir" ] && rmdir "$DESTDIR$dir" 2>/dev/null || true
  done
  echo "install: Keywell removed from $DESTDIR$PREFIX"
  exit 0
fi

# Folders this install creates, outermost first, so --uninstall can remove exactly those.
make_dir() {
  local dir="$1" missing=() parent
  parent="$dir"
  while [ "$parent" != / ] && [ ! -d "$DESTDIR$parent" ]; do
    missing=("$parent" "${missing[@]}")
    parent="$(dirname "$parent")"
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  install -d -m 0755 "${missing[@]/#/$DESTDIR}"
  # Created before written down: the first call makes the record's own folder.
  printf '%s\n' "${missing[@]}" >> "$root_record/dirs"
}

# claim TARGET: TARGET is the installed path without DESTDIR. A file already there that an
# earlier install did not write is saved first, for --uninstall to put back.
claim() {
  local target="$1"
  make_dir "$(dirname "$target")"
  if ! grep -qxF "$target" "$root_record/files"; then
    if [ -z "$earlier_unrecorded" ] && { [ -e "$DESTDIR$target" ] || [ -L "$DESTDIR$target" ]; }; then
      make_dir "$record/saved$(dirname "$target")"
      cp -a "$DESTDIR$target" "$root_record/saved$target"
      echo "install: saved the previous $target"
    fi
    echo "$target" >> "$root_record/files"
  fi
}

# place SOURCE TARGET MODE: installs a copy of SOURCE.
place() {
  claim "$2"
  install -m "$3" "$1" "$DESTDIR$2"
}

# place_link TARGET LINK: installs a symbolic link whose text is LINK.
place_link() {
  claim "$1"
  ln -sfn "$2" "$DESTDIR$1"
}

# place_template SOURCE.in TARGET MODE: @BINDIR@ becomes PREFIX/bin.
place_template() {
  local expanded
  expanded="$(mktemp)"
  sed "s|@BINDIR@|$PREFIX/bin|g" "$1" > "$expanded"
  place "$expanded" "$2" "$3"
  rm -f "$expanded"
}

if [ -z "$bin_dir" ]; then
  source scripts/lib/toolchain.sh
  # The release build scripts/test.sh tests and the Debian package ships.
  source scripts/lib/release-build.sh
  keywell_release_build --quiet
  bin_dir="$(keywell_release_build --show-bin-path)"
fi
make -s -C pam PREFIX="$PREFIX"
pamdir="${PAMDIR:-$(make -s -C pam print-pamdir)}"
# Debian's pam-auth-update profiles, where the system has that folder (as pam/Makefile decides).
pam_configs="${PAM_CONFIGS_DIR-$([ -d /usr/share/pam-configs ] && echo /usr/share/pam-configs || true)}"

# A Keywell installed before install records existed left its files unrecorded: they are
# replaced, not saved (putting them back would leave Keywell installed after --uninstall).
earlier_unrecorded=
if [ ! -f "$root_record/files" ] && [ -e "$DESTDIR$PREFIX/bin/keywelld" ]; then
  earlier_unrecorded=yes
  echo "install: replacing an earlier Keywell install that has no record; its files are not saved"
fi

# The record goes first, so that --uninstall also finds the folders it lives in.
make_dir "$record"
touch "$root_record/files" "$root_record/dirs"
if [ ! -f "$root_record/state" ]; then
  if [ -z "$DESTDIR" ] && grep -qs 'pam_keywell\.so' /etc/pam.d/common-auth; then
    echo 'pam-enabled=yes' > "$root_record/state"
  else
    echo 'pam-enabled=no' > "$root_record/state"
  fi
fi

# What goes where: scripts/lib/files, the list the Debian package is built from too.
source scripts/lib/files.sh
BINDIR="$PREFIX/bin" MANDIR="$PREFIX/share/man"
BASHCOMPDIR="$PREFIX/share/bash-completion/completions" ZSHCOMPDIR="$PREFIX/share/zsh/site-functions"
FISHCOMPDIR="$PREFIX/share/fish/vendor_completions.d" DBUSDIR="$PREFIX/share/dbus-1"
SYSTEMDUSERDIR="$PREFIX/lib/systemd/user" AUTOSTARTDIR="$SYSCONFDIR/xdg/autostart"
ENVDIR="$PREFIX/lib/environment.d" PAMDIR="$pamdir" PAMCONFIGSDIR="$pam_configs"
# xdg-desktop-portal reads backend files only from its own data folder, whatever PREFIX is.
XDPDIR="${XDP_DATADIR:-/usr/share}/xdg-desktop-portal"
entries="$(keywell_files source)"

# SSH_AUTH_SOCK for the user's session: an environment.d file (systemd's user manager hands it
# to the session), unless another environment.d file, user unit or autostart entry sets it
# (gcr-ssh-agent, gnome-keyring's ssh component, OpenSSH's ssh-agent unit) (docs/ssh.md).
place_ssh_env() {
  local source="$1" ssh_env="$2" mode="$3" candidate ssh_claimants=()
  for candidate in /usr/lib/environment.d/*.conf /usr/local/lib/environment.d/*.conf /etc/environment.d/*.conf \
                   /usr/lib/systemd/user/*.service /usr/lib/systemd/user/*.socket \
                   /etc/systemd/user/*.service /etc/systemd/user/*.socket "$SYSCONFDIR"/xdg/autostart/*.desktop; do
    [ "$candidate" = "$ssh_env" ] && continue
    [ -f "$DESTDIR$candidate" ] || continue
    if grep -q 'SSH_AUTH_SOCK' "$DESTDIR$candidate" || grep -qE '^Exec=.*--components=[^ ]*ssh' "$DESTDIR$candidate"; then
      ssh_claimants+=("$candidate")
    fi
  done
  if [ "${#ssh_claimants[@]}" -eq 0 ] || grep -qxF "$ssh_env" "$root_record/files"; then
    place "$source" "$ssh_env" "$mode"
  else
    echo "install: SSH_AUTH_SOCK is left to ${ssh_claimants[*]}; to use Keywell's agent, stop that one"
    echo "         and point SSH_AUTH_SOCK at \$XDG_RUNTIME_DIR/keywell/ssh-agent (docs/ssh.md)"
  fi
}

while read -r kind source target mode; do
  case "$kind" in
    program) place "$bin_dir/$source" "$target" "$mode" ;;
    link) place_link "$target" "$source" ;;
    file|man) place "$source" "$target" "$mode" ;;
    template) place_template "$source" "$target" "$mode" ;;
    pam-module) place "pam/build/$source" "$target" "$mode" ;;
    pam-profile) [ -z "$pam_configs" ] || place "$source" "$target" "$mode" ;;
    # A portals.conf that is not ours stays as it is.
    portals-conf)
      if grep -qxF "$target" "$root_record/files" || [ ! -e "$DESTDIR$target" ]; then
        place "$source" "$target" "$mode"
      else
        echo "install: $target is not Keywell's and stays; to route the Secret portal to Keywell, add"
        echo "         org.freedesktop.impl.portal.Secret=keywell to its [preferred] group"
      fi ;;
    ssh-env) place_ssh_env "$source" "$target" "$mode" ;;
    *) echo "install: scripts/lib/files: unknown kind $kind" >&2; exit 1 ;;
  esac
done <<< "$entries"

# Another Secret Service's activation file in a folder the bus reads later stays, shadowed by
# ours; taking ours out (--uninstall) gives it the name back.
for name in org.freedesktop.secrets org.kde.kwalletd5 org.kde.kwalletd6; do
  other=/usr/share/dbus-1/services/$name.service
  if [ -e "$DESTDIR$other" ] && [ "$other" != "$PREFIX/share/dbus-1/services/$name.service" ]; then
    echo "install: keywelld now answers $name; $other stays and is used again after --uninstall"
  fi
done

if [ -n "$pam_configs" ]; then
  enable_hint="pam-auth-update --enable keywell"
else
  enable_hint="the lines in pam/README.md"
fi
echo "install: git's helper, by full path (docs/cli.md): git config --global credential.helper $PREFIX/bin/git-credential-keywell"
echo "install: Keywell installed under $DESTDIR$PREFIX (turn the PAM module on with: $enable_hint;"
echo "         take everything out again with: bash scripts/install.sh --uninstall)"
