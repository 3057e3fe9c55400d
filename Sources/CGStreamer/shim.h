// SPDX-License-Identifier: MIT
// System-library shim for pkg-config module gstreamer-1.0.
#pragma once
#include <gst/gst.h>
