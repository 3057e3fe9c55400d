// SPDX-License-Identifier: MIT
// System-library shim for pkg-config module gstreamer-video-1.0.
#pragma once
#include <gst/video/video.h>
