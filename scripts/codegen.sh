#!/usr/bin/env bash
# Writes the Swift of every D-Bus interface of dbus/ (the tables, protocols and dispatch the
# services implement, and the name constants clients share) from its XML:
#   scripts/codegen.sh           rewrite what differs
#   scripts/codegen.sh --check   write nothing; fail when a committed file differs
# The output is committed; DBusCodegenTests fails when it is out of step with dbus/
# (docs/dbus-layer.md, "Interfaces from XML").
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/toolchain.sh
swift build --product keywell-dbus-codegen >/dev/null
exec "$(swift build --show-bin-path)/keywell-dbus-codegen" "$@" "$PWD"
