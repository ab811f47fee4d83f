#!/usr/bin/env bash
# Fetches the test suites of the Secret Service clients Debian ships (python3-secretstorage and
# python3-keyring), which their Debian packages leave out, from the PyPI sdists of exactly the
# installed versions, each checked against its pinned sha256. Only the tests are unpacked, into
# .build-upstream/<name>-<version>/tests (git-ignored), so they import the installed packages.
# Tests/Integration/test_upstream_suites.py runs them against keywelld. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=.build-upstream
# name, installed module, version, sdist URL, sha256 (from PyPI's simple index)
suites=(
  "SecretStorage secretstorage 3.3.3 https://files.pythonhosted.org/packages/53/a4/f48c9d79cb507ed1373477dbceaba7401fd8a23af63b837fa61f1dcd3691/SecretStorage-3.3.3.tar.gz 2403533ef369eca6d2ba81718576c5e0f564d5cca1b58f73a8b23e7d4eeebd77"
  "keyring keyring 23.9.3 https://files.pythonhosted.org/packages/2a/ef/28d3d5428108111dae4304a2ebec80d113aea9e78c939e25255425d486ff/keyring-23.9.3.tar.gz 69b01dd83c42f590250fe7a1f503fc229b14de83857314b1933a3ddbf595c4a5"
)

mkdir -p "$cache"
for suite in "${suites[@]}"; do
  read -r name module version url sha256 <<<"$suite"
  installed="$(/usr/bin/python3 -c "import importlib.metadata as m; print(m.version('$module'))")"
  if [ "$installed" != "$version" ]; then
    echo "upstream-tests: $module $installed is installed but the pinned suite is $version: update the pin in $0" >&2
    exit 1
  fi
  target="$cache/$name-$version"
  [ -d "$target/tests" ] && continue
  archive="$cache/$name-$version.tar.gz"
  if [ ! -f "$archive" ] || ! echo "$sha256  $archive" | sha256sum --check --status; then
    curl -fsSL --retry 3 -o "$archive.part" "$url"
    echo "$sha256  $archive.part" | sha256sum --check --status \
      || { echo "upstream-tests: $url does not have the pinned sha256" >&2; rm -f "$archive.part"; exit 1; }
    mv "$archive.part" "$archive"
  fi
  rm -rf "$target.part" && mkdir -p "$target.part"
  tar -xzf "$archive" -C "$target.part" --strip-components=1 "$name-$version/tests"
  mv "$target.part" "$target"
  echo "upstream-tests: $name $version tests in $target"
done
