import FuzzSupport
import SignedData

// The BER walk of legacy app receipts (ContentInfo → SignedData → receipt attributes → in-app purchases): bytes from
// any client, read before anything is trusted. Properties: no crash, no leak, no unbounded allocation or recursion.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    if let receipt = try? AppReceipt.parse(der: bytes) {
        _ = receipt.transactionIds
    }
    _ = try? AppReceipt.parse(payload: bytes)
    return 0
}

FuzzDriver.run(testOneInput)
