// SPDX-License-Identifier: MIT

// The only member of the plugin product: it keeps `-static-stdlib` (set on this target
// by `make plugin`) off the tests and executables that also link the elements.
@_exported public import GstSwiftMoQ
