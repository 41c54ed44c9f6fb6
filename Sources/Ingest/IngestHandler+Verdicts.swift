import HTTPServer
import ServiceSupport

/// `GET /v1/receipts/{submission_id}` and the pieces of `POST /v1/receipts?wait_ms=N` that are about verdicts.
extension IngestHandler {
    /// 200 with the result message as it is on the topic; 202 `{"status":"pending","submission_id":...}` when this
    /// instance accepted the submission and has no result yet; 404 when neither is known, or when it belongs to
    /// another client (named keys).
    func lookup(_ id: String, caller: Caller) -> HTTPResponse {
        do throws(APIError) {
            try SubmissionId.validate(id, source: "the submission_id in the path")
        } catch {
            metrics.recordRejection(code: error.code)
            return error.response
        }
        switch results.lookup(id, for: caller) {
        case .result(let result):
            metrics.lookupHits.increment()
            return Self.resultResponse(result)
        case .pending:
            metrics.lookupPending.increment()
            return .json(202, "{\"status\":\"pending\",\"submission_id\":\(JSONText.quoted(id))}")
        case .unknown:
            metrics.lookupMisses.increment()
            return APIError.unknownSubmission(maxAgeSeconds: results.limits.maxAgeMs / 1000).response
        }
    }

    /// The result message, verbatim.
    static func resultResponse(_ result: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: result)
    }

    /// `202 {"submission_id": ...}`: accepted (Kafka acknowledged it), no verdict yet.
    static func acceptedResponse(_ id: String) -> HTTPResponse {
        .json(202, "{\"submission_id\":\(JSONText.quoted(id))}")
    }

    /// The `wait_ms` query parameter: absent or empty = 0 (no waiting); otherwise a whole number 0...`maximum`.
    static func waitMilliseconds(_ raw: String?, maximum: Int) throws(APIError) -> Int {
        guard let raw, !raw.isEmpty else { return 0 }
        guard raw.utf8.count <= 9, raw.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let value = Int(raw), value <= maximum
        else {
            throw .invalidWait(maximum: maximum)
        }
        return value
    }
}
