#!/usr/bin/env bash
# Installs the Debian package on a clean Debian 12 root and checks it there, as root:
#
#   bash scripts/package-smoke.sh [dist/keywell_<version>_amd64.deb]   (default: the newest in dist/)
#
# The root comes from `debootstrap --variant=minbase bookworm` (cached as a tarball in
# /var/cache/keywell-package; downloaded .debs are kept there too, so a second run needs the
# network only for apt's indexes). Each step runs in the root through chroot, in a mount and PID
# namespace of its own: its /proc, /dev, /sys and /run go away with it, and so does every process
# it started. With only Debian's repositories (bookworm, -updates, -security) it checks:
#   - apt-get install ./keywell_*.deb resolves every dependency, puts nothing under /usr/local,
#     and diverts no file but gnome-keyring's activation file; an upgrade to it from a previous
#     version (the same files, a lower version) keeps the diversion and the PAM profile's state;
#   - a throwaway user, in dbus-run-session: keywell creates the login keychain, secret-tool
#     stores a secret and reads it back, git-credential-keywell answers; man keywell works;
#   - pam-auth-update --enable keywell adds pam_keywell to /etc/pam.d, and a login through
#     pamtester then starts /usr/bin/keywelld as the user; --disable takes it out;
#   - gnome-keyring after keywell, and keywell after gnome-keyring, install without a conflict;
#     installing the same package again keeps the diversion;
#   - apt-get purge keywell, with the profile on, leaves none of keywell's files, no pam_keywell
#     line, no diversion, gnome-keyring's file byte-identical to its package's, and the user's
#     keychain in place.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" -eq 0 ] || { echo "package-smoke: run as root (chroot, mounts)" >&2; exit 1; }
for tool in debootstrap unshare chroot dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "package-smoke: $tool is missing (bash scripts/setup.sh)" >&2; exit 1; }
done
deb="${1:-$(ls -t dist/keywell_*_amd64.deb 2>/dev/null | head -n1)}"
[ -f "$deb" ] || { echo "package-smoke: no package; build one with bash scripts/package.sh" >&2; exit 1; }

started=$SECONDS
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security_mirror="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
cache=/var/cache/keywell-package
tarball="$cache/bookworm-minbase.tar"
archives="$cache/apt-archives"
mkdir -p "$archives/partial"

fail() { echo "package-smoke: FAIL: $*" >&2; exit 1; }
step() { echo "package-smoke: [$((SECONDS - started)) s] $*"; }

if [ ! -f "$tarball" ]; then
  step "debootstrap bookworm from $mirror (cached in $tarball)"
  fresh="$(mktemp -d /var/tmp/keywell-debootstrap.XXXXXX)"
  chmod 0755 "$fresh"   # it becomes the root's /, which every user must be able to enter
  debootstrap --variant=minbase bookworm "$fresh" "$mirror" >/dev/null
  tar -C "$fresh" -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
  rm -rf --one-file-system "$fresh"
fi

root="$(mktemp -d /var/tmp/keywell-smoke.XXXXXX)"
trap 'rm -rf --one-file-system "$root" "$root.repack" "$root.apt.log" "$root.user.log"' EXIT
tar -C "$root" -xf "$tarball"
chmod 0755 "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
cat > "$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security_mirror bookworm-security main
EOF
# No service starts inside the root.
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
cp "$deb" "$root/tmp/"
package="/tmp/$(basename "$deb")"

# in_root COMMAND...: runs COMMAND inside the root (see the top).
in_root() {
  unshare --mount --pid --fork --propagation private -- bash -c '
    set -e
    r="$1" archives="$2"; shift 2
    mount -t proc proc "$r/proc"
    mount --rbind /dev "$r/dev"
    mount -t sysfs sysfs "$r/sys"
    mount -t tmpfs -o mode=0755 tmpfs "$r/run"
    mount --bind "$archives" "$r/var/cache/apt/archives"
    exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive "$@"' _ "$root" "$archives" "$@"
}
apt_install() { in_root apt-get install -y -q --no-install-recommends "$@" > "$root.apt.log" 2>&1 || { tail -n 30 "$root.apt.log" >&2; fail "apt-get install $*"; }; }
secrets=/usr/share/dbus-1/services/org.freedesktop.secrets.service
diverted="$secrets.keywell-diverted"
pam_lines() { in_root sh -c 'grep -l pam_keywell /etc/pam.d/* || true'; }

step "apt-get update"
in_root apt-get update -q > "$root.apt.log" 2>&1 || { cat "$root.apt.log" >&2; fail "apt-get update"; }

# "The previous version": the same files under a lower version, for an upgrade from it.
repack="$root.repack"
mkdir -p "$repack"
dpkg-deb -R "$deb" "$repack/tree"
version="$(sed -n 's/^Version: //p' "$repack/tree/DEBIAN/control")"
sed -i "s/^Version: .*/Version: $version~previous/" "$repack/tree/DEBIAN/control"
dpkg-deb --root-owner-group -Znone -b "$repack/tree" "$root/tmp/keywell_previous.deb" >/dev/null
rm -rf "$repack"

step "apt-get install the previous version on a clean bookworm root"
apt_install /tmp/keywell_previous.deb
files="$(in_root dpkg-query -L keywell)"
grep -q '^/usr/local' <<< "$files" && fail "files under /usr/local: $(grep '^/usr/local' <<< "$files")"
for path in /usr/bin/keywell /usr/bin/keywelld /usr/bin/git-credential-keywell \
            /usr/lib/x86_64-linux-gnu/security/pam_keywell.so /usr/share/pam-configs/keywell "$secrets" \
            /usr/share/dbus-1/services/org.keywell.Keychain.service \
            /usr/share/dbus-1/services/org.freedesktop.impl.portal.desktop.keywell.service \
            /usr/lib/systemd/user/keywelld.service /usr/share/man/man1/keywell.1.gz \
            /usr/share/man/man8/keywelld.8.gz /usr/share/man/man8/pam_keywell.8.gz \
            /usr/share/man/man1/git-credential-keywell.1.gz /usr/share/bash-completion/completions/keywell \
            /usr/share/zsh/vendor-completions/_keywell /usr/share/fish/vendor_completions.d/keywell.fish; do
  grep -qxF "$path" <<< "$files" || fail "the package does not install $path"
done
diversions="$(in_root dpkg-divert --list keywell)"
[ "$diversions" = "diversion of $secrets to $diverted by keywell" ] || fail "diversions: $diversions"
[ -z "$(pam_lines)" ] || fail "installing turned the PAM profile on: $(pam_lines)"
in_root keywell --version

step "upgrade to $package with the PAM profile on"
in_root pam-auth-update --enable keywell
apt_install "$package"
[ "$(in_root dpkg-query -W -f='${Version}' keywell)" = "$version" ] || fail "the upgrade did not install $version"
[ "$(in_root dpkg-divert --list keywell)" = "$diversions" ] || fail "the upgrade changed the diversion"
[ -n "$(pam_lines)" ] || fail "the upgrade turned the PAM profile off"
in_root pam-auth-update --disable keywell

step "a throwaway user: keychain, secret-tool, git-credential-keywell, man"
apt_install libsecret-tools man-db pamtester
in_root useradd --create-home --shell /bin/bash kwsmoke
# The user's part: a session bus of its own, keywelld started by it (bus activation).
cat > "$root/tmp/smoke-user.sh" <<'EOF_USER'
set -e
printf '%s\n%s\n' smoke-login smoke-login | keywell create-keychain login
printf %s smoke-secret | secret-tool store --label=smoke app keywell-smoke
[ "$(secret-tool lookup app keywell-smoke)" = smoke-secret ]
printf 'protocol=https\nhost=example.org\nusername=kw\npassword=git-secret\n\n' | git-credential-keywell store
printf 'protocol=https\nhost=example.org\n\n' | git-credential-keywell get | grep -qx password=git-secret
echo 'keychain, secret-tool and git-credential-keywell: ok'
EOF_USER
cat > "$root/tmp/smoke-session.sh" <<'EOF_SESSION'
set -e
runtime="/run/user/$(id -u kwsmoke)"
install -d -m 0700 -o kwsmoke -g kwsmoke "$runtime"
exec runuser -u kwsmoke -- env HOME=/home/kwsmoke XDG_RUNTIME_DIR="$runtime" \
  dbus-run-session -- sh /tmp/smoke-user.sh
EOF_SESSION
in_root sh /tmp/smoke-session.sh > "$root.user.log" 2>&1 || true
sed 's/^/  /' "$root.user.log"
grep -q 'keychain, secret-tool and git-credential-keywell: ok' "$root.user.log" || fail "the user session"
in_root sh -c 'MANPAGER=cat man keywell 2>/dev/null' | grep -q 'keywell' || fail "man keywell"
in_root sh -c 'MANPAGER=cat man git-credential-keywell 2>/dev/null' | grep -q 'keywell' || fail "man git-credential-keywell"
# The user's keywell files, with their contents (no keywelld runs between two steps).
user_files() { in_root sh -c 'find /home/kwsmoke -type f -path "*keywell*" -exec sha256sum {} + | sort -k2'; }
[ -n "$(user_files)" ] || fail "no keychain file in the user's home"

step "pam-auth-update --enable / --disable keywell"
in_root pam-auth-update --enable keywell
enabled="$(pam_lines)"
for file in common-auth common-session common-password; do
  grep -qx "/etc/pam.d/$file" <<< "$enabled" || fail "--enable left /etc/pam.d/$file without pam_keywell"
done
# A login through Debian's own stack (login includes common-auth and common-session): the
# packaged module starts /usr/bin/keywelld as the user, and a wrong password is still refused.
cat > "$root/tmp/smoke-login.sh" <<'EOF_LOGIN'
set -e
install -d -m 0700 -o kwsmoke -g kwsmoke "/run/user/$(id -u kwsmoke)"
printf 'kwsmoke:smoke-login\n' | chpasswd
if printf 'wrong\n' | setsid -w pamtester login kwsmoke authenticate 2>/dev/null; then
  echo 'a wrong password was accepted'; exit 1
fi
printf 'smoke-login\n' | setsid -w pamtester login kwsmoke authenticate open_session
for proc in /proc/[0-9]*; do
  if [ "$(readlink "$proc/exe" 2>/dev/null)" = /usr/bin/keywelld ] &&
     [ "$(stat -c %U "$proc")" = kwsmoke ]; then
    echo 'the login started /usr/bin/keywelld as kwsmoke'; exit 0
  fi
done
echo 'no keywelld runs after the login'; exit 1
EOF_LOGIN
in_root sh /tmp/smoke-login.sh > "$root.user.log" 2>&1 || true
sed 's/^/  /' "$root.user.log"
grep -q 'the login started /usr/bin/keywelld as kwsmoke' "$root.user.log" || fail "a PAM login with the profile on"
in_root pam-auth-update --disable keywell
[ -z "$(pam_lines)" ] || fail "--disable left pam_keywell in $(pam_lines)"

step "gnome-keyring after keywell"
apt_install gnome-keyring
gk_deb="$(ls "$archives"/gnome-keyring_*_amd64.deb | tail -n1)"
gk_sum="$(dpkg-deb --fsys-tarfile "$gk_deb" | tar -xOf - ".$secrets" | sha256sum)"
grep -qx 'Exec=/usr/bin/keywelld' "$root$secrets" || fail "$secrets is not keywell's after gnome-keyring came"
[ "$(sha256sum < "$root$diverted")" = "$gk_sum" ] || fail "gnome-keyring's file is not at $diverted"

step "installing the same package again"
in_root dpkg -i "$package" > "$root.apt.log" 2>&1 || { cat "$root.apt.log" >&2; fail "dpkg -i again"; }
[ "$(in_root dpkg-divert --list keywell)" = "$diversions" ] || fail "reinstalling changed the diversion"

# purge_and_check: apt-get purge keywell with the profile on, then nothing of keywell is left.
purge_and_check() {
  local keychains
  keychains="$(user_files)"
  in_root pam-auth-update --enable keywell
  [ -n "$(pam_lines)" ] || fail "--enable did nothing"
  in_root apt-get purge -y -q keywell > "$root.apt.log" 2>&1 || { cat "$root.apt.log" >&2; fail "apt-get purge keywell"; }
  local path left
  while IFS= read -r path; do
    [ -d "$root$path" ] && [ ! -L "$root$path" ] && continue
    [ "$path" = "$secrets" ] && continue
    { [ -e "$root$path" ] || [ -L "$root$path" ]; } && fail "purge left $path"
  done <<< "$files"
  [ -z "$(pam_lines)" ] || fail "purge left pam_keywell in $(pam_lines)"
  [ -z "$(in_root dpkg-divert --list keywell)" ] || fail "purge left a diversion"
  [ ! -e "$root$diverted" ] || fail "purge left $diverted"
  [ "$(sha256sum < "$root$secrets")" = "$gk_sum" ] || fail "gnome-keyring's $secrets is not back unchanged"
  in_root dpkg --verify gnome-keyring || fail "dpkg --verify gnome-keyring"
  # Nothing else on the system names keywell (dpkg's and apt's own logs and lists aside).
  left="$(in_root sh -c 'grep -rlI --exclude-dir=dpkg --exclude-dir=apt keywell /etc /usr /var/lib 2>/dev/null; find / -xdev -iname "*keywell*" -not -path "/home/*" -not -path "/tmp/*" -not -path "/var/cache/*" -not -path "/var/log/*" -not -path "/proc/*" 2>/dev/null' || true)"
  [ -z "$left" ] || fail "purge left: $left"
  [ "$(user_files)" = "$keychains" ] ||
    fail "purge touched the user's keychain"
}

step "apt-get purge keywell (gnome-keyring installed after it)"
purge_and_check
step "keywell after gnome-keyring, then purge"
apt_install "$package"
grep -qx 'Exec=/usr/bin/keywelld' "$root$secrets" || fail "$secrets is not keywell's"
[ "$(sha256sum < "$root$diverted")" = "$gk_sum" ] || fail "gnome-keyring's file is not at $diverted"
purge_and_check

step "all checks passed for $deb"
