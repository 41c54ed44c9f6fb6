import FuzzSupport
import Ingest
import ReceiptModel

// The body of POST /v1/receipts (contract fields and the iOS clients' aliases).
// Properties: no crash, no leak; an accepted body yields a submission message the verifier accepts unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let request = try? SubmissionRequest.parse(FuzzDriver.bytes(data, size)) else { return 0 }
    let submission = request.submission(id: "fuzz-1", submittedAtMs: 1)
    guard let message = try? MessageCoding.encode(submission) else {
        FuzzDriver.violated("an accepted request does not encode")
    }
    guard let decoded = try? Submission.decodeValidated(from: message), decoded == submission else {
        FuzzDriver.violated("an accepted request writes a submission the verifier refuses or reads differently")
    }
    return 0
}

FuzzDriver.run(testOneInput)
