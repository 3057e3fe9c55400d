#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds and runs a package that depends on this one (scripts/consumer), in a temporary
# directory, as a user with only Debian's -dev packages would: the repository's -pthread-free
# pkg-config copies are off the search path and no private .pc file may exist.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SWIFT=${SWIFT:-swift}
JOBS=${JOBS:-2}
if ls /usr/local/lib/pkgconfig/swiftmoq-*.pc >/dev/null 2>&1; then
  echo "consumer-test: private swiftmoq-*.pc files exist in /usr/local/lib/pkgconfig: the test would not show what a user sees" >&2
  exit 1
fi
WORK=$(mktemp -d /tmp/swiftmoq-consumer.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cp -r "$ROOT/scripts/consumer/Sources" "$WORK/"
# A path dependency is named after its directory (lowercased), whatever the checkout is called.
IDENTITY=$(basename "$ROOT" | tr "[:upper:]" "[:lower:]")
sed -e "s|@SWIFTMOQ@|$ROOT|" -e "s|@IDENTITY@|$IDENTITY|" "$ROOT/scripts/consumer/Package.swift.in" >"$WORK/Package.swift"
cd "$WORK"
env -u PKG_CONFIG_PATH "$SWIFT" build -j "$JOBS" 2>&1 | tee build.log | grep -E "error|warning: prohibited|Compiling Consumer|Build complete" || true
grep -q "Build complete" build.log || { echo "consumer-test: the consumer package did not build" >&2; tail -30 build.log >&2; exit 1; }
# Its own registry, like the tests: never the user's.
GST_REGISTRY_1_0="$WORK/registry.bin" timeout 120 "$("$SWIFT" build --show-bin-path)/Consumer" | tee run.log
grep -q "^consumer: ok" run.log
