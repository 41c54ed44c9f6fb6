import ReceiptModel
import ServiceSupport
import Testing

/// Every message of the contract read back from what its writer wrote, beside its type in ReceiptModel: a valid
/// submission (`SubmissionJSON` -> `Submission.decodeValidated`, which refuses what the ingest refuses: control
/// characters in ids, a receipt that is not base64), a notification record (as the ingest and the backfill write it
/// -> `MessageCoding`, as the verifier reads it), a DLQ record (its hand-written `encode(to:)`) and a retry record. The
/// result's and the event's round trips through their strict readers are `VerificationResultJSONTests` and
/// `PurchaseEventJSONTests`; `StrictReaderTests` has what those readers refuse.
@Suite struct MessageRoundTripTests {
    static let awkward = "quote \" backslash \\ slash / tab \t é 日本 🎮 \u{2028}"

    static let submissions: [Submission] = [
        Submission(submissionId: "s-1", proof: .receipt("MIIT" + String(repeating: "aGVs", count: 40) + "bG8="), submittedAtMs: 1),
        Submission(
            submissionId: "s-2", proof: .signedTransaction("eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2ln"),
            clientId: "game-server", orderId: "order quote \" backslash \\ slash / é 日本 🎮", userId: "user/7",
            expectedTransactionId: "2000000123456789", expectedProductId: "com.example.gems100",
            expectedAppAccountToken: "6f1e8e0c-0b6b-4f5e-9a31-2f8f0c1d2e3f", submittedAtMs: 1_765_000_000_123),
        Submission(submissionId: "s-3", proof: .transactionId("2000000123456789"), userId: "u", submittedAtMs: 0),
        Submission(
            submissionId: "s-4",
            proof: .signedAppTransaction("eyJhbGciOiJFUzI1NiJ9.eyJhcHBUcmFuc2FjdGlvbklkIjoiMSJ9.c2ln"),
            submittedAtMs: 1_765_000_000_999),
    ]

    @Test(arguments: submissions)
    func aSubmissionReadsBackAsWritten(_ submission: Submission) throws {
        let written = SubmissionJSON.encode(submission)
        #expect(try Submission.decodeValidated(from: written) == submission)
        #expect(try MessageCoding.decode(Submission.self, from: written) == submission)
    }

    static let notificationRecords: [NotificationRecord] = [
        NotificationRecord(signedPayload: "eyJhbGciOiJFUzI1NiJ9.eyJub3RpZmljYXRpb25VVUlEIjoiMSJ9.c2ln", receivedAtMs: 7),
        NotificationRecord(signedPayload: awkward, receivedAtMs: Int64.min, origin: .notificationHistory),
    ]

    @Test(arguments: notificationRecords)
    func aNotificationRecordReadsBackAsWritten(_ record: NotificationRecord) throws {
        let written = try MessageCoding.encode(record)
        #expect(try MessageCoding.decode(NotificationRecord.self, from: written) == record)
    }

    /// The backfill's and receipt-reconcile's records: origin `notification_history`, the payload unchanged.
    @Test func aRecoveredNotificationReadsBackAsWritten() throws {
        let payload = "eyJhbGciOiJFUzI1NiJ9.eyJub3RpZmljYXRpb25VVUlEIjoiYWJjIn0.c2ln"
        let made = try #require(NotificationHistoryRecord.make(signedPayload: payload, receivedAtMs: 42))
        #expect(made.key == Array("abc".utf8))
        #expect(
            try MessageCoding.decode(NotificationRecord.self, from: made.value)
                == NotificationRecord(signedPayload: payload, receivedAtMs: 42, origin: .notificationHistory))
    }

    static let deadLetters: [DeadLetterRecord] = [
        DeadLetterRecord(
            submissionId: "s-1", reason: .invalidReceipt, message: "Apple answered 21002 " + awkward,
            sourceTopic: "receipts", sourcePartition: 3, sourceOffset: 1_234, originalKey: Array("k".utf8),
            originalValue: Array(#"{"receipt_data":"AAAA"}"#.utf8), appleStatus: 21_002, attempts: 4,
            failedAtMs: 1_765_000_000_000),
        DeadLetterRecord(
            submissionId: nil, reason: .malformedSubmission, message: "not valid JSON", sourceTopic: "notifications",
            sourcePartition: 0, sourceOffset: 0, originalKey: nil, originalValue: [0xFF, 0x00, 0x7B], appleStatus: nil,
            attempts: 0, failedAtMs: 0),
    ]

    @Test(arguments: deadLetters)
    func aDeadLetterRecordReadsBackAsWritten(_ record: DeadLetterRecord) throws {
        let written = try MessageCoding.encode(record)
        #expect(try MessageCoding.decode(DeadLetterRecord.self, from: written) == record)
    }

    static let retries: [RetryRecord] = [
        RetryRecord(
            submission: submissions[1], round: 2, attempts: 9, notBeforeMs: 1_765_000_000_500, lastAppleStatus: 21_005,
            lastError: "Apple answered 21005 " + awkward, source: .verifyReceipt),
        RetryRecord(
            submission: submissions[2], round: 1, attempts: 4, notBeforeMs: 0, lastAppleStatus: nil,
            lastError: "timeout"),
    ]

    @Test(arguments: retries)
    func aRetryRecordReadsBackAsWritten(_ record: RetryRecord) throws {
        let written = RetryRecordJSON.encode(record)
        #expect(try MessageCoding.decode(RetryRecord.self, from: written) == record)
    }
}
