#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Prints the interface of the plugin's elements (gst-inspect-1.0 of moqsink and
# moqsrc), normalised so that it depends only on the interface: paths, versions and
# the plugin file's details are dropped. docs/elements.txt holds the checked-in
# snapshot; `make test` fails when they differ, `swift package element-docs` (or
# `make element-docs`) regenerates it.
#   usage: scripts/element-docs.sh PLUGIN_DIR
set -euo pipefail
DIR="${1:?plugin directory}"
export GST_PLUGIN_PATH="$DIR"
export GST_PLUGIN_SYSTEM_PATH_1_0="${GST_PLUGIN_SYSTEM_PATH_1_0-}"
export GST_REGISTRY_1_0="$(mktemp -u /tmp/swiftmoq-registry-XXXXXX.bin)"
trap 'rm -f "$GST_REGISTRY_1_0"' EXIT
for element in moqsink moqsrc; do
  if gst-inspect-1.0 "$element" >/dev/null 2>&1; then
    echo "==== $element ===="
    gst-inspect-1.0 "$element" 2>&1 |
      sed -e 's/\x1b\[[0-9;]*m//g' \
          -e '/^  Filename /d' -e '/^  Version /d' -e '/^  Source release date/d' -e '/^  Binary package/d' \
          -e 's/[[:space:]]*$//'
  fi
done
