#!/usr/bin/env bash
# Installs every Debian 12 package that building, running, testing and benchmarking Keywell need.
# Safe to run again: apt-get skips what is already there.
set -euo pipefail

packages=(
  # build
  pkg-config libsodium-dev libdbus-1-dev libsqlite3-dev libssl-dev libpam0g-dev gcc make
  # `keywell` is linked statically: libdbus-1.a, libsodium.a, libstdc++ and glibc's archives
  # (libc6-dev, which gcc brings) (scripts/lib/link-keywell)
  libstdc++-12-dev
  # keywelld seals the login unlock's key in a TPM through TSS2 (docs/login-unlock.md)
  libtss2-dev
  # run
  dbus dbus-daemon libsodium23 libpam-runtime pinentry-tty
  # test: real clients and real PAM
  pamtester libsecret-tools python3 python3-secretstorage python3-keyring python3-dbus
  python3-pytest python3-pip git sqlite3 passwd procps psmisc util-linux sudo
  # test: the login unlock through a software TPM (swtpm), tpm2-tools to look at one by hand
  swtpm swtpm-tools tpm2-tools
  # test: migration from gnome-keyring (libsecret's file backend through python3-gi, and
  # git-credential-libsecret built from git's contrib source)
  python3-gi gir1.2-secret-1 libsecret-1-dev libglib2.0-dev
  # test: callers' application identities (a Flatpak-style sandbox; a python caller over jeepney)
  bubblewrap python3-jeepney
  # test: what install.sh installs (man pages, the autostart entry, the systemd unit)
  groff-base man-db desktop-file-utils systemd
  # test: the Secret portal through the real xdg-desktop-portal, called from a bwrap sandbox
  xdg-desktop-portal bubblewrap
  # test: the real Seahorse under a real X server, driven through AT-SPI, and screenshots of it
  seahorse xvfb xdotool imagemagick at-spi2-core libatk-adaptor python3-pyatspi
  # test: the prompters keywelld chooses (docs/prompts.md): gcr's system prompter through
  # pinentry-gnome3 under Xvfb, pinentry-curses on a configured terminal
  pinentry-gnome3 pinentry-curses gcr
  # test and benchmark: the SSH agent with real OpenSSH (a private sshd on loopback, ssh-add,
  # ssh-keygen's signatures, OpenSSH's own ssh-agent to compare against)
  openssh-client openssh-server
  # test: KDE's wallet API through real KDE clients, and KWallet's own daemon to compare with
  # (docs/kwallet.md); gpg and its agent for KWallet's GPG wallets (docs/migration.md)
  kwalletcli libkf5wallet-bin gpg gpg-agent gpgconf
  # benchmark against the incumbent; GNU time reads peak memory (keywell-bench startup)
  gnome-keyring time
  # benchmark: a real browser keeping its Safe Storage key through libsecret (keywell-bench questions)
  chromium
  # the Debian package: dpkg-deb and dpkg-shlibdeps, lintian, and a clean Debian 12 root for
  # its smoke test (scripts/package.sh, scripts/package-smoke.sh; docs/install.md)
  dpkg-dev lintian debootstrap
  # later work tests against these: OpenSSH's server and its PAM stack, Syncthing, a software
  # TPM, KDE's wallet (kwalletd5, kwalletcli). The suite must not depend on their absence, nor
  # on their services running or stopped (docs/contributing.md, "Machine state").
  openssh-server syncthing swtpm swtpm-tools libkf5wallet-bin kwalletcli
)

if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
else
  sudo=
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The upstream test suites of secretstorage and keyring (PyPI sdists, pinned and checked).
bash "$(dirname "$0")/upstream-tests.sh"

source "$(dirname "$0")/lib/toolchain.sh"
echo "setup: ready ($(swift --version 2>&1 | head -n1))"
