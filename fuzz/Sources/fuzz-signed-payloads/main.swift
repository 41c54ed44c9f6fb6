import FuzzSupport
import SignedData

// The JSON payloads inside App Store signed data: transactions, renewal info, notifications (with their money fields
// read as value, absent or unreadable). Properties: no crash, no leak, decoding either succeeds or throws.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    _ = try? SignedPayloadDecoder.decode(JWSTransactionPayload.self, from: bytes)
    _ = try? SignedPayloadDecoder.decode(JWSRenewalInfoPayload.self, from: bytes)
    _ = try? SignedPayloadDecoder.decode(NotificationPayload.self, from: bytes)
    return 0
}

FuzzDriver.run(testOneInput)
