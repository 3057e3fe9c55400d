#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One phase of `make test`: `swift test --skip-build ARGS...` with its whole output in
# build/test/NAME.log. What it prints is what CI keeps: each suite's result as it ends, then, once
# the phase is over, every failing test's issues and context. The test run's own output (relay logs
# at info level, hundreds of started/passed lines) is far longer than what CI shows of a run, and a
# failure in its middle was cut out of the excerpt (stop 42's CI: 3 issues, 1 of them visible).
#
# The environment passes through (SWIFTMOQ_CHECK_EXPIRIES, SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH).
#
# RERUN_FAILED=1 (the real-time phases: media, solo, isolated) runs a phase's failed tests again,
# alone, when at most RERUN_MAX (3) failed (scripts/rerun-real-time.sh: when, how often, and when a
# test that keeps failing is inconclusive rather than failed). These tests play media against the
# clock with no tolerance (every audio frame, no underrun); on this 2-core VM the host's stolen CPU
# broke one or more of them in about every other CI run, a different one each time, never alone on
# a calm host. What was rerun is printed, and both logs are kept.
set -euo pipefail
cd "$(dirname "$0")/.."

name=$1
shift
SWIFT=${SWIFT:-swift}
LOGS=build/test
mkdir -p "$LOGS"
log="$LOGS/$name.log"
rm -f "$log" "$LOGS/$name"*.xml "$LOGS/$name-rerun.log"

# What the host took from the phase: CPU time stolen by the hypervisor, and time every task waited
# on I/O (the page cache refilled from disk), both in ms; printed when it ends, beside the results.
host_stalls() {
    local steal io
    steal=$(awk '/^cpu /{print $9 * 10}' /proc/stat 2>/dev/null || echo 0)
    io=$(awk '/^full/{sub("total=", "", $5); print int($5 / 1000)}' /proc/pressure/io 2>/dev/null || echo 0)
    echo "${steal:-0} ${io:-0}"
}
read -r steal0 io0 <<<"$(host_stalls)"
echo "== test: $name (log: $log)"
# Suites' results as they end (progress on a 2-core machine that takes minutes per phase).
set +e
"$SWIFT" test --skip-build --xunit-output "$LOGS/$name.xml" "$@" 2>&1 | tee "$log" | grep --line-buffered -E '^(✘|✔|━) Suite |^✘ Test ("|[A-Za-z_]+\().* failed after' |
    cut -c1-300
status=${PIPESTATUS[0]}
set -e
grep -E '^[✔✘━] Test run with' "$log" | cut -c1-300 || true
read -r steal1 io1 <<<"$(host_stalls)"
echo "   host: $((steal1 - steal0)) ms of CPU stolen, $((io1 - io0)) ms with every task waiting on I/O"
if [ "$status" -ne 0 ] && [ "${RERUN_FAILED:-0}" = 1 ]; then
    # The failed tests' identifiers (Module.Suite/function()) from the xUnit report, as --filter patterns.
    failed=$(python3 scripts/failed-tests.py "$LOGS/$name-swift-testing.xml" || true)
    count=$(printf '%s' "$failed" | grep -c . || true)
    if [ "$count" -gt 0 ] && [ "$count" -le "${RERUN_MAX:-3}" ]; then
        echo "== test: $name: $count failed; each is run again, alone (real-time tests; see scripts/rerun-real-time.sh):"
        printf '%s\n' "$failed" | sed 's/^/   /'
        printf '%s\n' "$failed" >"$LOGS/$name.rerun"
        rerun_status=0
        ./scripts/rerun-real-time.sh "$LOGS/$name-rerun.log" "$LOGS/$name.rerun" -- "$SWIFT" test --skip-build ||
            rerun_status=1
        grep -E '^[✔✘━] Test run with|^✘ Test .*recorded an issue' "$LOGS/$name-rerun.log" | cut -c1-300 || true
        if [ "$rerun_status" -eq 0 ]; then
            echo "== test: $name: passed when rerun, or inconclusive (above); the first attempt's failures are in $log:"
            grep -E '^✘ Test .*recorded an issue' "$log" | cut -c1-600 | head -20 || true
            exit 0
        fi
    fi
fi
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
