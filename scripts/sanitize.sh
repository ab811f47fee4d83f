#!/usr/bin/env bash
# The sanitizer builds (docs/contributing.md, "Sanitizers"):
#   scripts/sanitize.sh --asan          pam_keywell's C tests, then real PAM logins through
#                                       pamtester, with the module under AddressSanitizer + UBSan
#   scripts/sanitize.sh --tsan [SUITE…] the Swift suites under ThreadSanitizer (own build in
#                                       .build-tsan); without SUITE the ones CI runs (TSAN_CI_SUITES)
#   scripts/sanitize.sh --all           both, every Swift suite under ThreadSanitizer
# Any sanitizer report fails the run. scripts/test.sh runs `--asan` and `--tsan`, each under its
# own time limit. The login tests need root, like the rest of the integration suite.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/toolchain.sh

# The Swift suites CI runs under ThreadSanitizer: the ones whose code runs concurrently (the
# daemon's sessions and timers, the D-Bus connection and its dispatch, the Secret Service and
# access layers over them). The others are mostly single-threaded parsers and files; `--all`
# covers them too. docs/contributing.md, "Sanitizers", has the timings behind this choice.
TSAN_CI_SUITES=(KeywellDaemonTests KeywellDBusTests KeywellSecretServiceTests KeywellAccessTests)
# Tests that cannot work under ThreadSanitizer, left out of its run (and run by plain `swift test`):
# - the memory scan reads every mapping of the daemon, and TSan's shadow memory is terabytes of
#   address space (the scanner dies with MemoryError);
# - the million-element round trips and the GetSecrets of ServiceLimits.objectPathsPerCall
#   collections outlast their 20-25 s reply timeouts at TSan's 5-15x slowdown. Smaller calls of
#   the same paths run.
TSAN_SKIP='SecretsInMemoryTests/lockingLeavesNoMasterKeyInTheDaemon|RoundTripTests/millionElementArrays'
TSAN_SKIP+='|LimitsTests/getSecretsOfAsManyDistinctCollectionsAsTheCapAnswersTheRealOnes'
# The PAM logins run with the sanitized module: login creates and unlocks the keychain, the last
# close locks it, password change, every failure path of the module against stub daemons
# (test_pam.py), and the TPM login without a password.
ASAN_PYTEST=(Tests/Integration/test_pam_daemon.py Tests/Integration/test_pam.py
             "Tests/Integration/test_login_unlock.py::test_a_login_without_password_unlocks_login")

asan=0 tsan=0 all=0
suites=()
while [ $# -gt 0 ]; do
  case "$1" in
    --asan) asan=1 ;;
    --tsan) tsan=1 ;;
    --all) asan=1 tsan=1 all=1 ;;
    -*) echo "usage: scripts/sanitize.sh --asan | --tsan [SUITE...] | --all" >&2; exit 2 ;;
    *) suites+=("$1") ;;
  esac
  shift
done
[ "$asan$tsan" != 00 ] || { echo "usage: scripts/sanitize.sh --asan | --tsan [SUITE...] | --all" >&2; exit 2; }

status=0
elapsed() { echo "sanitize.sh: $1 took $(($(date +%s) - $2)) s"; }

run_asan() {
  local t0 logs
  t0=$(date +%s)
  echo "== pam unit tests under ASan + UBSan (pam/build-asan)"
  # Leaks count: the unit tests are whole programs of our own.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 make -s -C pam SANITIZE=1 check || return 1
  elapsed "ASan pam check" "$t0"

  t0=$(date +%s)
  echo "== PAM logins with pam_keywell under ASan + UBSan"
  if [ -z "${KEYWELLD:-}" ] || [ -z "${KEYWELL:-}" ]; then
    swift build --product keywelld --quiet && swift build --product keywell --quiet || return 1
    local bin
    bin="$(swift build --show-bin-path)"
    export KEYWELL_BIN_DIR="$bin" KEYWELLD="$bin/keywelld" KEYWELL="$bin/keywell"
  fi
  logs="$(mktemp -d /tmp/keywell-asan.XXXXXX)"
  # The module's forked child runs as the user until it execs the daemon: it must be able to
  # write a report here too (sticky, and nobody can list the others' files).
  chmod 1733 "$logs"
  # pamtester is not built with ASan, so its runtime is preloaded (it must come first);
  # libcrypt too, because ASan's crypt_r interceptor binds the real one when it starts and
  # pam_unix would otherwise bring libcrypt in only later (a call through a null pointer).
  local runtime
  runtime="$(${CC:-cc} -print-file-name=libasan.so)"
  [ -f "$runtime" ] || { echo "sanitize.sh: no libasan.so next to ${CC:-cc} (scripts/setup.sh)" >&2; return 1; }
  local code=0
  PAM_KEYWELL_SO="$PWD/pam/build-asan/pam_keywell.so" \
    KEYWELL_SANITIZER_PRELOAD="$runtime libcrypt.so.1" \
    ASAN_OPTIONS="detect_leaks=1:log_path=$logs/asan" \
    UBSAN_OPTIONS="print_stacktrace=1:log_path=$logs/ubsan" \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs -o faulthandler_timeout=300 "${ASAN_PYTEST[@]}" || code=1
  # A report in a process whose test still passed (say a leak at pamtester's exit) fails too.
  if compgen -G "$logs/*" >/dev/null; then
    echo "sanitize.sh: sanitizer reports from the PAM logins:" >&2
    cat "$logs"/* >&2
    code=1
  fi
  rm -rf "$logs"
  elapsed "ASan PAM logins" "$t0"
  return "$code"
}

run_tsan() {
  local t0 scratch=.build-tsan
  local build=(swift build --build-tests -c debug --sanitize=thread --scratch-path "$scratch" --quiet)
  t0=$(date +%s)
  echo "== Swift build under ThreadSanitizer ($scratch)"
  "${build[@]}" || return 1
  elapsed "TSan build" "$t0"

  local filter=()
  if [ "$all" = 0 ]; then
    [ ${#suites[@]} -gt 0 ] || suites=("${TSAN_CI_SUITES[@]}")
    local joined
    joined="$(IFS='|'; echo "${suites[*]}")"
    filter=(--filter "^($joined)\\.")
  fi
  t0=$(date +%s)
  echo "== Swift tests under ThreadSanitizer: ${suites[*]:-every suite}"
  # The daemon the suites start is the ThreadSanitizer build, not test.sh's: its races count
  # too. Every process writes its reports to $logs (the test bus passes TSAN_OPTIONS on to the
  # daemons it activates), which catches a report in a daemon whose stderr a test discards.
  # Suppressions: see the file's comments. The CLI is the plain debug build: `keywell` is a
  # static executable (Package.swift), which TSan cannot run (it crashes at start).
  swift build --product keywell --quiet || return 1
  local logs bin
  logs="$(mktemp -d /tmp/keywell-tsan.XXXXXX)"
  chmod 1733 "$logs"
  bin="$logs/bin"
  mkdir "$bin"
  ln -s "$PWD/$scratch/debug/keywelld" "$bin/keywelld"
  ln -s "$(swift build --show-bin-path)/keywell" "$bin/keywell"
  export KEYWELL_BIN_DIR="$bin" KEYWELLD="$bin/keywelld" KEYWELL="$bin/keywell"
  export TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1:log_path=$logs/tsan:suppressions=$PWD/scripts/tsan-suppressions.txt"
  export LIBC_FATAL_STDERR_=1
  local code=0
  swift test --skip-build -c debug --sanitize=thread --scratch-path "$scratch" "${filter[@]}" \
    --skip "$TSAN_SKIP" 2>&1 \
    | grep --line-buffered -Ev '(Test .* started\.$|^Test Case .* started)' || code=1
  if compgen -G "$logs/tsan*" >/dev/null; then
    echo "sanitize.sh: ThreadSanitizer reports:" >&2
    cat "$logs"/tsan* >&2
    code=1
  fi
  rm -rf "$logs"
  elapsed "TSan tests" "$t0"
  return "$code"
}

if [ "$asan" = 1 ]; then run_asan || status=1; fi
if [ "$tsan" = 1 ]; then run_tsan || status=1; fi
exit "$status"
