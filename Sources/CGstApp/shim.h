// SPDX-License-Identifier: MIT
// System-library shim for pkg-config module gstreamer-app-1.0.
#pragma once
#include <gst/app/app.h>
