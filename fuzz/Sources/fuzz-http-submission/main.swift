import FuzzSupport
import ReceiptModel

@testable import Ingest

// The body of POST /v1/receipts (contract fields and the iOS clients' aliases).
// Properties: no crash, no leak; `SubmissionRequest.parse` (the lean JSONParser where `Submission.leanMembers`
// allows, Foundation otherwise) decides every body exactly as `parseWithFoundation` (Foundation's JSONSerialization
// alone, the oracle): the same request or the same error; an accepted body yields a submission message the verifier
// accepts unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let body = FuzzDriver.bytes(data, size)
    let parsed = outcome { () throws(APIError) in try SubmissionRequest.parse(body) }
    let oracle = outcome { () throws(APIError) in try SubmissionRequest.parseWithFoundation(body) }
    guard parsed == oracle else { FuzzDriver.violated("the lean reading and Foundation's decide differently") }
    guard case .success(let request) = parsed else { return 0 }
    let submission = request.submission(id: "fuzz-1", submittedAtMs: 1)
    let message = SubmissionJSON.encode(submission)
    guard let decoded = try? Submission.decodeValidated(from: message), decoded == submission else {
        FuzzDriver.violated("an accepted request writes a submission the verifier refuses or reads differently")
    }
    return 0
}

func outcome(_ parse: () throws(APIError) -> SubmissionRequest) -> Result<SubmissionRequest, APIError> {
    do { return .success(try parse()) } catch { return .failure(error) }
}

FuzzDriver.run(testOneInput)
