#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/ (Swift's -sanitize=fuzzer,address) and runs each for a
# bounded time on a copy of its seed corpus in Fuzz/corpus/<target>/. Fails when a target
# crashes, leaks or trips an invariant; the reproducer is left in .build-fuzz/artifacts/.
#   scripts/fuzz.sh [--seconds N] [--summary FILE] [--build-only | --no-build] [target ...]
#   (default 20 s each, every target)
# --summary FILE: one JSON line per target (executions, corpus size, crashes) for
# `keywell-bench security-report`. --build-only builds and stops; --no-build runs what an
# earlier --build-only built (scripts/test.sh builds beside the integration suite).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/toolchain.sh

seconds=20
summary=""
build_targets=1
run_targets=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seconds=*) seconds="${1#*=}"; shift ;;
    --summary) summary="$2"; shift 2 ;;
    --summary=*) summary="${1#*=}"; shift ;;
    --build-only) run_targets=0; shift ;;
    --no-build) build_targets=0; shift ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(QueryFuzzer DBusDecodeFuzzer KeychainHeaderFuzzer CLIArgumentFuzzer SSHAgentFuzzer
  KeyringFileFuzzer ExportImportFuzzer ControlFrameFuzzer FlatpakInfoFuzzer PinentryReplyFuzzer PamControlFuzzer)

scratch=.build-fuzz
# The fuzz targets exist only when KEYWELL_FUZZ is set (Package.swift).
export KEYWELL_FUZZ=1
build=(swift build -c debug --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address)
mkdir -p "$scratch"
# C targets (a .c file in Fuzz/<target>/: pam_keywell's code) build with the toolchain's clang,
# the module's sources it needs beside them, into $scratch/c; UBSan too, any undefined behaviour
# a crash.
clang="$(dirname "$(command -v swift)")/clang"
is_c() { compgen -G "Fuzz/$1/*.c" >/dev/null; }
pam_sources=(pam/control_client.c pam/deadline.c pam/secret.c pam/runtime_dir.c)
mkdir -p "$scratch/c"
for target in "${targets[@]}"; do
  [ "$build_targets" = 1 ] || break
  echo "== build $target"
  if is_c "$target"; then
    if ! "$clang" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g -O1 -std=gnu11 -Wall -Wextra -Werror -Ipam \
        -DKEYWELLD_PATH='"/usr/local/bin/keywelld"' -o "$scratch/c/$target" Fuzz/"$target"/*.c "${pam_sources[@]}" -lpam \
        >"$scratch/build-$target.log" 2>&1; then
      grep -v 'ld.gold: warning: Cannot export local symbol' "$scratch/build-$target.log" | tail -40 >&2
      echo "fuzz.sh: building $target failed" >&2
      exit 1
    fi
    continue
  fi
  # gold warns about every ASan helper symbol; keep the log for real errors.
  if ! "${build[@]}" --product "$target" >"$scratch/build-$target.log" 2>&1; then
    grep -v 'ld.gold: warning: Cannot export local symbol' "$scratch/build-$target.log" | tail -40 >&2
    echo "fuzz.sh: building $target failed" >&2
    exit 1
  fi
done
bin="$("${build[@]}" --show-bin-path)"
[ "$run_targets" = 1 ] || exit 0

# The same for ASan's own check at exit (see -detect_leaks=0 below).
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

mkdir -p "$scratch/artifacts"
# One target's run; its report goes to $scratch/<target>.report, printed when it ends.
run_target() {
  local target="$1" corpus log seeds artifacts_before program code executions crashes
  # Work on a copy: new inputs found in a short CI run are not meant for the repository.
  corpus="$scratch/corpus/$target"
  rm -rf "$corpus"; mkdir -p "$corpus"
  cp Fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
  echo "== fuzz $target for ${seconds}s"
  log="$scratch/$target.log"
  seeds=$(find "$corpus" -type f | wc -l)
  artifacts_before=$(find "$scratch/artifacts" -name "$target-*" | wc -l)
  # -detect_leaks=0: LeakSanitizer cannot follow Swift's tagged references (an enum payload with
  # spare bits, as in Data), so it calls lazily made globals leaks; ASan still checks every access.
  program="$bin/$target"
  is_c "$target" && program="$scratch/c/$target"
  [ -x "$program" ] || { echo "fuzz.sh: $program is not built (scripts/fuzz.sh --build-only)"; return 1; }
  "$program" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -detect_leaks=0 \
    -print_final_stats=1 -artifact_prefix="$scratch/artifacts/$target-" "$corpus" >"$log" 2>&1
  code=$?
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|#[0-9]+ *DONE)' "$log" | sed 's/^/  /'
  if [ -n "$summary" ]; then
    # Crashes: reproducers this run wrote (libFuzzer stops at the first), or a failing exit without one.
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    crashes=$(( $(find "$scratch/artifacts" -name "$target-*" | wc -l) - artifacts_before ))
    [ "$code" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes=1
    printf '{"target":"%s","seconds":%s,"exit":%d,"executions":%d,"seeds":%d,"corpus":%d,"crashes":%d}\n' \
      "$target" "$seconds" "$code" "${executions:-0}" "$seeds" "$(find "$corpus" -type f | wc -l)" "$crashes" >>"$summary"
  fi
  if [ "$code" -ne 0 ]; then
    echo "fuzz.sh: $target failed (exit $code); last lines of $log:"
    tail -40 "$log"
  fi
  return "$code"
}

# The runs are bounded by wall time, not CPU time, so $jobs at once (one per core by default,
# KEYWELL_FUZZ_JOBS) take a $jobs-th of the stage's time and each still gets a core on a quiet
# machine (Fuzz/README.md, "Time in CI"). Each run is one process on one core.
jobs="${KEYWELL_FUZZ_JOBS:-$(nproc)}"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: KEYWELL_FUZZ_JOBS must be a positive number" >&2; exit 2; }
status=0
finish_one() {
  local pid
  wait -n -p pid
  local code=$?
  cat "$scratch/${running[$pid]}.report"
  if [ "$code" -ne 0 ]; then
    echo "fuzz.sh: ${running[$pid]} failed (exit $code)" >&2
    status=1
  fi
  unset "running[$pid]"
}
declare -A running=()
for target in "${targets[@]}"; do
  [ "${#running[@]}" -lt "$jobs" ] || finish_one
  run_target "$target" >"$scratch/$target.report" 2>&1 &
  running[$!]="$target"
done
while [ "${#running[@]}" -gt 0 ]; do finish_one; done
exit "$status"
