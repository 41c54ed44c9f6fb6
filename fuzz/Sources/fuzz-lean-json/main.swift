import Foundation
import FuzzSupport
import ReceiptModel

// The ledger's lean JSON parser (JSONParser) against Foundation's decoding as the oracle. Properties: no crash, no
// leak; whatever the parser reads, Foundation reads too, as the same value (numbers within a double's precision:
// a fraction beyond 2^53 has no exact reading). The parser may refuse more (a duplicate member, a trailing comma, a
// NUL outside strings: Foundation's leniencies), never read something Foundation would read differently.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    guard let ours = try? JSONParser.parse(bytes) else { return 0 }
    guard let theirs = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
        FuzzDriver.violated("the parser read what Foundation refuses")
    }
    guard same(ours, theirs) else { FuzzDriver.violated("the parser and Foundation read different values") }
    return 0
}

func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
    func close(_ x: Double, _ y: Double) -> Bool { x == y || abs(x - y) <= abs(x) * 1e-15 }
    switch (a, b) {
    case (.integer(let x), .integer(let y)): return x == y || (abs(Double(x)) > 0x1p53 && close(Double(x), Double(y)))
    case (.integer(let x), .number(let y)), (.number(let y), .integer(let x)): return close(Double(x), y)
    case (.number(let x), .number(let y)): return close(x, y)
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
    case (.object(let x), .object(let y)):
        return x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
    default: return a == b
    }
}

FuzzDriver.run(testOneInput)
