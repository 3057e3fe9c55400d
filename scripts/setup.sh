#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Idempotent machine set-up for SwiftMoQ: Debian packages, ngtcp2 1.11 from
# bookworm-backports, and the interop test virtualenv (moq-rs pinned).
# Run by `make setup` (and therefore by `make demo` / `make test`).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${SWIFTMOQ_VENV:-$ROOT/.venv}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

log() { printf '[setup] %s\n' "$*"; }

# Debian packages the build, the tests and the recipes need.
PACKAGES=(
  pkg-config
  libgnutls28-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav
  gstreamer1.0-alsa gstreamer1.0-pulseaudio gstreamer1.0-x
  gstreamer1.0-plugins-base-apps
  xvfb x11-apps
  chromium nodejs
  dbus libglib2.0-bin
)
# ngtcp2 1.11 from bookworm-backports: bookworm's own 0.12.1 never closes
# peer-opened unidirectional streams (one per moq group) and must not be used.
BACKPORT_PACKAGES=(libngtcp2-dev libngtcp2-crypto-gnutls-dev)
NGTCP2_MIN="1.11"

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

ngtcp2_ok() {
  pkg-config --exists "libngtcp2 >= $NGTCP2_MIN" 2>/dev/null &&
    pkg-config --exists "libngtcp2_crypto_gnutls >= $NGTCP2_MIN" 2>/dev/null
}

need_update=0
SOURCES=/etc/apt/sources.list.d/bookworm-backports.sources
if ! ngtcp2_ok; then
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # Reuse the Debian mirror already configured on this machine.
    MIRROR="$(grep -hs '^URIs:' /etc/apt/sources.list.d/debian.sources | head -n1 | awk '{print $2}')"
    [ -n "$MIRROR" ] || MIRROR="http://deb.debian.org/debian"
    log "enabling bookworm-backports from $MIRROR"
    $SUDO tee "$SOURCES" >/dev/null <<SRC
Types: deb
URIs: $MIRROR
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  need_update=1
fi
if [ ${#missing[@]} -gt 0 ]; then need_update=1; fi

apt_get() {
  # Another apt may hold the dpkg lock for a moment; wait for it.
  local tries=0
  until $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 "$@"; do
    tries=$((tries + 1)); [ $tries -lt 3 ] || return 1; sleep 5
  done
}

if [ $need_update = 1 ]; then
  log "apt-get update"
  apt_get update -qq
fi
if [ ${#missing[@]} -gt 0 ]; then
  log "installing: ${missing[*]}"
  apt_get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/swiftmoq-apt.log 2>&1 ||
    { tail -30 /tmp/swiftmoq-apt.log >&2; exit 1; }
fi
if ! ngtcp2_ok; then
  log "installing ngtcp2 from bookworm-backports"
  apt_get install -y -qq --no-install-recommends -t bookworm-backports "${BACKPORT_PACKAGES[@]}" >/tmp/swiftmoq-apt.log 2>&1 ||
    { tail -30 /tmp/swiftmoq-apt.log >&2; exit 1; }
fi
ngtcp2_ok || { echo "[setup] ngtcp2 >= $NGTCP2_MIN is required (found $(pkg-config --modversion libngtcp2 2>/dev/null || echo none))" >&2; exit 1; }

# Earlier versions wrote private swiftmoq-*.pc files here; the package now uses the standard
# pkg-config names (a consumer needs only Debian's -dev packages), so remove them: a build that
# still needed them must fail here, not on a user's machine. The -pthread warning is handled by
# scripts/pkgconfig-shadow.sh, inside the repository.
$SUDO rm -f /usr/local/lib/pkgconfig/swiftmoq-gstreamer-*.pc

# Interop virtualenv: moq-dev's own implementation, pinned; ls-qpack (pylsqpack) as the independent
# QPACK codec the WebTransport tests check against; Prometheus' own text parser (prometheus-client)
# reads the relay's /metrics.
MOQ_PINS=(moq-rs==0.5.1 moq-ffi==0.4.18 pylsqpack==0.3.24 prometheus-client==0.26.0)
if ! "$VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(0 if (m.version("moq-rs"), m.version("moq-ffi"), m.version("pylsqpack"), m.version("prometheus-client")) == ("0.5.1", "0.4.18", "0.3.24", "0.26.0") else 1)' 2>/dev/null; then
  log "setting up virtualenv $VENV with ${MOQ_PINS[*]}"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "${MOQ_PINS[@]}"
fi
log "ok: ngtcp2 $(pkg-config --modversion libngtcp2), gstreamer $(pkg-config --modversion gstreamer-1.0), moq-rs $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("moq-rs"))')"
