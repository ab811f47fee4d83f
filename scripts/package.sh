#!/usr/bin/env bash
# Builds the Debian package: dist/keywell_<version>_amd64.deb, with dpkg-deb from the file list
# that install.sh uses too (scripts/lib/files), then runs lintian on it.
#
#   bash scripts/package.sh [--bin-dir DIR]
#
# The release build of scripts/lib/release-build.sh, the one scripts/test.sh tests: the Swift
# runtime linked statically, so the package depends only on Debian 12 libraries (dpkg-shlibdeps
# computes which). --bin-dir takes keywell and keywelld already built that way. REVISION
# (default 1) is the Debian revision: Version is "<keywell --version>-REVISION".
# SOURCE_DATE_EPOCH (default: the last commit's time) dates the changelog and every file, so the
# same tree gives the same package. docs/install.md says what the package installs and what its
# maintainer scripts do.
set -euo pipefail
cd "$(dirname "$0")/.."

bin_dir=
while [ "$#" -gt 0 ]; do
  case "$1" in
    --bin-dir) bin_dir="${2:?--bin-dir needs a folder}"; shift ;;
    *) echo "package: unknown argument $1 (use --bin-dir DIR)" >&2; exit 2 ;;
  esac
  shift
done

for tool in dpkg-deb dpkg-shlibdeps strip lintian; do
  command -v "$tool" >/dev/null || { echo "package: $tool is missing (bash scripts/setup.sh)" >&2; exit 1; }
done
[ "$(dpkg --print-architecture)" = amd64 ] || { echo "package: builds amd64 packages only" >&2; exit 1; }

if [ -z "$bin_dir" ]; then
  source scripts/lib/toolchain.sh
  # The release build scripts/test.sh runs the integration suite on (scripts/lib/release-build.sh,
  # test switches compiled out): after a test run nothing is rebuilt, and the package ships the
  # very programs the suite tested.
  source scripts/lib/release-build.sh
  for product in keywelld keywell; do
    keywell_release_build --product "$product" --quiet
  done
  bin_dir="$(keywell_release_build --show-bin-path)"
fi

upstream="$("$bin_dir/keywell" --version)"
upstream="${upstream#keywell }"
[[ "$upstream" =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || { echo "package: keywell --version gave '$upstream'" >&2; exit 1; }
version="$upstream-${REVISION:-1}"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
maintainer="$(git log -1 --format='%an <%ae>')"

# pam_keywell.so starts the packaged keywelld; its own build folder keeps the tests' build
# (pam/build, PREFIX /usr/local) as it is.
make -s -C pam BUILD=build-package KEYWELLD_PATH=/usr/bin/keywelld
grep -qaF /usr/bin/keywelld pam/build-package/pam_keywell.so ||
  { echo "package: pam/build-package/pam_keywell.so does not start /usr/bin/keywelld" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/debian/keywell"
umask 022

# The folders Debian keeps these files in (Debian policy; bash-completion, zsh and fish read
# their vendor folders; pam-auth-update reads /usr/share/pam-configs).
BINDIR=/usr/bin MANDIR=/usr/share/man
BASHCOMPDIR=/usr/share/bash-completion/completions ZSHCOMPDIR=/usr/share/zsh/vendor-completions
FISHCOMPDIR=/usr/share/fish/vendor_completions.d DBUSDIR=/usr/share/dbus-1
SYSTEMDUSERDIR=/usr/lib/systemd/user AUTOSTARTDIR=/etc/xdg/autostart ENVDIR=/usr/lib/environment.d
XDPDIR=/usr/share/xdg-desktop-portal PAMDIR=/usr/lib/x86_64-linux-gnu/security
PAMCONFIGSDIR=/usr/share/pam-configs
source scripts/lib/files.sh
entries="$(keywell_files package)"

conffiles=()
while read -r kind source target mode; do
  install -d -m 0755 "$root$(dirname "$target")"
  case "$kind" in
    program)
      install -m "$mode" "$bin_dir/$source" "$root$target"
      strip --remove-section=.comment --remove-section=.note "$root$target" ;;
    pam-module)
      install -m "$mode" "pam/build-package/$source" "$root$target"
      strip --remove-section=.comment --remove-section=.note --strip-unneeded "$root$target" ;;
    man) gzip -9n < "$source" > "$root$target.gz"; chmod "$mode" "$root$target.gz" ;;
    link)
      case "$target" in
        "$MANDIR"/*) ln -s "$source.gz" "$root$target.gz" ;;
        *) ln -s "$source" "$root$target" ;;
      esac ;;
    file|pam-profile) install -m "$mode" "$source" "$root$target" ;;
    template) sed "s|@BINDIR@|$BINDIR|g" "$source" > "$root$target"; chmod "$mode" "$root$target" ;;
    *) echo "package: scripts/lib/files: no package rule for $kind" >&2; exit 1 ;;
  esac
  case "$target" in /etc/*) conffiles+=("$target") ;; esac
done <<< "$entries"

# fill TEMPLATE NAME VALUE...: TEMPLATE with each @NAME@ replaced by its VALUE.
fill() {
  local text
  text="$(cat "$1")"
  shift
  while [ "$#" -gt 1 ]; do text="${text//"@$1@"/$2}"; shift 2; done
  printf '%s\n' "$text"
}

doc="$root/usr/share/doc/keywell"
install -d -m 0755 "$doc"
gzip -9n < CHANGELOG.md > "$doc/changelog.gz"
fill packaging/changelog.in VERSION "$version" MAINTAINER "$maintainer" \
  DATE "$(date -u -R -d "@$SOURCE_DATE_EPOCH")" COMMIT "$(git rev-parse --short=12 HEAD)" |
  gzip -9n > "$doc/changelog.Debian.gz"
fill packaging/copyright.in MAINTAINER "$maintainer" > "$doc/copyright"
chmod 0644 "$doc"/*
# lintian's overrides, each with the reason it is not a fault (packaging/lintian-overrides).
if grep -qv '^#' packaging/lintian-overrides 2>/dev/null; then
  install -d -m 0755 "$root/usr/share/lintian/overrides"
  install -m 0644 packaging/lintian-overrides "$root/usr/share/lintian/overrides/keywell"
fi

# Depends: what the ELF files need, as dpkg-shlibdeps reads it from Debian's shlibs and symbols
# files (keywell is static: nothing), and what the maintainer scripts and keywelld call.
mkdir -p "$work/debian"
printf 'Source: keywell\n\nPackage: keywell\nArchitecture: amd64\n' > "$work/debian/control"
elf=("$root$BINDIR/keywelld" "$root$BINDIR/keywell" "$root$PAMDIR/pam_keywell.so")
shlibs="$(cd "$work" && dpkg-shlibdeps -O "${elf[@]}" 2>"$work/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p')" ||
  { cat "$work/shlibdeps.log" >&2; exit 1; }
depends="$shlibs, libpam-runtime (>= 1.0.1-6), default-dbus-session-bus | dbus-session-bus"

install -d -m 0755 "$root/DEBIAN"
for script in preinst postinst prerm postrm; do
  install -m 0755 "packaging/$script" "$root/DEBIAN/$script"
done
if [ "${#conffiles[@]}" -gt 0 ]; then
  printf '%s\n' "${conffiles[@]}" > "$root/DEBIAN/conffiles"
  chmod 0644 "$root/DEBIAN/conffiles"
fi
installed_size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
fill packaging/control.in VERSION "$version" MAINTAINER "$maintainer" DEPENDS "$depends" \
  INSTALLED_SIZE "$installed_size" > "$root/DEBIAN/control"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
  xargs -0 md5sum > DEBIAN/md5sums)
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
find "$root" -print0 | xargs -0 touch -h -d "@$SOURCE_DATE_EPOCH"

mkdir -p dist
deb="dist/keywell_${version}_amd64.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "package: built $deb (Depends: $depends)"

# Debian's own checks; overrides live in packaging/lintian-overrides, each with its reason.
lintian --fail-on error --display-info "$deb"
echo "package: lintian found no error in $deb"
