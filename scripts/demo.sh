#!/usr/bin/env bash
# `make demo`: a publisher -> relay -> subscriber run on loopback, printing what arrived.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/build/bin/swiftmoq"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

say() { printf '\033[1m[demo]\033[0m %s\n' "$*"; }

# The embedded relay.
"$BIN" relay --listen 127.0.0.1:0 --tls-generate localhost --public anon >"$WORK/relay.out" 2>"$WORK/relay.err" </dev/null &
PIDS+=($!)
for _ in $(seq 100); do grep -q '^fingerprint ' "$WORK/relay.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's|^url moql://[^:]*:\([0-9]*\)/.*|\1|p' "$WORK/relay.out")
FP=$(sed -n 's/^fingerprint //p' "$WORK/relay.out")
[ -n "$PORT" ] && [ -n "$FP" ] || { say "the relay did not start:"; cat "$WORK/relay.err"; exit 1; }
URL="moql://127.0.0.1:$PORT/anon"
say "swiftmoq relay listening at $URL (certificate sha256 $FP)"

BROADCAST="demo/clock-$$"
"$BIN" subscribe-track --url "$URL" --tls-fingerprint "$FP" --broadcast "$BROADCAST" --track ticks \
  --format json --count 20 >"$WORK/sub.out" 2>"$WORK/sub.err" &
SUB=$!
PIDS+=($SUB)
say "subscriber waiting for $BROADCAST/ticks"

say "publishing 20 lines, two per group"
for i in $(seq 1 20); do echo "tick $i at $(date +%H:%M:%S.%N | cut -c1-12)"; sleep 0.05; done |
  "$BIN" publish-track --url "$URL" --tls-fingerprint "$FP" --broadcast "$BROADCAST" --track ticks \
    --frames-per-group 2 --wait-subscribers 1

if ! wait "$SUB"; then
  say "subscriber failed:"; cat "$WORK/sub.err"; exit 1
fi
say "delivered:"
python3 - "$WORK/sub.out" <<'PY'
import base64, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:
    print(f"  group {r['group']:>2} frame {r['index']}  t={r['timestamp_us']/1000:8.1f} ms  "
          f"{base64.b64decode(r['payload']).decode()}")
print(f"  {len(rows)} frames in {len({r['group'] for r in rows})} groups, all intact")
PY
