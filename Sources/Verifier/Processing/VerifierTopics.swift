/// The topics the verifier reads and writes (`RECEIPTS_TOPIC`, `RESULTS_TOPIC`, `RETRY_TOPIC`, `DLQ_TOPIC`).
public struct VerifierTopics: Sendable, Equatable {
    public var receipts: String
    public var results: String
    public var retry: String
    public var deadLetter: String

    public init(
        receipts: String = "iap.receipts.submitted", results: String = "iap.receipts.results",
        retry: String = "iap.receipts.retry", deadLetter: String = "iap.receipts.dlq"
    ) {
        self.receipts = receipts
        self.results = results
        self.retry = retry
        self.deadLetter = deadLetter
    }
}
