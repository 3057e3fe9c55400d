// SPDX-License-Identifier: MIT
// Bytes are the wire codec's currency in its public API: importing the codec imports them too.
@_exported public import MoqBase
