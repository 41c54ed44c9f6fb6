import HTTPServer
import ReceiptModel
import ServiceSupport

/// An error answer of the ingest API: `{"error": {"code": "...", "message": "..."}}` with an HTTP status, plus
/// `"submission_id"` beside `"error"` when the submission's id is known (the 503s that ask the client to retry with
/// the same id: a generated id is otherwise never shown).
///
/// Codes are stable (clients branch on them); messages explain what to change and never echo receipt contents.
public struct APIError: Error, Sendable, Equatable, CustomStringConvertible {
    public let status: Int
    public let code: String
    public let message: String
    /// Extra response headers (`Retry-After`, `WWW-Authenticate`, `Allow`).
    public let headers: [Header]
    /// The submission the error is about, when known; answered as `"submission_id"` beside `"error"`.
    public var submissionId: String?

    public struct Header: Sendable, Equatable {
        public let name: String
        public let value: String
    }

    public init(status: Int, code: String, message: String, headers: [Header] = [], submissionId: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.submissionId = submissionId
    }

    /// This error, about submission `id`.
    public func about(_ id: String) -> APIError {
        var error = self
        error.submissionId = id
        return error
    }

    public var description: String { "\(status) \(code): \(message)" }

    /// The JSON response.
    public var response: HTTPResponse {
        .json(
            status,
            "{\"error\":{\"code\":\(JSONText.quoted(code)),\"message\":\(JSONText.quoted(message))}"
                + (submissionId.map { ",\"submission_id\":\(JSONText.quoted($0))" } ?? "") + "}",
            headers: headers.map { ($0.name, $0.value) })
    }

    // MARK: - 400

    static func invalidJSON() -> APIError {
        APIError(status: 400, code: "invalid_json", message: "the body is not valid JSON")
    }

    static func notAnObject() -> APIError {
        APIError(status: 400, code: "invalid_json", message: "the body must be a JSON object")
    }

    /// None of the proofs. The code keeps its first name (clients branch on codes).
    static func missingProof() -> APIError {
        APIError(
            status: 400, code: "missing_receipt",
            message: "one of receipt_data (or receipt: the base64 app receipt), signed_transaction (StoreKit 2 "
                + "Transaction.jwsRepresentation), transaction_id or signed_app_transaction (StoreKit 2 "
                + "AppTransaction) is required")
    }

    static func multipleProofs() -> APIError {
        APIError(
            status: 400, code: "multiple_proofs",
            message: "send exactly one of receipt_data (or receipt), signed_transaction, transaction_id, "
                + "signed_app_transaction")
    }

    static func invalidReceipt(_ problem: String) -> APIError {
        APIError(status: 400, code: "invalid_receipt", message: problem)
    }

    static func invalidSignedTransaction(_ problem: String) -> APIError {
        APIError(status: 400, code: "invalid_signed_transaction", message: problem)
    }

    static func invalidSignedAppTransaction(_ problem: String) -> APIError {
        APIError(status: 400, code: "invalid_signed_app_transaction", message: problem)
    }

    static func invalidTransactionId() -> APIError {
        APIError(
            status: 400, code: "invalid_transaction_id",
            message: "transaction_id must be Apple's transaction id: the decimal text of a 64-bit unsigned integer "
                + "(1 to \(TransactionIdText.maximumLength) digits, no leading zeros, at most 18446744073709551615), "
                + "as a string or an integer")
    }

    /// 400 `invalid_notification`: the body of `POST /v1/apple/notifications` is not Apple's shape.
    public init(_ invalid: NotificationRequest.Invalid) {
        self.init(status: 400, code: "invalid_notification", message: invalid.problem)
    }

    static func invalidField(_ field: String, _ problem: String) -> APIError {
        APIError(status: 400, code: "invalid_field", message: "\(field) \(problem)")
    }

    /// An identifier holding a control character (C0, DEL, C1): refused, never truncated (`IdentifierText`).
    static func invalidIdentifier(_ problem: String) -> APIError {
        APIError(status: 400, code: "invalid_identifier", message: problem)
    }

    static func conflictingFields(_ first: String, _ second: String) -> APIError {
        APIError(
            status: 400, code: "conflicting_fields",
            message: "\(first) and \(second) are both given with different values; send one")
    }

    static func invalidSubmissionId(_ source: String, _ problem: String) -> APIError {
        APIError(status: 400, code: "invalid_submission_id", message: "\(source) \(problem)")
    }

    static func invalidWait(maximum: Int) -> APIError {
        APIError(
            status: 400, code: "invalid_wait_ms",
            message: maximum > 0
                ? "wait_ms must be a whole number of milliseconds from 0 to \(maximum)"
                : "waiting is disabled on this server (INGEST_MAX_WAIT_MS=0): send wait_ms=0 or omit it")
    }

    // MARK: - 401, 403, 404, 405, 413, 415

    static let unauthorized = APIError(
        status: 401, code: "unauthorized", message: "a valid API key is required as 'Authorization: Bearer <key>'",
        headers: [Header(name: "WWW-Authenticate", value: "Bearer")])

    static let notFound = APIError(status: 404, code: "not_found", message: "no such endpoint")

    /// 403: the caller's key may not submit this kind of proof (`INGEST_KEY_PROOFS`). Names only the caller's own
    /// allowed kinds: nothing about other keys.
    static func proofNotAllowed(_ kind: ProofKind, allowed: [ProofKind]) -> APIError {
        let sentAs: String
        switch kind {
        case .signedTransaction:
            sentAs = " (a StoreKit 2 signed transaction counts as one also when sent as receipt_data)"
        case .transactionId:
            sentAs = " (a bare transaction id needs a grant for this key in INGEST_KEY_PROOFS)"
        case .receiptData, .signedAppTransaction:
            sentAs = ""
        }
        return APIError(
            status: 403, code: "proof_not_allowed",
            message: "this API key may not submit \(kind.rawValue)\(sentAs); it may submit "
                + allowed.map(\.rawValue).joined(separator: ", "))
    }

    /// A named key reusing a `submission_id` another client submitted (nothing is written).
    static func submissionIdTaken() -> APIError {
        APIError(
            status: 404, code: "unknown_submission",
            message: "this submission_id is not known for this API key and cannot be used with it: submit with a "
                + "new submission_id")
    }

    /// 409: the id is known here with another receipt, transaction or expectations.
    static func submissionConflict() -> APIError {
        APIError(
            status: 409, code: "submission_conflict",
            message: "this submission_id was already submitted with a different receipt, transaction or "
                + "expectations (its submission_fingerprint differs): resubmit the original unchanged, or use a new "
                + "submission_id")
    }

    static func unknownSubmission(maxAgeSeconds: Int64) -> APIError {
        APIError(
            status: 404, code: "unknown_submission",
            message: "no result for this submission_id and no pending submission with it is known here "
                + "(results are kept for \(maxAgeSeconds) s; a submission made elsewhere shows once its result exists)")
    }

    static func methodNotAllowed(allowed: [String]) -> APIError {
        APIError(
            status: 405, code: "method_not_allowed", message: "use \(allowed.joined(separator: " or "))",
            headers: [Header(name: "Allow", value: allowed.joined(separator: ", "))])
    }

    static func messageTooLarge() -> APIError {
        APIError(
            status: 413, code: "body_too_large", message: "the submission is larger than Kafka accepts for this topic")
    }

    static func unsupportedMediaType(_ contentType: String) -> APIError {
        APIError(
            status: 415, code: "unsupported_media_type",
            message: "Content-Type '\(contentType.prefix(100))' is not JSON: send application/json")
    }

    // MARK: - 503

    static func kafkaUnavailable(retryAfter: Int, _ detail: String) -> APIError {
        APIError(
            status: 503, code: "kafka_unavailable",
            message: "the submission could not be written to Kafka (\(detail)); retry with the same submission_id",
            headers: [Header(name: "Retry-After", value: String(retryAfter))])
    }

    static func kafkaQueueFull(retryAfter: Int) -> APIError {
        APIError(
            status: 503, code: "kafka_queue_full",
            message: "too many submissions are waiting for Kafka; retry with the same submission_id",
            headers: [Header(name: "Retry-After", value: String(retryAfter))])
    }

    /// A notification Kafka did not acknowledge (`code`: kafka_unavailable, kafka_queue_full, kafka_timeout): Apple
    /// retries on any non-2xx answer.
    static func notificationNotWritten(code: String, retryAfter: Int, _ detail: String) -> APIError {
        APIError(
            status: 503, code: code,
            message: "the notification was not acknowledged by Kafka (\(detail)); send it again (Apple retries)",
            headers: [Header(name: "Retry-After", value: String(retryAfter))])
    }

    static func kafkaTimeout(retryAfter: Int, timeoutMs: Int) -> APIError {
        APIError(
            status: 503, code: "kafka_timeout",
            message: "Kafka did not acknowledge the submission within \(timeoutMs) ms; it may still be written: "
                + "retry with the same submission_id",
            headers: [Header(name: "Retry-After", value: String(retryAfter))])
    }

    /// Bodies being received already hold `INGEST_MAX_BUFFERED_BYTES` (answered by the HTTP server).
    static func serverBusy(retryAfter: Int) -> APIError {
        APIError(
            status: 503, code: "server_busy",
            message: "the server is receiving as many request bodies as it may hold; retry after Retry-After seconds",
            headers: [Header(name: "Retry-After", value: String(retryAfter))])
    }

    static func internalError(_ detail: String) -> APIError {
        APIError(status: 500, code: "internal_error", message: detail)
    }
}
