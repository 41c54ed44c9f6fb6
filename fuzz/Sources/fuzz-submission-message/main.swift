import FuzzSupport
import ReceiptModel

// The verifier's decoders of Kafka messages anyone may produce: submissions, retry records, DLQ records.
// Properties: no crash, no leak; a decoded submission re-encodes to a message that decodes to the same submission.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    if let submission = try? Submission.decodeValidated(from: bytes) {
        guard let encoded = try? MessageCoding.encode(submission) else {
            FuzzDriver.violated("a decoded submission does not encode")
        }
        guard let again = try? Submission.decodeValidated(from: encoded), again == submission else {
            FuzzDriver.violated("a decoded submission does not survive encode + decode")
        }
        _ = submission.fingerprint
    }
    _ = try? MessageCoding.decode(RetryRecord.self, from: bytes)
    _ = try? MessageCoding.decode(DeadLetterRecord.self, from: bytes)
    _ = try? MessageCoding.decode(VerificationResult.self, from: bytes)
    return 0
}

FuzzDriver.run(testOneInput)
