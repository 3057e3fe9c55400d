#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One phase of `make test`: `swift test --skip-build ARGS...` with its whole output in
# build/test/NAME.log. What it prints is what CI keeps: each suite's result as it ends, then, once
# the phase is over, every failing test's issues and context. The test run's own output (relay logs
# at info level, hundreds of started/passed lines) is far longer than what CI shows of a run, and a
# failure in its middle was cut out of the excerpt (stop 42's CI: 3 issues, 1 of them visible).
#
# The environment passes through (SWIFTMOQ_CHECK_EXPIRIES, SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH).
set -euo pipefail
cd "$(dirname "$0")/.."

name=$1
shift
SWIFT=${SWIFT:-swift}
LOGS=build/test
mkdir -p "$LOGS"
log="$LOGS/$name.log"

echo "== test: $name (log: $log)"
# Suites' results as they end (progress on a 2-core machine that takes minutes per phase).
set +e
"$SWIFT" test --skip-build "$@" 2>&1 | tee "$log" | grep --line-buffered -E '^(✘|✔|━) Suite |^✘ Test ("|[A-Za-z_]+\().* failed after' |
    cut -c1-300
status=${PIPESTATUS[0]}
set -e
grep -E '^[✔✘━] Test run with' "$log" | cut -c1-300 || true
if [ "$status" -ne 0 ]; then
    echo "== test: $name FAILED (exit $status); the failing tests' issues with what follows them (log lines left out):"
    grep -E -A8 '^✘ Test .*recorded an issue' "$log" | grep -vE '^20[0-9]{2}-[0-9]{2}-[0-9]{2}T|^◇ |^✔ ' |
        cut -c1-600 | head -120 || true
    grep -E '^Fatal error|^Crash|^💣|Program crashed' "$log" | head -5 || true
    # A crash or a hang leaves no issue line: the log's end says where it was.
    if ! grep -qE '^✘ Test .*recorded an issue' "$log"; then
        tail -40 "$log" | cut -c1-300
    fi
fi
exit "$status"
