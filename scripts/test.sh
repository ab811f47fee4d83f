#!/usr/bin/env bash
# Builds Keywell and runs every test suite: the Swift tests (engine, D-Bus layer, daemon, client
# library, CLI) and the integration tests that drive real outside clients (pamtester, secret-tool,
# python secretstorage/keyring, git). Run scripts/setup.sh first on a fresh machine.
#
# The integration tests run the release build, the programs as shipped (docs/contributing.md,
# "CI"); the Swift suites run the debug build, whose keywelld reads the test switches.
# Environment:
#   KEYWELL_STAGES="lint pam swift integration asan fuzz"   the stages to run (default: these;
#                  add tsan for the ThreadSanitizer stage), always after the builds they need
#   KEYWELL_PYTEST_FILES="Tests/Integration/test_x.py …"    the integration stage's files (default: all)
#   KEYWELL_COPY_SUITE=1   run the integration and sanitizer stages from a copy even when the
#                  checkout is within other users' reach (it is copied when it is not)
#   KEYWELL_SWIFT_TEST_LIMIT, KEYWELL_PYTEST_LIMIT, KEYWELL_FUZZ_SECONDS  see below
# Each stage prints its duration, and the run ends with a table of them.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/toolchain.sh
source scripts/lib/release-build.sh

status=0
stages=" ${KEYWELL_STAGES:-lint pam swift integration asan fuzz} "
wants() { [[ "$stages" == *" $1 "* ]]; }

# Each stage's wall time and the CPU time its processes used (user + system of every process
# waited for; not daemons that outlive their parent, such as a PAM login's keywelld), printed as
# it ends and again as a table at the end of the run. On a busy machine a stage's wall time is
# about its CPU time over the share of the cores it gets, so CPU time is what compares runs.
timings=()
current_stage=
stage_started=0
stage_cpu_started=0
# The CPU seconds of this shell's finished children so far, into cpu_now: `times`' second line,
# run in this shell (not in $(…): a subshell's count of children starts at zero).
times_file="$(mktemp)"
cpu_now=0
children_cpu() {
  local user system
  times >"$times_file"
  read -r user system < <(tail -1 "$times_file")
  cpu_now=$(awk -v u="$user" -v s="$system" 'function sec(t, m) { m = t; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", t); sub(/s$/, "", t); return m * 60 + t }
    BEGIN { printf "%d\n", sec(u) + sec(s) }')
}
end_stage() {
  [ -n "$current_stage" ] || return 0
  children_cpu
  local took=$((SECONDS - stage_started)) cpu=$((cpu_now - stage_cpu_started))
  echo "test.sh: $current_stage took ${took} s (CPU ${cpu} s)"
  timings+=("$(printf '%6d s  %6d s  %s' "$took" "$cpu" "$current_stage")")
  current_stage=
}
stage() {
  end_stage
  current_stage="$1"
  stage_started=$SECONDS
  children_cpu
  stage_cpu_started=$cpu_now
  echo "== $1"
}
summary() {
  end_stage
  # A run cut short leaves no fuzz build behind (it has a process group of its own).
  [ -z "${fuzz_build_pid:-}" ] || kill -- -"$fuzz_build_pid" 2>/dev/null
  [ -z "${suite_copy:-}" ] || rm -rf "$suite_copy"
  echo "test.sh: stage durations"
  printf '%8s  %8s  %s\n' wall CPU stage
  printf '%s\n' "${timings[@]}"
  children_cpu
  printf '%6d s  %6d s  total\n' "$SECONDS" "$cpu_now"
  rm -f "$times_file"
}
trap summary EXIT

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
if wants lint; then
  stage "lint"
  bash scripts/lint.sh || status=1
fi

# Two builds. Debug: the Swift suites (`swift test`), whose daemons need the test switches
# (a cheap KDF, short delays), and the one integration test that checks a daemon reads them.
# Release, every product, built as the Debian package builds it (scripts/lib/release-build.sh:
# the Swift runtime static, the switches compiled out): what the integration suite and the
# sanitized PAM logins run, and what scripts/package.sh then ships (docs/contributing.md, "CI").
unset KEYWELL_TEST_SWITCHES
stage "build (debug)"
if wants swift; then
  swift build --build-tests --quiet || exit 1
else
  swift build --product keywelld --quiet || exit 1
fi
make -s -C pam || exit 1
debug_bin="$(swift build --show-bin-path)"
if wants integration || wants asan; then
  stage "build (release)"
  # Every product in one build, not keywell-bench, keywelld and keywell by name: that would skip
  # DBusCodegen, keywell-dbus-codegen and the test support module (about 12 CPU-seconds, measured
  # 29 November 2026) but cost two more plannings (about 1.2 each) and serialise two large static
  # links that one build overlaps with compiling (docs/contributing.md, "CI").
  keywell_release_build --quiet || exit 1
fi
release_bin="$(keywell_release_build --show-bin-path)"
export PAM_KEYWELL_SO="$PWD/pam/build/pam_keywell.so"

if wants pam; then
  stage "pam unit tests"
  limited 120 make -s -C pam check || status=1
fi

if wants swift; then
  stage "swift test (debug build)"
  # glibc writes its abort messages (heap corruption, failed checks) to the terminal, which CI does
  # not have; this sends them to stderr so that a crash of the test process says why.
  # Swift Testing runs tests in parallel inside one process; its closing line counts them.
  # pipefail: the suite's status, not grep's, decides.
  LIBC_FATAL_STDERR_=1 KEYWELL_BIN_DIR="$debug_bin" KEYWELLD="$debug_bin/keywelld" KEYWELL="$debug_bin/keywell" \
    limited "${KEYWELL_SWIFT_TEST_LIMIT:-900}" swift test --skip-build 2>&1 \
    | grep -Ev '(Test .* started\.$|^Test Case .* started)' || status=1
fi

# From here on, the programs as shipped.
export KEYWELL_BIN_DIR="$release_bin"
export KEYWELLD="$release_bin/keywelld"
export KEYWELL="$release_bin/keywell"
# test_attack_test_switches.py: the release keywelld ignores the switches, the debug one (its
# control, the only debug program the integration suite starts) reads them.
export KEYWELLD_RELEASE="$release_bin/keywelld"
export KEYWELLD_DEBUG="$debug_bin/keywelld"

# The integration tests run keywelld and its clients as a throwaway user (docs/contributing.md,
# "Whom the integration tests run keywelld as"), who must reach the programs and the tests' own
# scripts, as the sanitizer stage's PAM logins must. A checkout below a folder others cannot enter
# (root's 0700 home, say) is copied for both stages to a folder they can: the tree without its
# builds, and the programs under test beside it; the copy goes when the run ends.
suite_copy=
reachable() {
  setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
    test -r "$PWD/Tests/Integration/scripted_pinentry.py" -a -x "$KEYWELLD" -a -x "$KEYWELLD_DEBUG" 2>/dev/null
}
if { wants integration || wants asan; } && { [ "${KEYWELL_COPY_SUITE:-0}" = 1 ] || ! reachable; }; then
  suite_copy="$(mktemp -d /tmp/keywell-suite.XXXXXX)" || exit 1
  echo "test.sh: $PWD is out of other users' reach; the integration and sanitizer stages run from $suite_copy"
  tar --exclude=./.build --exclude=./.build-fuzz --exclude=./.build-tsan --exclude=./.build-package \
    -cf - . | tar -xf - -C "$suite_copy" || exit 1
  mkdir -p "$suite_copy/.programs/debug"
  find "$release_bin" -maxdepth 1 -type f -perm -u+x -exec cp -p {} "$suite_copy/.programs/" \;
  cp -p "$KEYWELLD_DEBUG" "$suite_copy/.programs/debug/keywelld"
  # tar gives the copy the checkout's own modes (a clone made under umask 077 has 0700 folders).
  chmod -R go+rX,go-w "$suite_copy"
  export KEYWELL_BIN_DIR="$suite_copy/.programs" KEYWELLD="$suite_copy/.programs/keywelld" \
    KEYWELL="$suite_copy/.programs/keywell" KEYWELLD_RELEASE="$suite_copy/.programs/keywelld" \
    KEYWELLD_DEBUG="$suite_copy/.programs/debug/keywelld" PAM_KEYWELL_SO="$suite_copy/pam/build/pam_keywell.so"
fi

# The fuzz targets' build (its own sanitized build in .build-fuzz, minutes of CPU) runs beside
# the integration suite, which spends much of its time waiting (daemons starting, PAM logins,
# the throttle's delays). At nice 5: the suite's processes get three times its share of a core
# they both want, and the build still gets a third of what a busy machine's other jobs get
# (at nice 10 it would get a tenth, next to nothing); back to the normal priority when the
# suite ends (docs/contributing.md, "CI").
fuzz_seconds="${KEYWELL_FUZZ_SECONDS:-8}"
fuzz_build_pid=
if wants integration && compgen -G "Tests/Integration/test_*.py" >/dev/null; then
  stage "integration tests (release build)"
  if wants fuzz && [ "$fuzz_seconds" != 0 ]; then
    mkdir -p .build-fuzz
    echo "test.sh: the fuzz targets build beside the integration tests (log: .build-fuzz/build.log)"
    setsid nice -n 5 timeout --signal=ABRT --kill-after=60 1200 bash scripts/fuzz.sh --build-only \
      >.build-fuzz/build.log 2>&1 </dev/null &
    fuzz_build_pid=$!
  fi
  # -rs: every skip prints its reason. --durations: the slowest tests, where the stage's time
  # goes (docs/contributing.md, "CI"). faulthandler_timeout: a test still running after 300 s
  # prints every thread's stack (and keeps going, until the whole run's limit ends it).
  # shellcheck disable=SC2086 # a list of files
  (cd "${suite_copy:-.}" && limited "${KEYWELL_PYTEST_LIMIT:-2700}" /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs \
    --durations=30 -o faulthandler_timeout=300 ${KEYWELL_PYTEST_FILES:-Tests/Integration}) || status=1
fi

# pam_keywell under AddressSanitizer + UBSan: its C tests, then real PAM logins with the sanitized
# module (scripts/sanitize.sh; docs/contributing.md, "Sanitizers"). About 3 minutes on a busy
# 2-core machine.
if wants asan; then
  stage "sanitizers: ASan + UBSan (pam_keywell)"
  (cd "${suite_copy:-.}" && limited 600 bash scripts/sanitize.sh --asan) || status=1
fi

# The concurrent Swift suites under ThreadSanitizer: off unless asked for (KEYWELL_STAGES with
# tsan, or KEYWELL_TSAN=1), because its own build alone (15 minutes on a busy 2-core machine)
# does not fit CI's 30-minute budget beside the rest; CI runs it as a job of its own, .ci/tsan
# (docs/contributing.md, "Sanitizers", has the figures).
if wants tsan || [ "${KEYWELL_TSAN:-0}" = 1 ]; then
  stage "sanitizers: ThreadSanitizer (Swift)"
  limited 2400 bash scripts/sanitize.sh --tsan || status=1
fi

# A bounded libFuzzer run of every target in Fuzz/ (scripts/fuzz.sh, own build in .build-fuzz,
# made beside the integration suite when that runs); KEYWELL_FUZZ_SECONDS=0 skips it. 8 s for
# each of the eleven targets (Fuzz/README.md, "Time in CI"); longer runs are documented there.
if [ -n "$fuzz_build_pid" ]; then
  stage "fuzz (${fuzz_seconds}s per target, built beside the integration tests)"
  # The build's rest, if any, at the normal priority (setsid made it a process group).
  renice -n 0 -g "$fuzz_build_pid" >/dev/null 2>&1
  wait "$fuzz_build_pid"
  fuzz_built=$?
  cat .build-fuzz/build.log
  if [ "$fuzz_built" -ne 0 ]; then
    echo "test.sh: building the fuzz targets failed or ran over its 1200 s (exit $fuzz_built)" >&2
    status=1
  else
    # Every target's seconds, one target per core at once.
    limited "$((300 + 16 * fuzz_seconds))" bash scripts/fuzz.sh --no-build --seconds "$fuzz_seconds" || status=1
  fi
elif wants fuzz && [ "$fuzz_seconds" != 0 ]; then
  stage "fuzz (${fuzz_seconds}s per target)"
  # Its own build (a few minutes on two cores) plus every target's seconds.
  limited "$((1200 + 16 * fuzz_seconds))" bash scripts/fuzz.sh --seconds "$fuzz_seconds" || status=1
fi
exit "$status"
