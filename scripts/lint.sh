#!/usr/bin/env bash
# Style checks for the Swift sources (docs/contributing.md, "Style"); scripts/test.sh runs it first:
#   scripts/lint.sh
# 1. swift-format's rules, configured in .swift-format, as errors (--strict). Its pretty-printer
#    check is off (--debug-disable-pretty-print): the code keeps its own line breaks and aligned
#    continuation lines, which the printer would rewrite nearly everywhere. `swift-format format`
#    with the same file lays out a new file in the project's indentation and width.
# 2. What the printer would have caught that matters here: no tab, no trailing blank, no line
#    longer than the hard cap (the configured width, 140, is the aim; the cap is for the odd long
#    string or table row).
# 3. One lock for shared state, `Protected` (docs/design.md, "Locks"): Synchronization.Mutex
#    hands a contended lock over where ThreadSanitizer cannot see it.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/toolchain.sh

swift_format="$(command -v swift-format || echo /opt/swift/usr/bin/swift-format)"
[ -x "$swift_format" ] || { echo "lint.sh: swift-format not found (it ships with the Swift toolchain)" >&2; exit 1; }
folders=(Sources Tests Fuzz)
max_line=200

status=0
"$swift_format" lint --strict --recursive --parallel --debug-disable-pretty-print --configuration .swift-format "${folders[@]}" || status=1

if grep -rnP --include='*.swift' '\t' "${folders[@]}"; then
  echo "lint.sh: tab characters above (indent with 4 spaces)" >&2; status=1
fi
if grep -rnP --include='*.swift' '[ \t]+$' "${folders[@]}"; then
  echo "lint.sh: trailing blanks above" >&2; status=1
fi
# keywell-bench's `locks` rows measure the two side by side, so they alone may name Mutex.
if grep -rnE --include='*.swift' '\bMutex *(<|\()' "${folders[@]}" | grep -v '^Sources/keywell-bench/LockBenchmark.swift:'; then
  echo "lint.sh: Synchronization.Mutex above: use Protected (KeywellSystem), which ThreadSanitizer sees" >&2; status=1
fi
long=$(find "${folders[@]}" -name '*.swift' -print0 | xargs -0 awk -v max="$max_line" \
  'length($0) > max { printf "%s:%d: %d characters\n", FILENAME, FNR, length($0) }')
if [ -n "$long" ]; then
  echo "$long"
  echo "lint.sh: lines above are longer than $max_line characters" >&2; status=1
fi
[ "$status" -eq 0 ] && echo "lint: clean"
exit "$status"
