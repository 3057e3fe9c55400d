// SPDX-License-Identifier: MIT
// System-library shim for pkg-config module gstreamer-pbutils-1.0.
#pragma once
#include <gst/pbutils/pbutils.h>
