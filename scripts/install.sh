#!/usr/bin/env bash
# Builds Keywell in release mode and installs it under PREFIX (default /usr/local):
# keywelld, keywell and git-credential-keywell in PREFIX/bin, the D-Bus activation files,
# the systemd user unit, and pam_keywell.so in the system's PAM module folder.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/toolchain.sh
PREFIX="${PREFIX:-/usr/local}"
DESTDIR="${DESTDIR:-}"

swift build -c release --quiet
bin="$(swift build -c release --show-bin-path)"
install -d "$DESTDIR$PREFIX/bin"
for tool in keywelld keywell; do
  install -m 0755 "$bin/$tool" "$DESTDIR$PREFIX/bin/$tool"
done
if [ -f scripts/git-credential-keywell ]; then
  install -m 0755 scripts/git-credential-keywell "$DESTDIR$PREFIX/bin/git-credential-keywell"
fi

# D-Bus activation: the first call to org.keywell.Keychain (or org.freedesktop.secrets) starts keywelld.
services="$DESTDIR$PREFIX/share/dbus-1/services"
install -d "$services"
for file in dbus/*.service.in; do
  name="$(basename "$file" .in)"
  case "$name" in keywelld.service) continue ;; esac
  sed "s|@BINDIR@|$PREFIX/bin|g" "$file" > "$services/$name"
  chmod 0644 "$services/$name"
done
install -d "$DESTDIR$PREFIX/share/dbus-1/interfaces"
install -m 0644 dbus/org.keywell.Keychain1.xml "$DESTDIR$PREFIX/share/dbus-1/interfaces/"

units="$DESTDIR$PREFIX/lib/systemd/user"
install -d "$units"
sed "s|@BINDIR@|$PREFIX/bin|g" dbus/keywelld.service.in > "$units/keywelld.service"
chmod 0644 "$units/keywelld.service"

make -s -C pam PREFIX="$PREFIX"
make -s -C pam install PREFIX="$PREFIX" DESTDIR="$DESTDIR"
echo "install: Keywell installed under $DESTDIR$PREFIX (enable the PAM module with: pam-auth-update --enable keywell)"
