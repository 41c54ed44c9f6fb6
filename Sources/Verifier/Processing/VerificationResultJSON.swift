import ReceiptModel
import ServiceSupport

/// A result's JSON, written directly: the same bytes as `MessageCoding.encode` (sorted keys, absent values as null,
/// slashes unescaped) without `JSONEncoder`'s generic machinery, which was more than half of the verifier's own
/// instructions per message (bench/verifier-callgrind.sh, issue 26). Transactions are written by
/// `PurchaseEventJSON.write`, which events already hold to `MessageCoding`'s output. A result naming an app
/// transaction (rare: a StoreKit 2 app-transaction proof) is still encoded by `MessageCoding`.
/// `VerificationResultJSONTests` compare the bytes with `MessageCoding`'s.
enum VerificationResultJSON {
    static func encode(_ result: VerificationResult) -> [UInt8] {
        if result.appTransaction != nil { return OutputFactory.encode(result) }
        // Members in sorted key order (as `.sortedKeys` writes them).
        var out = JSONWriter(capacity: 512 + result.transactions.count * 1_024)
        out.member("app_transaction", first: true)
        out.null()
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
            PurchaseEventJSON.write(transaction, to: &out)
        }
        out.raw("]")
        out.member("user_id")
        out.string(result.userId)
        out.member("verified_at_ms")
        out.number(result.verifiedAtMs)
        out.raw("}")
        return out.bytes
    }
}
