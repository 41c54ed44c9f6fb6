import Foundation
import FuzzSupport
import ServiceSupport

// The ledger's lean JSON parser (JSONParser) against Foundation's decoding as the oracle. Properties: no crash, no
// leak; whatever the parser reads, Foundation reads too, as the same value (`JSONValue.agrees`: numbers within a
// double's precision, as a fraction beyond 2^53 has no exact reading). The parser may refuse more (a duplicate member, a trailing comma, a
// NUL outside strings: Foundation's leniencies), never read something Foundation would read differently.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    guard let ours = try? JSONParser.parse(bytes) else { return 0 }
    guard let theirs = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
        FuzzDriver.violated("the parser read what Foundation refuses")
    }
    guard ours.agrees(with: theirs) else { FuzzDriver.violated("the parser and Foundation read different values") }
    return 0
}

FuzzDriver.run(testOneInput)
