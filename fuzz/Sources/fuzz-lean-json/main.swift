import Foundation
import FuzzSupport
import ServiceSupport

// The ledger's lean JSON parser (JSONParser) against Foundation's decoding as the oracle. Properties: no crash, no
// leak; whatever the parser reads, Foundation reads too, as the same value (`JSONValue.agrees`: numbers within a
// double's precision, as a fraction beyond 2^53 has no exact reading). The parser may refuse more (a duplicate member, a trailing comma, a
// NUL outside strings: Foundation's leniencies), never read something Foundation would read differently.
// `JSONParser.members` (the ingest's read of results) accepts exactly the objects `parse` accepts, with the same
// values for the members it reads.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    let read = try? JSONParser.members(bytes, [.value("a"), .kind("b"), .value("submission_id")])
    guard let ours = try? JSONParser.parse(bytes) else {
        if read != nil { FuzzDriver.violated("members read what parse refuses") }
        return 0
    }
    if case .object(let whole) = ours {
        guard let read else { FuzzDriver.violated("members refused an object parse read") }
        let kindOfB: JSONValue? =
            switch whole["b"] {
            case .array?: .array([])
            case .object?: .object([:])
            case let other: other
            }
        guard read == [whole["a"], kindOfB, whole["submission_id"]] else {
            FuzzDriver.violated("members and parse read different values")
        }
    } else if read != nil {
        FuzzDriver.violated("members read a value that is not an object")
    }
    guard let theirs = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
        FuzzDriver.violated("the parser read what Foundation refuses")
    }
    guard ours.agrees(with: theirs) else { FuzzDriver.violated("the parser and Foundation read different values") }
    return 0
}

FuzzDriver.run(testOneInput)
