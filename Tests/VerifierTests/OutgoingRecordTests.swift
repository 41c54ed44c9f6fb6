import Kafka
import ReceiptModel
import Testing

@testable import Verifier

/// An output record's typed payload is what its bytes say: the verifier reads the payload (DLQ reason for metrics,
/// the record to rewrite when Kafka refuses it as too large) instead of decoding its own bytes or headers.
@Suite struct OutgoingRecordTests {
    let factory = OutputFactory(topics: Samples.topics)
    let message = KafkaMessage(topic: "receipts", partition: 0, offset: 3, key: Array("k".utf8), value: Array("x".utf8))

    @Test func thePayloadIsWhatTheBytesSay() throws {
        let dead = factory.deadLetter(
            message: message, submissionId: "s-1", reason: .invalidReceipt, text: "no", appleStatus: 21002,
            attempts: 1, nowMs: 5)
        guard case .deadLetter(let deadRecord) = dead.payload else { throw Failure("not a DLQ payload") }
        #expect(try MessageCoding.decode(DeadLetterRecord.self, from: dead.value) == deadRecord)
        #expect(dead.kind == .deadLetter && deadRecord.reason.rawValue == dead.header(MessageHeaders.dlqReason))

        let retryRecord = RetryRecord(
            submission: Samples.submission("s-1"), round: 1, attempts: 2, notBeforeMs: 9, lastAppleStatus: nil,
            lastError: "e")
        let retry = factory.retry(retryRecord, key: nil)
        #expect(retry.payload == .retry(retryRecord) && retry.kind == .retry)
        #expect(try MessageCoding.decode(RetryRecord.self, from: retry.value) == retryRecord)

        let result = factory.failedResult(
            submissionId: "s-1", orderId: nil, userId: nil, reason: .malformedSubmission, message: "m",
            appleStatus: nil, attempts: 0, key: nil, nowMs: 5)
        guard case .result(let resultRecord) = result.payload else { throw Failure("not a result payload") }
        #expect(try MessageCoding.decode(VerificationResult.self, from: result.value) == resultRecord)
        #expect(result.kind == .result)
    }

    /// The result record carries `VerificationResultJSON`'s bytes (ReceiptModelTests hold them to `JSONEncoder`'s
    /// form).
    @Test func theResultRecordCarriesThoseBytes() throws {
        let awkward = "quote \" backslash \\ slash / tab \t newline \n nul \u{0} bell \u{7} é 日本 🎮 \u{2028}"
        let result = VerificationResult(
            submissionId: "s-2 " + awkward, orderId: awkward, userId: awkward, clientId: awkward, outcome: .rejected,
            reason: .refunded, source: .serverAPI, message: awkward, appleStatus: -21_002, environment: .sandbox,
            bundleId: awkward,
            transactions: [
                VerifiedTransaction(
                    TransactionFields(
                        transactionId: "1", originalTransactionId: nil, productId: "gems_100", quantity: 1,
                        purchaseDateMs: 1_539_946_248_000),
                    environment: .production)
            ],
            submissionFingerprint: awkward, attempts: 7, verifiedAtMs: -1, schemaVersion: 2)
        let record = factory.result(result, key: nil)
        #expect(record.value == VerificationResultJSON.encode(result))
    }

    @Test func rewritesReadThePayloadOfTheirOwnKindOnly() {
        let retry = factory.retry(
            RetryRecord(
                submission: Samples.submission("s-1"), round: 1, attempts: 2, notBeforeMs: 9, lastAppleStatus: nil,
                lastError: "e"),
            key: nil)
        let dead = factory.deadLetter(
            message: message, submissionId: nil, reason: .malformedSubmission, text: "no", appleStatus: nil,
            attempts: 0, nowMs: 5)
        let ticket = MessageTicket(partition: Samples.receipts, epoch: 1, offset: 3)
        #expect(factory.deadLetterWithoutOriginal(retry) == nil)
        #expect(factory.finalFailure(ofOversizedRetry: dead, source: ticket, nowMs: 5) == nil)
        guard case .deadLetter(let smaller)? = factory.deadLetterWithoutOriginal(dead)?.payload else {
            Issue.record("expected a smaller DLQ record")
            return
        }
        #expect(smaller.originalValue.isEmpty && smaller.reason == .malformedSubmission)
        #expect(factory.finalFailure(ofOversizedRetry: retry, source: ticket, nowMs: 5)?.map(\.kind) == [.deadLetter, .result])
    }

    struct Failure: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }
}
