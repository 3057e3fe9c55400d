#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SwiftPM refuses `-pthread` in pkg-config flags with a warning on every build ("prohibited
# flag(s)"), and GLib's .pc files (which GStreamer's require) carry it. The package uses the
# standard pkg-config names, so a consumer with only Debian's -dev packages builds (with that
# warning); for this repository's own builds the Makefile puts OUT first on PKG_CONFIG_PATH, where
# this script writes copies of the system .pc files that mention -pthread, without it. Nothing is
# written outside the repository.
set -euo pipefail
OUT="${1:?usage: pkgconfig-shadow.sh <dir>}"
mkdir -p "$OUT"
rm -f "$OUT"/*.pc
IFS=: read -r -a dirs <<<"$(pkg-config --variable pc_path pkg-config)"
for dir in "${dirs[@]}"; do
  [ -d "$dir" ] || continue
  for pc in "$dir"/*.pc; do
    [ -e "$pc" ] || continue
    name=$(basename "$pc")
    # The first directory on the system's path wins, as it does for pkg-config.
    [ -e "$OUT/$name" ] && continue
    grep -q -- '-pthread' "$pc" || continue
    sed -E 's/(^|[[:space:]])-pthread([[:space:]]|$)/\1\2/g' "$pc" >"$OUT/$name"
  done
done
