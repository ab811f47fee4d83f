#!/usr/bin/env bash
# Builds Keywell and runs every test suite: the Swift tests (engine, D-Bus layer, daemon, client
# library, CLI) and the integration tests that drive real outside clients (pamtester, secret-tool,
# python secretstorage/keyring, git). Run scripts/setup.sh first on a fresh machine.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/toolchain.sh

status=0
# Every suite runs under a time limit (docs/contributing.md, "Time limits"): a hang fails the run
# instead of stalling it, and SIGABRT first makes the stuck process print where it stands
# (Swift's backtracer, Python's faulthandler); SIGKILL follows if that does not end it.
limited() {
  local seconds="$1"
  shift
  timeout --signal=ABRT --kill-after=60 "$seconds" "$@"
  local code=$?
  if [ "$code" -eq 124 ] || [ "$code" -eq 134 ] || [ "$code" -eq 137 ]; then
    echo "test.sh: '$*' ended by its ${seconds}s limit or aborted (exit $code)" >&2
  fi
  return "$code"
}

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
limited 120 make -s -C pam check || status=1

echo "== swift test"
# glibc writes its abort messages (heap corruption, failed checks) to the terminal, which CI does
# not have; this sends them to stderr so that a crash of the test process says why.
export LIBC_FATAL_STDERR_=1
# Swift Testing runs tests in parallel inside one process; its closing line counts them.
# pipefail: the suite's status, not grep's, decides.
limited "${KEYWELL_SWIFT_TEST_LIMIT:-900}" swift test --skip-build 2>&1 \
  | grep -Ev '(Test .* started\.$|^Test Case .* started)' || status=1

if compgen -G "Tests/Integration/test_*.py" >/dev/null; then
  echo "== integration tests (real pamtester, secret-tool, secretstorage, keyring, git)"
  # -rs: every skip prints its reason. faulthandler_timeout: a test still running after 300 s
  # prints every thread's stack (and keeps going, until the whole run's limit ends it).
  limited "${KEYWELL_PYTEST_LIMIT:-1200}" /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs \
    -o faulthandler_timeout=300 Tests/Integration || status=1
fi

# pam_keywell under AddressSanitizer + UBSan: its C tests, then real PAM logins with the sanitized
# module (scripts/sanitize.sh; docs/contributing.md, "Sanitizers"). About 3 minutes on a busy
# 2-core machine.
echo "== sanitizers: ASan + UBSan (pam_keywell)"
limited 600 bash scripts/sanitize.sh --asan || status=1

# The concurrent Swift suites under ThreadSanitizer: off unless KEYWELL_TSAN=1, because its own
# build alone (15 minutes on a busy 2-core machine) does not fit CI's 30-minute budget beside the
# rest (docs/contributing.md, "Sanitizers", has the figures).
if [ "${KEYWELL_TSAN:-0}" = 1 ]; then
  echo "== sanitizers: ThreadSanitizer (Swift)"
  limited 2400 bash scripts/sanitize.sh --tsan || status=1
fi

# A bounded libFuzzer run of every target in Fuzz/ (scripts/fuzz.sh, own build in .build-fuzz);
# KEYWELL_FUZZ_SECONDS=0 skips it. 8 s for each of the eleven targets keeps the stage within two
# minutes of what five targets at 20 s took (Fuzz/README.md, "Time in CI"); longer runs are
# documented there.
fuzz_seconds="${KEYWELL_FUZZ_SECONDS:-8}"
if [ "$fuzz_seconds" != 0 ]; then
  echo "== fuzz (${fuzz_seconds}s per target)"
  # Its own build (a few minutes on two cores) plus every target's seconds.
  limited "$((1200 + 16 * fuzz_seconds))" bash scripts/fuzz.sh --seconds "$fuzz_seconds" || status=1
fi
exit "$status"
