#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a recipe from pipelines/ with gst-launch-1.0 and the plugin built in build/gst.
#   usage: scripts/run-pipeline.sh pipelines/test-pattern.pipeline [VAR=value…]
# Recipes use ${VAR} placeholders (MOQ_URL, MOQ_BROADCAST, MOQ_TLS…); lines starting with
# '#' are comments. Variables come from the environment or the command line.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FILE="${1:?recipe file}"
shift
for assignment in "$@"; do export "${assignment?}"; done
: "${MOQ_URL:=moql://localhost:4443/anon}"
case "$(basename "$FILE" .pipeline)" in
  # Players default to what test-pattern.pipeline publishes.
  watch | record) : "${MOQ_BROADCAST:=$(hostname)/test-pattern}" ;;
  *) : "${MOQ_BROADCAST:=$(hostname)/$(basename "$FILE" .pipeline)}" ;;
esac
# Extra moqsrc properties for the players (e.g. latency=300); MOQ_LATENCY=N, as before, means latency=N.
: "${MOQ_PLAYOUT:=${MOQ_LATENCY:+latency=$MOQ_LATENCY}}"
: "${MOQ_OUTPUT:=recording.mkv}"
: "${MOQ_TLS:=}"   # e.g. tls-fingerprint=… or tls-disable-verify=true
: "${CAMERA:=/dev/video0}"
: "${CAMERA2:=/dev/video2}"
: "${DISPLAY:=:0}"
export CAMERA CAMERA2 DISPLAY
export MOQ_URL MOQ_BROADCAST MOQ_TLS MOQ_PLAYOUT MOQ_OUTPUT
export GST_PLUGIN_PATH="$ROOT/build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
DESCRIPTION="$(grep -v '^[[:space:]]*#' "$FILE" | python3 -c 'import os,sys; print(os.path.expandvars(sys.stdin.read()).replace("\\\n", " "))')"
echo "gst-launch-1.0 -e $DESCRIPTION" >&2
# shellcheck disable=SC2086
exec gst-launch-1.0 -e $DESCRIPTION
