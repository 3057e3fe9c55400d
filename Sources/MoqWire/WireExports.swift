// SPDX-License-Identifier: MIT
// Bytes are the wire codec's currency in its public API: importing the codec imports them too.
#if canImport(MoqBase)
    @_exported public import MoqBase
#endif
