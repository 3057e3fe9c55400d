// SPDX-License-Identifier: MIT
// System-library shim for pkg-config module gstreamer-check-1.0.
#pragma once
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
