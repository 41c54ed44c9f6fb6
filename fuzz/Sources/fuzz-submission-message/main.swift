import FuzzSupport

@testable import ReceiptModel

// The verifier's decoders of Kafka messages anyone may produce: submissions, retry records, DLQ records.
// Properties: no crash, no leak; `Submission.decodeValidated` (the lean JSONParser where `Submission.leanMembers`
// allows, Foundation otherwise) decides every input exactly as `decodeValidatedWithFoundation` (Foundation's
// JSONSerialization alone, the oracle): the same submission or the same problem and echoed ids; a decoded submission
// re-encodes to a message that decodes to the same submission.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    let decoded = outcome { () throws(MalformedSubmission) in try Submission.decodeValidated(from: bytes) }
    let oracle = outcome { () throws(MalformedSubmission) in try Submission.decodeValidatedWithFoundation(from: bytes) }
    guard decoded == oracle else { FuzzDriver.violated("the lean reading and Foundation's decide differently") }
    if case .success(let submission) = decoded {
        // The verifier's writer of submissions (retry records carry one; the ingest writes them the same way).
        let encoded = SubmissionJSON.encode(submission)
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

func outcome(_ decode: () throws(MalformedSubmission) -> Submission) -> Result<Submission, MalformedSubmission> {
    do { return .success(try decode()) } catch { return .failure(error) }
}

FuzzDriver.run(testOneInput)
