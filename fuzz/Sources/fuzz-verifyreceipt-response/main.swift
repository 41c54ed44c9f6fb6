import AppStore
import FuzzSupport

// Apple's verifyReceipt answers (and whatever a proxy or an outage page puts in their place).
// Properties: no crash, no leak, decoding either succeeds or throws.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    _ = try? VerifyReceiptResponse.decode(FuzzDriver.bytes(data, size))
    return 0
}

FuzzDriver.run(testOneInput)
