#!/usr/bin/env bash
# Builds keywelld, keywell-bench (release) and pam_keywell.so, then prints SECURITY.md's figures
# table: load, kill -9, password throttling, fuzzing (scripts/fuzz.sh, its own build in
# .build-fuzz), corrupt files, disk full, memory scan, dbus-monitor, other users, PAM under
# stress. Needs root for the disk-full (tmpfs), memory-scan, other-user and PAM rows; about
# 6 minutes once built.
#   scripts/security-report.sh [keywell-bench security-report options…]
#   (--fuzz-seconds N, --corrupt-files N, --section TITLE …: see keywell-bench security-report --help)
# SCRATCH=folder picks the build folder (default .build-test-switches): its binaries are test
# builds (KEYWELL_TEST_SWITCHES=1, docs/contributing.md "Test switches"), which the D-Bus rows need
# for the test KDF cost and a short throttle; kept apart from .build, whose release keywelld
# ignores the switches.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/toolchain.sh

scratch="${SCRATCH:-.build-test-switches}"
export KEYWELL_TEST_SWITCHES=1
echo "== build (release)" >&2
swift build -c release --scratch-path "$scratch" --product keywelld >&2
swift build -c release --scratch-path "$scratch" --product keywell-bench >&2
swift build -c release --scratch-path "$scratch" --product keywell >&2  # the attack tests run the CLI
make -s -C pam >&2
bin="$(swift build -c release --scratch-path "$scratch" --show-bin-path)"

echo "== security report" >&2
exec "$bin/keywell-bench" security-report --repository "$PWD" --pam-module "$PWD/pam/build/pam_keywell.so" "$@"
