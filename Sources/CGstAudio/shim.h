// SPDX-License-Identifier: MIT
// System-library shim for pkg-config module gstreamer-audio-1.0.
#pragma once
#include <gst/audio/audio.h>
