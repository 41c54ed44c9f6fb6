import AppStore
import FuzzSupport

// Apple's verifyReceipt answers (and whatever a proxy or an outage page puts in their place).
// Properties: no crash, no leak, decoding either succeeds or throws, and `decode` (the lean parser's reading where
// it can promise Foundation's answer) answers exactly what `decodeWithFoundation` (the reference) answers.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let body = FuzzDriver.bytes(data, size)
    let decoded = Result { () throws(VerifyReceiptDecodingError) in try VerifyReceiptResponse.decode(body) }
    let reference = Result { () throws(VerifyReceiptDecodingError) in
        try VerifyReceiptResponse.decodeWithFoundation(body)
    }
    if decoded != reference {
        fatalError("decode and decodeWithFoundation differ: \(decoded) against \(reference)")
    }
    return 0
}

FuzzDriver.run(testOneInput)
