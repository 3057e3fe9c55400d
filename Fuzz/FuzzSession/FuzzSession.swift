// SPDX-License-Identifier: MIT
// libFuzzer target: a hostile peer plays the input as a script against a SessionCore
// (see Harness/SessionFuzz.swift, the SessionFuzzHarness target the session tests replay). Linked by
// `make fuzz` with the session core's modules built as instrumented libraries.
//
// A trap anywhere in the core is a finding; so is a broken invariant (memory over its
// budget, credit neither held nor returned, a limit exceeded, an unstated close code).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSession(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let violations = SessionFuzz.run(Array(UnsafeRawBufferPointer(start: start, count: count)))
    if let first = violations.first {
        fatalError("session invariant broken: \(first)")
    }
    return 0
}
