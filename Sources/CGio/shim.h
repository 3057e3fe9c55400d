// SPDX-License-Identifier: MIT
// System-library shim for pkg-config module gio-2.0 (GDBus, for MPRIS).
#pragma once
#include <gio/gio.h>
