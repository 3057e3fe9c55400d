// SPDX-License-Identifier: MIT
// libFuzzer target: a hostile peer plays the input as a script against a MoqtSessionCore (see
// Harness/MoqtSessionFuzz.swift in Fuzz/FuzzSession, which the session tests also replay). Linked by
// `make fuzz` with the cores' modules built as instrumented libraries.
//
// A trap anywhere in the core is a finding; so is a broken invariant (credit not returned, a
// peer-fed count over its bound, a close with a code MoQ Transport does not define).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMoqtSession(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let violations = MoqtSessionFuzz.run(Array(UnsafeRawBufferPointer(start: start, count: count)))
    if let first = violations.first {
        fatalError("MoQ Transport session invariant broken: \(first)")
    }
    return 0
}
