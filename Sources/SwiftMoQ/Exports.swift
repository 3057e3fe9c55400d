// SPDX-License-Identifier: MIT

// SwiftMoQ is the umbrella module: the model (origins, broadcasts, tracks) and
// the wire types it speaks in are part of its API.
@_exported public import MoqSession
@_exported public import MoqWire
