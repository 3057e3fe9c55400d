#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end self-test of moqpeer.py against itself (Rust on both ends, through the Rust
# relay): connect + pinning, publish/subscribe, announced, fetch, datagrams, catalog, and
# media encode/decode (avc3 and avc1). Exits non-zero on the first failure; < 60 s.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${SWIFTMOQ_PYTHON:-$ROOT/.venv/bin/python}"
PEER="$ROOT/Tests/Interop/moqpeer.py"
[ -x "$PY" ] || { echo "selftest: $PY is missing: run \`make setup\`" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/moqpeer-selftest.XXXXXX")"
RUN="st$$"
PIDS=()
STEP="start"

cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ $rc -ne 0 ]; then
    echo "selftest: FAILED during '$STEP' (logs kept in $WORK)" >&2
    for f in "$WORK"/*.out; do echo "== $f" >&2; tail -n 5 "$f" >&2; done
  else
    rm -rf "$WORK"
  fi
  exit $rc
}
trap cleanup EXIT

fail() { echo "selftest: $STEP: $*" >&2; exit 1; }
step() { STEP="$1"; echo "selftest: $1"; }

peer() { "$PY" "$PEER" "$@"; }

# Start `moqpeer <args>` in the background; stdout to $WORK/<name>.out.
bg() {
  local name="$1"; shift
  "$PY" "$PEER" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=($!)
  eval "PID_${name//-/_}=$!"
}

# wait_event NAME EVENT [SECONDS]: until $WORK/NAME.out has a line with that event.
wait_event() {
  local file="$WORK/$1.out" deadline=$((SECONDS + ${3:-15}))
  until grep -q "\"event\":\"$2\"" "$file" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || fail "no '$2' event from $1 within ${3:-15} s"
    sleep 0.1
  done
}

# finish NAME: wait for the background peer NAME and require exit status 0.
finish() {
  local var="PID_${1//-/_}"
  wait "${!var}" || fail "$1 exited with $? ($(tail -n 1 "$WORK/$1.out" 2>/dev/null))"
}

# check FILE PYTHON-EXPR...: evaluate assertions over the events of FILE (list `ev`).
check() {
  local file="$1"; shift
  "$PY" - "$file" "$@" <<'EOF' || fail "check on $(basename "$file") failed"
import base64, json, sys
ev = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
frames = [e for e in ev if e["event"] == "frame"]
def pattern(g, f, size):
    tag = f"g{g}f{f}".encode()
    return (tag * (size // len(tag) + 1))[:size]
def frames_ok(frames, groups, per_group, size, first=0):
    want = [(g, f) for g in range(first, first + groups) for f in range(per_group)]
    got = [(e["group"], e["index"]) for e in frames]
    assert got == want, f"frames {got} != {want}"
    for e in frames:
        assert base64.b64decode(e["payload"]) == pattern(e["group"], e["index"], size), e
        assert e["timestamp_us"] == (e["group"] * per_group + e["index"]) * 33333, e
    return True
for expr in sys.argv[2:]:
    try:
        ok = eval(expr)
    except Exception as exc:
        ok = False
        print(f"  {expr}: {exc!r}", file=sys.stderr)
    if not ok:
        print(f"  assertion failed: {expr}", file=sys.stderr)
        sys.exit(1)
EOF
}

step "relay"
bg relay relay
wait_event relay listening 10
PORT="$("$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["port"])' "$WORK/relay.out")"
FP="$("$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["fingerprint"])' "$WORK/relay.out")"
URL="moql://127.0.0.1:$PORT/selftest"
C=(--url "$URL" --fingerprint "$FP" --timeout-s 20)

step "connect (pinned)"
peer connect "${C[@]}" >"$WORK/connect.out" 2>"$WORK/connect.err" || fail "connect failed"
check "$WORK/connect.out" 'ev[0]["event"] == "connected"' 'ev[0]["version"] == "moq-lite-06"' \
  '"Setup" in ev[0]["server_setup"]' 'ev[-1]["event"] == "closed"'

step "connect (wrong pin must fail)"
WRONG="$(printf '%s' "$FP" | tr '0-9a-f' '1-9a-f0')"
if peer connect --url "$URL" --fingerprint "$WRONG" --timeout-s 20 >"$WORK/badpin.out" 2>"$WORK/badpin.err"; then
  fail "connect with a wrong pin succeeded"
fi
check "$WORK/badpin.out" 'ev[-1]["event"] == "error"' '"fingerprint" in ev[-1]["message"]'

step "publish/subscribe/fetch/announced"
B="$RUN/raw"
bg announced announced "${C[@]}" --prefix "$RUN" --count 2
wait_event announced watching
bg subscribe subscribe "${C[@]}" --broadcast "$B" --track data
bg publish publish "${C[@]}" --broadcast "$B" --track data --groups 5 --frames-per-group 3 \
  --payload-size 100 --interval-ms 20 --wait-subscriber --linger-ms 3000
finish subscribe
check "$WORK/subscribe.out" 'ev[-1]["event"] == "end"' 'frames_ok(frames, 5, 3, 100)'
peer fetch "${C[@]}" --broadcast "$B" --track data --group 2 >"$WORK/fetch.out" 2>"$WORK/fetch.err" ||
  fail "fetch failed: $(tail -n 1 "$WORK/fetch.out")"
check "$WORK/fetch.out" 'ev[-1]["event"] == "end"' 'frames_ok(frames, 1, 3, 100, first=2)'
finish publish
check "$WORK/publish.out" '[e["group"] for e in ev if e["event"] == "group"] == [0, 1, 2, 3, 4]' \
  'ev[-1]["event"] == "done"'
finish announced
check "$WORK/announced.out" \
  '[(e["path"], e["active"]) for e in ev if e["event"] == "announce"] == [(f"'"$B"'", True), (f"'"$B"'", False)]'

step "datagrams"
bg dgsub subscribe-datagrams "${C[@]}" --broadcast "$RUN/dg" --count 5
bg dgpub publish-datagrams "${C[@]}" --broadcast "$RUN/dg" --count 5 --wait-subscriber --interval-ms 20 --linger-ms 300
finish dgsub
finish dgpub
check "$WORK/dgsub.out" \
  '[(e["sequence"], base64.b64decode(e["payload"])) for e in ev if e["event"] == "datagram"] == [(i, f"g{i}f0".encode()) for i in range(5)]'

step "group abort (application code 7 reaches the subscriber as APP 64+7)"
bg absub subscribe "${C[@]}" --broadcast "$RUN/abort"
bg abpub publish "${C[@]}" --broadcast "$RUN/abort" --groups 3 --abort-group 1 --group-abort-code 7 \
  --frame-interval-ms 50 --wait-subscriber --linger-ms 300
finish absub
finish abpub
check "$WORK/absub.out" \
  '[(e["group"], e["kind"], e["code"]) for e in ev if e["event"] == "group_error"] == [(1, "APP", 71)]' \
  '[e["group"] for e in frames if e["index"] == 0] == [0, 1, 2]' 'ev[-1]["event"] == "end"'

step "media (in-process encoders, avc3 + opus) and watch"
bg media publish-media "${C[@]}" --broadcast "$RUN/media" --seconds 4 --wait-subscriber --linger-ms 300
bg media1 publish-media-avc1 "${C[@]}" --broadcast "$RUN/avc1" --seconds 4 --linger-ms 300
wait_event media announced
bg watch watch "${C[@]}" --broadcast "$RUN/media" --frames 60 --seconds 15
wait_event media1 announced
peer catalog "${C[@]}" --broadcast "$RUN/avc1" >"$WORK/catalog.out" 2>"$WORK/catalog.err" || fail "catalog failed"
check "$WORK/catalog.out" 'ev[0]["json"]["video"]["renditions"]["0.avc1"]["codec"].startswith("avc1.")' \
  '"description" in ev[0]["json"]["video"]["renditions"]["0.avc1"]' \
  'ev[0]["json"]["audio"]["renditions"]["1.opus"]["codec"] == "opus"'
peer watch "${C[@]}" --broadcast "$RUN/avc1" --frames 30 --seconds 15 >"$WORK/watch1.out" 2>"$WORK/watch1.err" ||
  fail "watch avc1 failed: $(tail -n 1 "$WORK/watch1.out")"
check "$WORK/watch1.out" 'ev[-1]["event"] == "summary"' 'ev[-1]["video_frames"] >= 30' \
  'ev[-1]["audio_frames"] > 0' 'ev[-1]["errors"] == 0'
finish watch
check "$WORK/watch.out" 'ev[0]["event"] == "catalog"' \
  'ev[0]["json"]["video"]["renditions"]["0.avc3"]["codec"].startswith("avc3.")' \
  'ev[-1]["event"] == "summary"' 'ev[-1]["video_frames"] >= 60' 'ev[-1]["audio_frames"] > 0' \
  'ev[-1]["errors"] == 0' \
  '[e["pts_us"] for e in ev if e["event"] == "video"] == sorted(e["pts_us"] for e in ev if e["event"] == "video")'
finish media
finish media1

step "relay stops on SIGTERM"
kill -TERM "$PID_relay"
finish relay
check "$WORK/relay.out" 'ev[-1] == {"event": "stopped", "reason": "SIGTERM"}' \
  'sum(e["event"] == "session" for e in ev) >= 10'

echo "selftest: OK ($SECONDS s)"
