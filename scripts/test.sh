#!/usr/bin/env bash
# Builds Keywell and runs every test suite: the Swift tests (engine, D-Bus layer, daemon, client
# library, CLI) and the integration tests that drive real outside clients (pamtester, secret-tool,
# python secretstorage/keyring, git). Run scripts/setup.sh first on a fresh machine.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/toolchain.sh

status=0
# Style first: it takes seconds, and a finding is reported whatever the tests say.
echo "== lint"
bash scripts/lint.sh || status=1

echo "== build"
swift build --build-tests --quiet || exit 1
make -s -C pam || exit 1

# The shipped daemon too: a test holds it to ignoring every test switch (docs/contributing.md,
# "Test switches").
swift build -c release --product keywelld --quiet || exit 1
export KEYWELLD_RELEASE="$(swift build -c release --show-bin-path)/keywelld"

bin="$(swift build --show-bin-path)"
export KEYWELL_BIN_DIR="$bin"
export KEYWELLD="$bin/keywelld"
export KEYWELL="$bin/keywell"
export PAM_KEYWELL_SO="$PWD/pam/build/pam_keywell.so"

echo "== pam unit tests"
make -s -C pam check || status=1

echo "== swift test"
# glibc writes its abort messages (heap corruption, failed checks) to the terminal, which CI does
# not have; this sends them to stderr so that a crash of the test process says why.
export LIBC_FATAL_STDERR_=1
# Swift Testing runs tests in parallel inside one process; its closing line counts them.
swift test --skip-build 2>&1 | grep -Ev '(Test .* started\.$|^Test Case .* started)' || status=1

if compgen -G "Tests/Integration/test_*.py" >/dev/null; then
  echo "== integration tests (real pamtester, secret-tool, secretstorage, keyring, git)"
  /usr/bin/python3 -m pytest -q -p no:cacheprovider Tests/Integration || status=1
fi

# A bounded libFuzzer run of every target in Fuzz/ (scripts/fuzz.sh, own build in .build-fuzz);
# KEYWELL_FUZZ_SECONDS=0 skips it.
fuzz_seconds="${KEYWELL_FUZZ_SECONDS:-20}"
if [ "$fuzz_seconds" != 0 ]; then
  echo "== fuzz (${fuzz_seconds}s per target)"
  bash scripts/fuzz.sh --seconds "$fuzz_seconds" || status=1
fi
exit "$status"
