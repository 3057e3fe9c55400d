// SPDX-License-Identifier: MIT
// A session serves an origin and fills tracks: the model is part of its public API, so importing
// the session imports the model too.
@_exported public import MoqModel
