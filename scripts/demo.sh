#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make demo`: the embedded relay, then a test pattern and a tone published through moqsink and
# played back through moqsrc (a window when a display exists, headless otherwise), with one stats
# line per second for about ten seconds. Exits 0 when video and audio played.
#   SWIFTMOQ_BIN=path/to/swiftmoq  use another build;  DEMO_SECONDS=N  run longer or shorter
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${SWIFTMOQ_BIN:-$ROOT/build/bin/swiftmoq}"
SECONDS_TO_RUN="${DEMO_SECONDS:-10}"
WORK="$(mktemp -d)"
RELAY=""
cleanup() {
  [ -n "$RELAY" ] && kill "$RELAY" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

say() { printf '\033[1m[demo]\033[0m %s\n' "$*"; }

# The embedded relay, on a free port with a generated certificate.
"$BIN" relay --listen 127.0.0.1:0 --tls-generate localhost --public anon >"$WORK/relay.out" 2>"$WORK/relay.err" </dev/null &
RELAY=$!
for _ in $(seq 100); do grep -q '^fingerprint ' "$WORK/relay.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's|^url moql://[^:]*:\([0-9]*\)/.*|\1|p' "$WORK/relay.out")
FP=$(sed -n 's/^fingerprint //p' "$WORK/relay.out")
[ -n "$PORT" ] && [ -n "$FP" ] || { say "the relay did not start:"; cat "$WORK/relay.err"; exit 1; }
URL="moql://127.0.0.1:$PORT/anon"
say "swiftmoq relay listening at $URL (certificate sha256 $FP)"

HEADLESS=()
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then HEADLESS=(--headless); fi
"$BIN" demo --url "$URL" --tls-fingerprint "$FP" --seconds "$SECONDS_TO_RUN" "${HEADLESS[@]}"
