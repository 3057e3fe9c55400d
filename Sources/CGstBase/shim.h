// SPDX-License-Identifier: MIT
// System-library shim for pkg-config module gstreamer-base-1.0.
#pragma once
#include <gst/base/base.h>
