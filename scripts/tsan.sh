#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make tsan`: the test suite under ThreadSanitizer. Fails on any ThreadSanitizer report or
# failing test. The project's locks are pthread mutexes (MoqSync.Lock) so that TSan sees
# them; Synchronization.Mutex waits on a futex inside the uninstrumented runtime and would
# make every access it guards look like a race.
#
# Two phases, because instrumented code runs 5-15 times slower and some tests run in real
# time: the bulk of the suite in parallel, then the real-time suites one test at a time (each
# gets both cores). The overload and network-fault tests are left out: they measure how much
# an unthrottled publisher gets through, or how much plays within a 300 ms budget, and under
# ThreadSanitizer the instrumented code is the bottleneck by design (it drops what falls out
# of its budget, correctly).
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
JOBS=${JOBS:-2}
SCRATCH=.build-tsan
LOGS=build/tsan
mkdir -p "$LOGS"
rm -f "$LOGS"/*.log "$LOGS"/*.xml "$LOGS"/*.rerun

# Real time: encoders, decoders and sinks on the pipeline clock, and the relay fan-out whose
# publisher (Rust, not slowed down; over QUIC or WebSocket) sends newest groups first when the instrumented relay
# falls behind, so that its subscribers rightly skip the older groups that arrive late.
MEDIA='GstTests\.|MoqKitTests\.|MoqTestKitTests\.|InteropTests\.RelayInteropTests|ClusterInteropTests|InteropTests\.WebSocket'
# Tests that bound how fast something spreads loosen the bound under instrumentation.
export SWIFTMOQ_TSAN=1
SOLO='OverloadInteropTests|KitLoggerTests|ClientNetworkThreadsTests|NetworkFaultTests|LosslessReconnectTests|LongFormTests|LongFormPlayerTests|OutputSwitchTests|MPRISTests|rustPublisherToDecodebin|LadderPlaybackTests'

export TSAN_OPTIONS="halt_on_error=0 report_signal_unsafe=0 second_deadlock_stack=1 history_size=4 \
suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"

"$SWIFT" build --build-tests --sanitize=thread --scratch-path "$SCRATCH" -j "$JOBS"

status=0
run() {
    local name=$1
    shift
    echo "== tsan: $name"
    # A hang under instrumentation must fail here, with its log, not run into CI's limit.
    # Line-buffered (stdbuf reaches the test process through the environment): a test process
    # killed by the timeout leaves its last lines in the log instead of a lost stdio buffer.
    local failed=0
    if ! timeout --kill-after=30 "${TSAN_PHASE_TIMEOUT:-1200}" stdbuf -oL -eL \
        "$SWIFT" test --skip-build --sanitize=thread --scratch-path "$SCRATCH" --xunit-output "$LOGS/$name.xml" "$@" \
        >"$LOGS/$name.log" 2>&1; then
        failed=1
    fi
    grep -E '^✘ Test .*(failed|recorded)|Test run with' "$LOGS/$name.log" | cut -c1-300 || true
    # The real-time phase runs each failed test again, alone, as `make test` does (scripts/rerun-real-time.sh
    # says why): here they share the host with instrumentation 5-15 times slower, and CI saw ten of them
    # fail together in a run whose host stole a third of the CPU. ThreadSanitizer reports count in both.
    if [ "$failed" -ne 0 ] && [ "${RERUN_FAILED:-0}" = 1 ]; then
        local patterns count
        patterns=$(python3 scripts/failed-tests.py "$LOGS/$name-swift-testing.xml" || true)
        count=$(printf '%s' "$patterns" | grep -c . || true)
        if [ "$count" -gt 0 ] && [ "$count" -le "${RERUN_MAX:-8}" ]; then
            echo "== tsan: $name: $count failed; each is run again, alone (scripts/rerun-real-time.sh):"
            printf '%s\n' "$patterns" >"$LOGS/$name.rerun"
            failed=0
            ./scripts/rerun-real-time.sh "$LOGS/$name-rerun.log" "$LOGS/$name.rerun" -- timeout --kill-after=30 600 \
                stdbuf -oL -eL "$SWIFT" test --skip-build --sanitize=thread --scratch-path "$SCRATCH" || failed=1
            grep -E '^[✔✘━] Test run with|^✘ Test .*recorded an issue' "$LOGS/$name-rerun.log" | cut -c1-300 || true
        fi
    fi
    if [ "$failed" -ne 0 ]; then status=1; fi
    local reports
    reports=$(cat "$LOGS/$name.log" "$LOGS/$name-rerun.log" 2>/dev/null | grep -c '^WARNING: ThreadSanitizer' || true)
    echo "   ThreadSanitizer reports: $reports (log: $LOGS/$name.log)"
    if [ "$reports" -ne 0 ]; then
        status=1
        # CI keeps only what is printed: show each report's stacks, not just the count.
        awk '/^WARNING: ThreadSanitizer/{show=1; n=0} show{print; n++} /^SUMMARY: ThreadSanitizer/{show=0} n>120{show=0}' \
            "$LOGS/$name.log" | cut -c1-240
    fi
    # A failing test's context, likewise.
    if grep -qE '^✘ Test .*(failed|recorded)' "$LOGS/$name.log"; then
        grep -E -B2 -A8 '^✘ Test .*recorded an issue' "$LOGS/$name.log" | head -80 | cut -c1-300 || true
    fi
}

# At most 8 tests at once, as in `make test` (the Makefile's PARALLEL_WIDTH says why).
SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${PARALLEL_WIDTH:-8} run parallel --skip "$MEDIA|$SOLO"
RERUN_FAILED=1 run media --filter "$MEDIA" --skip "$SOLO" --no-parallel

if [ $status -ne 0 ]; then
    echo "tsan: FAILED (reports: grep -A40 'WARNING: ThreadSanitizer' $LOGS/*.log)"
    exit 1
fi
echo "tsan: clean"
