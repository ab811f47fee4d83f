#!/usr/bin/env bash
# Fetches the test suites of the Secret Service clients Debian ships (python3-secretstorage and
# python3-keyring), which their Debian packages leave out, from the PyPI sdists of exactly the
# installed versions, each checked against its pinned sha256. Only the tests are unpacked, into
# .build-upstream/<name>-<version>/tests (git-ignored), so they import the installed packages.
# Tests/Integration/test_upstream_suites.py runs them against keywelld. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=.build-upstream
# name (as the sdist spells it), installed module, version, sha256 of the sdist
suites=(
  "SecretStorage secretstorage 3.3.3 2403533ef369eca6d2ba81718576c5e0f564d5cca1b58f73a8b23e7d4eeebd77"
  "keyring keyring 23.9.3 69b01dd83c42f590250fe7a1f503fc229b14de83857314b1933a3ddbf595c4a5"
)

mkdir -p "$cache"
for suite in "${suites[@]}"; do
  read -r name module version sha256 <<<"$suite"
  installed="$(/usr/bin/python3 -c "import importlib.metadata as m; print(m.version('$module'))")"
  if [ "$installed" != "$version" ]; then
    echo "upstream-tests: $module $installed is installed but the pinned suite is $version: update the pin in $0" >&2
    exit 1
  fi
  target="$cache/$name-$version"
  [ -d "$target/tests" ] && continue
  archive="$cache/$name-$version.tar.gz"
  if [ ! -f "$archive" ] || ! echo "$sha256  $archive" | sha256sum --check --status; then
    # pip fetches the sdist; keyring's build reads its version from git, which an sdist lacks,
    # so the version is told (SETUPTOOLS_SCM_PRETEND_VERSION) for pip to accept the download.
    download="$cache/download.part"
    rm -rf "$download" && mkdir -p "$download"
    SETUPTOOLS_SCM_PRETEND_VERSION="$version" /usr/bin/python3 -m pip download --quiet --no-deps \
      --no-binary "$module" -d "$download" "$module==$version" >&2
    fetched="$(find "$download" -maxdepth 1 -iname "$name-$version.tar.gz" -print -quit)"
    [ -n "$fetched" ] || { echo "upstream-tests: pip fetched no sdist of $name $version" >&2; exit 1; }
    echo "$sha256  $fetched" | sha256sum --check --status \
      || { echo "upstream-tests: the $name $version sdist does not have the pinned sha256" >&2; exit 1; }
    mv "$fetched" "$archive"
    rm -rf "$download"
  fi
  rm -rf "$target.part" && mkdir -p "$target.part"
  tar -xzf "$archive" -C "$target.part" --strip-components=1 "$name-$version/tests"
  mv "$target.part" "$target"
  echo "upstream-tests: $name $version tests in $target"
done
