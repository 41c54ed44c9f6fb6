import ServiceSupport

/// A result (`RESULTS_TOPIC`) as JSON, written and read here only, so a member of the contract changes in one place.
///
/// - The writer (`encode`, the verifier's): the same bytes as `MessageCoding.encode` (sorted keys, absent values as
///   null, slashes unescaped) without `JSONEncoder`'s generic machinery, which was more than half of the verifier's
///   own instructions per message (bench/verifier-callgrind.sh, issue 26). Transactions are written by
///   `VerifiedTransactionJSON.write`, the app transaction of a StoreKit 2 app-transaction proof by `write` below.
/// - The strict reader (`read`, the ledger's): the lean `JSONParser` (a duplicate member is malformed JSON), then
///   the members a crediting service reads, each with the contract's type (`VerifiedTransactionJSON` for the
///   transactions); only schema version 1 is read. The ingest's result index reads its few members itself
///   (`IndexedResult`: the index's concern, a lighter read).
///
/// `VerificationResultJSONTests` compare the bytes with `MessageCoding`'s; `MessageRoundTripTests` hold
/// `read(encode(r))` to `Members(r)`.
public enum VerificationResultJSON {
    /// What the strict reader reads of a result, as written: `outcome` is the producer's text (an outcome this build
    /// does not know is read, not refused), `environment` Apple's (`Production`, `Sandbox`; null without a verdict).
    public struct Members: Sendable, Equatable {
        public var schemaVersion: Int
        public var submissionId: String
        public var outcome: String
        public var userId: String?
        public var clientId: String?
        public var transactions: [VerifiedTransactionJSON.Members]
        public var verifiedAtMs: Int64?
        public var environment: String?

        /// What `read` gives for the bytes `encode` writes of `result` (a result of schema version 1).
        public init(_ result: VerificationResult) {
            schemaVersion = result.schemaVersion
            submissionId = result.submissionId
            outcome = result.outcome.rawValue
            userId = result.userId
            clientId = result.clientId
            transactions = result.transactions.map(VerifiedTransactionJSON.Members.init)
            verifiedAtMs = result.verifiedAtMs
            environment = result.environment?.rawValue
        }

        /// Reads the message `c` (members in this order, the first problem decides the reason).
        init(_ c: JSONFields) throws(UnreadableMessage) {
            schemaVersion = Int(try c.requiredInt64("schema_version"))
            guard schemaVersion == 1 else { throw UnreadableMessage("unknown schema_version \(schemaVersion)") }
            submissionId = try c.requiredString("submission_id")
            outcome = try c.requiredString("outcome")
            userId = try c.string("user_id")
            clientId = try c.string("client_id")
            transactions = []
            for fields in try c.objects("transactions") {
                transactions.append(try VerifiedTransactionJSON.read(fields))
            }
            verifiedAtMs = try c.int64("verified_at_ms")
            environment = try c.string("environment")
            try IdentifierText.check(submissionId, "submission_id")
            try IdentifierText.check(userId, "user_id")
            try IdentifierText.check(clientId, "client_id")
        }
    }

    /// Reads a result message strictly.
    /// - Throws: `UnreadableMessage` naming the first problem (the ledger dead-letters the message with it).
    public static func read(_ bytes: [UInt8]) throws(UnreadableMessage) -> Members {
        try Members(JSONFields.message(bytes))
    }

    public static func encode(_ result: VerificationResult) -> [UInt8] {
        // Members in sorted key order (as `.sortedKeys` writes them).
        var out = JSONWriter(capacity: 512 + result.transactions.count * 1_024)
        out.member("app_transaction", first: true)
        if let appTransaction = result.appTransaction { write(appTransaction, to: &out) } else { out.null() }
        out.member("apple_status")
        out.number(result.appleStatus.map(Int64.init))
        out.member("attempts")
        out.number(Int64(result.attempts))
        out.member("bundle_id")
        out.string(result.bundleId)
        out.member("client_id")
        out.string(result.clientId)
        out.member("environment")
        out.string(result.environment?.rawValue)
        out.member("message")
        out.string(result.message)
        out.member("order_id")
        out.string(result.orderId)
        out.member("outcome")
        out.string(result.outcome.rawValue)
        out.member("reason")
        out.string(result.reason?.rawValue)
        out.member("schema_version")
        out.number(Int64(result.schemaVersion))
        out.member("source")
        out.string(result.source?.rawValue)
        out.member("submission_fingerprint")
        out.string(result.submissionFingerprint)
        out.member("submission_id")
        out.string(result.submissionId)
        out.member("transactions")
        out.raw("[")
        for (index, transaction) in result.transactions.enumerated() {
            if index > 0 { out.raw(",") }
            VerifiedTransactionJSON.write(transaction, to: &out)
        }
        out.raw("]")
        out.member("user_id")
        out.string(result.userId)
        out.member("verified_at_ms")
        out.number(result.verifiedAtMs)
        out.raw("}")
        return out.bytes
    }

    /// Writes a `signed_app_transaction` result's `app_transaction`.
    static func write(_ app: VerifiedAppTransaction, to out: inout JSONWriter) {
        out.member("app_apple_id", first: true)
        out.number(app.appAppleId)
        out.member("app_transaction_id")
        out.string(app.appTransactionId)
        out.member("application_version")
        out.string(app.applicationVersion)
        out.member("bundle_id")
        out.string(app.bundleId)
        out.member("environment")
        out.string(app.environment.rawValue)
        out.member("original_application_version")
        out.string(app.originalApplicationVersion)
        out.member("original_platform")
        out.string(app.originalPlatform)
        out.member("original_purchase_date_ms")
        out.number(app.originalPurchaseDateMs)
        out.member("preorder_date_ms")
        out.number(app.preorderDateMs)
        out.member("receipt_creation_date_ms")
        out.number(app.receiptCreationDateMs)
        out.member("receipt_type")
        out.string(app.receiptType)
        out.member("signed_date_ms")
        out.number(app.signedDateMs)
        out.member("version_external_identifier")
        out.number(app.versionExternalIdentifier)
        out.raw("}")
    }
}
