import AppStore
import Foundation
import Kafka
import ReceiptModel
import Testing

@testable import Verifier

@Suite("MessageTriage and RoundOutcomeRouter: outputs per the contract")
struct MessageTriageTests {
    let factory = OutputFactory(topics: Samples.topics)
    var triage: MessageTriage { MessageTriage(factory: factory) }
    let nowMs: Int64 = 1_700_000_100_000

    func router(rounds: Int = 3) -> RoundOutcomeRouter {
        RoundOutcomeRouter(
            factory: factory,
            policy: RetryRoundPolicy(maximumRounds: rounds, initialBackoff: .seconds(10), maximumBackoff: .seconds(60)))
    }

    func job(round: Int = 0, attempts: Int = 0, partition: TopicPartition = Samples.receipts) -> VerificationJob {
        VerificationJob(
            submission: Samples.submission("s-1", order: "o-1"),
            message: Samples.message("s-1", offset: 42, partition: partition), completedRounds: round,
            priorAttempts: attempts)
    }

    @Test func aValidSubmissionIsVerified() throws {
        guard case .verify(let job) = triage.triage(Samples.message("s-1", offset: 3), nowMs: nowMs) else {
            Issue.record("expected verify")
            return
        }
        #expect(job.submission.submissionId == "s-1")
        #expect(job.completedRounds == 0 && job.priorAttempts == 0)
    }

    @Test func bytesThatAreNotJSONGoToTheDLQOnlyWithTheirOrigin() throws {
        let message = KafkaMessage(
            partition: Samples.receipts, offset: 9, key: Array("k".utf8), value: Array("%%%".utf8))
        guard case .malformed(let records, _, let id) = triage.triage(message, nowMs: nowMs) else {
            Issue.record("expected malformed")
            return
        }
        #expect(id == nil)
        #expect(records.map(\.kind) == [.deadLetter])
        let dlq = try MessageCoding.decode(DeadLetterRecord.self, from: records[0].value)
        #expect(dlq.reason == .malformedSubmission && dlq.submissionId == nil)
        #expect(dlq.sourceTopic == "receipts" && dlq.sourcePartition == 0 && dlq.sourceOffset == 9)
        #expect(dlq.originalValue == Base64.encode(Array("%%%".utf8)))
        #expect(dlq.originalKey == Base64.encode(Array("k".utf8)))
        #expect(records[0].topic == "dlq" && records[0].key == Array("k".utf8))
        #expect(records[0].header(MessageHeaders.dlqReason) == "malformed_submission")
    }

    @Test func aSubmissionWithARecoverableIdAlsoGetsAFailedResult() throws {
        // A StoreKit 2 JWS where the base64 app receipt belongs.
        let json = #"{"schema_version":1,"submission_id":"s-9","order_id":"o-9","user_id":"u-9","#
            + #""receipt_data":"eyJhbGciOi.eyJzdWIi.c2ln"}"#
        let message = KafkaMessage(
            partition: Samples.receipts, offset: 1, key: Array("u-9".utf8), value: Array(json.utf8))
        guard case .malformed(let records, _, let id) = triage.triage(message, nowMs: nowMs) else {
            Issue.record("expected malformed")
            return
        }
        #expect(id == "s-9")
        #expect(records.map(\.kind) == [.deadLetter, .result])
        let result = try MessageCoding.decode(VerificationResult.self, from: records[1].value)
        #expect(result.outcome == .failed && result.reason == .malformedSubmission)
        #expect(result.orderId == "o-9" && result.userId == "u-9" && result.attempts == 0)
        #expect(result.verifiedAtMs == nowMs)
        #expect(records[1].key == Array("u-9".utf8) && records[1].topic == "results")
        #expect(records[1].header(MessageHeaders.submissionId) == "s-9")
        #expect(records[1].header(MessageHeaders.outcome) == "failed")
    }

    /// A direct producer's `transaction_id` that no Apple transaction can have (not a UInt64's decimal text) is a
    /// malformed field: DLQ plus `failed` / `malformed_submission`, decided before any Apple call (no job to verify).
    @Test(arguments: ["12ab", "0042", "18446744073709551616", "-1"])
    func aTransactionIdThatIsNoAppleIdIsMalformedWithoutAnAppleCall(id: String) throws {
        let json = #"{"schema_version":1,"submission_id":"s-t","user_id":"u-t","transaction_id":"\#(id)"}"#
        let message = KafkaMessage(
            partition: Samples.receipts, offset: 2, key: Array("u-t".utf8), value: Array(json.utf8))
        guard case .malformed(let records, let problem, let submissionId) = triage.triage(message, nowMs: nowMs) else {
            Issue.record("expected malformed")
            return
        }
        #expect(submissionId == "s-t")
        #expect(problem.contains("transaction_id"))
        #expect(records.map(\.kind) == [.deadLetter, .result])
        let dlq = try MessageCoding.decode(DeadLetterRecord.self, from: records[0].value)
        #expect(dlq.reason == .malformedSubmission && dlq.sourceOffset == 2)
        let result = try MessageCoding.decode(VerificationResult.self, from: records[1].value)
        #expect(result.outcome == .failed && result.reason == .malformedSubmission && result.attempts == 0)
    }

    /// Issue 24 item 9: a direct producer's identifier with a control character (libpq would store `victim\u0000x`
    /// as `victim`) is malformed: DLQ plus `failed` / `malformed_submission`, no Apple call, and the result echoes no
    /// such identifier, so the ledger never receives one from the pipeline.
    @Test(arguments: ["user_id", "order_id", "client_id", "expected_product_id", "expected_transaction_id"])
    func anIdentifierWithAControlCharacterIsMalformedAndNotEchoed(field: String) throws {
        let json = #"{"schema_version":1,"submission_id":"s-c","user_id":"u-c","order_id":"o-c","#
            + #""receipt_data":"YQ==","\#(field)":"victim\u0000x"}"#
        let message = KafkaMessage(
            partition: Samples.receipts, offset: 3, key: Array("u-c".utf8), value: Array(json.utf8))
        guard case .malformed(let records, let problem, let submissionId) = triage.triage(message, nowMs: nowMs) else {
            Issue.record("expected malformed")
            return
        }
        #expect(submissionId == "s-c")
        #expect(problem.contains(field) && problem.contains("U+0000"), "\(problem)")
        #expect(records.map(\.kind) == [.deadLetter, .result])
        let result = try MessageCoding.decode(VerificationResult.self, from: records[1].value)
        #expect(result.outcome == .failed && result.reason == .malformedSubmission && result.attempts == 0)
        #expect(result.userId == (field == "user_id" ? nil : "u-c"))
        #expect(result.orderId == (field == "order_id" ? nil : "o-c"))
        #expect(result.clientId == nil)
        let written = String(decoding: records[1].value, as: UTF8.self)
        #expect(!written.contains("\\u0000") && !written.contains("\u{0}"))
    }

    @Test func retryRecordsWaitUntilDueThenVerifyWithTheirRoundCount() throws {
        let record = RetryRecord(
            submission: Samples.submission("s-2"), round: 2, attempts: 7, notBeforeMs: nowMs + 5_000,
            lastAppleStatus: 21005, lastError: "21005")
        let message = KafkaMessage(
            partition: Samples.retry, offset: 4, key: Array("user-1".utf8), value: RetryRecordJSON.encode(record))
        guard case .waitUntil(let due, let job) = triage.triage(message, nowMs: nowMs) else {
            Issue.record("expected waitUntil")
            return
        }
        #expect(due == nowMs + 5_000 && job.completedRounds == 2 && job.priorAttempts == 7)
        guard case .verify(let dueJob) = triage.triage(message, nowMs: nowMs + 5_000) else {
            Issue.record("expected verify once due")
            return
        }
        #expect(dueJob.submission.submissionId == "s-2")
    }

    @Test func anUnreadableRetryRecordGoesToTheDLQWithItsIdWhenRecoverable() throws {
        let json = #"{"schema_version":1,"submission":{"submission_id":"s-3"},"round":"x"}"#
        let message = KafkaMessage(partition: Samples.retry, offset: 2, key: nil, value: Array(json.utf8))
        guard case .malformed(let records, _, let id) = triage.triage(message, nowMs: nowMs) else {
            Issue.record("expected malformed")
            return
        }
        #expect(id == "s-3" && records.map(\.kind) == [.deadLetter, .result])
    }

    @Test func aMessageOverTheSizeLimitIsNotReadAndGoesToTheDLQOnly() throws {
        // A valid submission padded with whitespace (valid JSON): read at the limit, refused unread one byte over.
        let submission = SubmissionJSON.encode(Samples.submission("s-big"))
        func padded(to size: Int, partition: TopicPartition) -> KafkaMessage {
            let value = submission + [UInt8](repeating: UInt8(ascii: " "), count: size - submission.count)
            return KafkaMessage(partition: partition, offset: 5, key: Array("k".utf8), value: value)
        }
        let limit = MessageLimits.maximumValueBytes
        guard case .verify(let job) = triage.triage(padded(to: limit, partition: Samples.receipts), nowMs: nowMs)
        else {
            Issue.record("expected a message of exactly the limit to be read")
            return
        }
        #expect(job.submission.submissionId == "s-big")
        for partition in [Samples.receipts, Samples.retry] {
            guard case .malformed(let records, let problem, let id) = triage.triage(
                padded(to: limit + 1, partition: partition), nowMs: nowMs)
            else {
                Issue.record("expected a message over the limit to be refused")
                return
            }
            // Not even the submission_id is read: no result, only the DLQ record.
            #expect(id == nil && records.map(\.kind) == [.deadLetter])
            #expect(problem.contains("\(limit + 1) bytes, over the verifier's limit of \(limit)"))
            let dlq = try MessageCoding.decode(DeadLetterRecord.self, from: records[0].value)
            #expect(dlq.reason == .malformedSubmission && dlq.sourceOffset == 5)
            #expect(dlq.originalValue.isEmpty && dlq.message.contains("read it at source_topic"))
        }
    }

    @Test func hostileJSONGivesCleanRefusalsQuickly() throws {
        // A million '[', a 100 MB number (refused unread), invalid UTF-8, a raw NUL byte.
        var number = Array(#"{"schema_version":1,"submission_id":"s-n","submitted_at_ms":"#.utf8)
        number += [UInt8](repeating: UInt8(ascii: "7"), count: 100_000_000)
        let inputs: [(String, [UInt8])] = [
            ("deep", [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)),
            ("huge number", number),
            ("invalid UTF-8", Array(#"{"schema_version":1,"submission_id":"s-"#.utf8) + [0xFF, 0xFE, 0x22, 0x7D]),
            ("raw NUL", Array(#"{"schema_version":1,"submission_id":"s-\#u{0}"}"#.utf8)),
        ]
        for (name, value) in inputs {
            for partition in [Samples.receipts, Samples.retry] {
                let started = ContinuousClock.now
                let outcome = triage.triage(
                    KafkaMessage(partition: partition, offset: 1, key: nil, value: value), nowMs: nowMs)
                guard case .malformed(let records, _, _) = outcome else {
                    Issue.record("\(name) on \(partition.topic) was not refused")
                    continue
                }
                #expect(records.first?.kind == .deadLetter, "\(name)")
                // Linear work takes well under a second; a generous bound for a loaded machine.
                #expect(ContinuousClock.now - started < .seconds(10), "\(name) on \(partition.topic)")
            }
        }
    }

    /// One message in, one triage out: every case `MessageTriage` tells apart, on both topics it reads.
    struct Row: Sendable, CustomStringConvertible {
        enum Expected: Sendable {
            case verify(id: String, rounds: Int, attempts: Int)
            case waitUntil(dueMs: Int64, id: String)
            /// The records' kinds, and a fragment of the problem.
            case malformed(id: String?, kinds: [OutgoingRecordKind], problem: String)
        }
        let description: String
        let partition: TopicPartition
        let value: [UInt8]
        let expected: Expected

        init(_ description: String, _ partition: TopicPartition, _ value: [UInt8], _ expected: Expected) {
            self.description = description
            self.partition = partition
            self.value = value
            self.expected = expected
        }

        init(_ description: String, _ partition: TopicPartition, _ json: String, _ expected: Expected) {
            self.init(description, partition, Array(json.utf8), expected)
        }

        static let now: Int64 = 1_700_000_100_000

        static func retry(_ submission: Submission, notBeforeMs: Int64) -> [UInt8] {
            RetryRecordJSON.encode(
                RetryRecord(
                    submission: submission, round: 2, attempts: 7, notBeforeMs: notBeforeMs, lastAppleStatus: 21005,
                    lastError: "21005"))
        }

        static func oversized() -> [UInt8] {
            let submission = SubmissionJSON.encode(Samples.submission("s-big"))
            return submission + [UInt8](repeating: UInt8(ascii: " "), count: MessageLimits.maximumValueBytes + 1 - submission.count)
        }

        static let dlq: [OutgoingRecordKind] = [.deadLetter]
        static let dlqAndResult: [OutgoingRecordKind] = [.deadLetter, .result]
        static let retryId = Samples.submission("s-r", order: "o-r")
        static let submissionFields = #""submission":{"schema_version":1,"submission_id":"s-r","receipt_data":"YQ=="}"#

        static let all: [Row] = [
            Row("a well-formed submission", Samples.receipts, SubmissionJSON.encode(Samples.submission("s-1")),
                .verify(id: "s-1", rounds: 0, attempts: 0)),
            Row("ids as JSON integers", Samples.receipts,
                #"{"schema_version":1,"submission_id":77,"receipt_data":"YQ==","order_id":42}"#,
                .verify(id: "77", rounds: 0, attempts: 0)),
            Row("bytes that are not JSON", Samples.receipts, "%%%", .malformed(id: nil, kinds: dlq, problem: "not valid JSON")),
            Row("JSON that is not an object", Samples.receipts, "[1]",
                .malformed(id: nil, kinds: dlq, problem: "not a JSON object")),
            Row("no schema_version", Samples.receipts, #"{"submission_id":"s-5","receipt_data":"YQ=="}"#,
                .malformed(id: "s-5", kinds: dlqAndResult, problem: "schema_version is missing")),
            Row("no submission_id", Samples.receipts, #"{"schema_version":1,"receipt_data":"YQ=="}"#,
                .malformed(id: nil, kinds: dlq, problem: "submission_id is missing or empty")),
            Row("no proof", Samples.receipts, #"{"schema_version":1,"submission_id":"s-6"}"#,
                .malformed(id: "s-6", kinds: dlqAndResult, problem: "none of receipt_data")),
            Row("a field of the wrong type", Samples.receipts,
                #"{"schema_version":1,"submission_id":"s-8","receipt_data":"YQ==","user_id":true}"#,
                .malformed(id: "s-8", kinds: dlqAndResult, problem: "user_id must be a string or an integer")),
            Row("a submission over the size limit", Samples.receipts, oversized(),
                .malformed(id: nil, kinds: dlq, problem: "over the verifier's limit")),
            Row("a retry record not due yet", Samples.retry, retry(retryId, notBeforeMs: now + 5_000),
                .waitUntil(dueMs: now + 5_000, id: "s-r")),
            Row("a retry record that is due", Samples.retry, retry(retryId, notBeforeMs: now),
                .verify(id: "s-r", rounds: 2, attempts: 7)),
            Row("a retry record that is not JSON", Samples.retry, "%%%",
                .malformed(id: nil, kinds: dlq, problem: "retry record is not readable: not valid JSON")),
            Row("a retry record with a field missing", Samples.retry,
                #"{"schema_version":1,\#(submissionFields),"round":2,"attempts":7,"not_before_ms":0}"#,
                .malformed(id: "s-r", kinds: dlqAndResult, problem: "retry record is not readable: field last_error is missing")),
            Row("a retry record with a field of the wrong type", Samples.retry,
                #"{"schema_version":1,\#(submissionFields),"round":"x","attempts":7,"not_before_ms":0,"last_error":"e"}"#,
                .malformed(id: "s-r", kinds: dlqAndResult, problem: "retry record is not readable: field round has the wrong type")),
            // Inside a retry record ids are strings, as the verifier writes them: the record is not readable.
            Row("a retry record whose submission_id is a JSON integer", Samples.retry,
                #"{"schema_version":1,"submission":{"schema_version":1,"submission_id":77,"receipt_data":"YQ=="},"#
                    + #""round":2,"attempts":7,"not_before_ms":0,"last_error":"e"}"#,
                .malformed(
                    id: nil, kinds: dlq,
                    problem: "retry record is not readable: field submission.submission_id has the wrong type")),
            Row("a retry record holding an invalid submission", Samples.retry,
                retry(Submission(submissionId: "s-r", receiptData: "%%", orderId: "o-r", submittedAtMs: 1), notBeforeMs: 0),
                .malformed(
                    id: "s-r", kinds: dlqAndResult, problem: "retry record holds an invalid submission: receipt_data is not base64")),
            Row("a retry record holding a submission of another schema version", Samples.retry,
                retry(Submission(submissionId: "s-r", receiptData: "YQ==", submittedAtMs: 1, schemaVersion: 2), notBeforeMs: 0),
                .malformed(
                    id: "s-r", kinds: dlqAndResult, problem: "retry record holds an invalid submission: schema_version 2 is not supported")),
            Row("a retry record over the size limit", Samples.retry, oversized(),
                .malformed(id: nil, kinds: dlq, problem: "over the verifier's limit")),
        ]
    }

    @Test(arguments: Row.all)
    func triageTable(_ row: Row) throws {
        let message = KafkaMessage(partition: row.partition, offset: 11, key: Array("k".utf8), value: row.value)
        let outcome = triage.triage(message, nowMs: Row.now)
        switch (outcome, row.expected) {
        case (.verify(let job), .verify(let id, let rounds, let attempts)):
            #expect(job.submission.submissionId == id)
            #expect(job.completedRounds == rounds && job.priorAttempts == attempts)
            #expect(job.message.offset == 11 && job.message.topic == row.partition.topic)
        case (.waitUntil(let due, let job), .waitUntil(let dueMs, let id)):
            #expect(due == dueMs && job.submission.submissionId == id)
        case (.malformed(let records, let problem, let submissionId), .malformed(let id, let kinds, let fragment)):
            #expect(submissionId == id)
            #expect(records.map(\.kind) == kinds)
            #expect(problem.contains(fragment), "\(problem)")
            let dlq = try MessageCoding.decode(DeadLetterRecord.self, from: records[0].value)
            #expect(dlq.reason == .malformedSubmission && dlq.submissionId == id)
            #expect(dlq.sourceTopic == row.partition.topic && dlq.sourceOffset == 11)
        default:
            Issue.record("\(row): \(outcome) instead of \(row.expected)")
        }
    }

    @Test func aVerdictBecomesTheResultWithAttemptsOfAllRounds() throws {
        let (records, disposition) = router().route(
            Samples.verified(attempts: 2), job: job(round: 1, attempts: 3), breakerOpen: false, nowMs: nowMs)
        #expect(disposition == .result(.verified, nil))
        #expect(records.count == 1)
        let result = try MessageCoding.decode(VerificationResult.self, from: records[0].value)
        #expect(result.outcome == .verified && result.reason == nil && result.attempts == 5)
        #expect(result.environment == .production && result.bundleId == "com.example.game")
        #expect(result.transactions.first?.creditKey == "apple:production:1000000460004095")
        #expect(result.orderId == "o-1" && result.userId == "user-1")
        #expect(records[0].key == Array("user-1".utf8))
        #expect(records[0].header(MessageHeaders.outcome) == "verified")
    }

    @Test func aConfigurationErrorFailsAtOnceWithADLQRecord() throws {
        let (records, disposition) = router().route(
            Samples.configurationError(21004, "shared secret mismatch"), job: job(),
            breakerOpen: false, nowMs: nowMs)
        #expect(disposition == .result(.failed, .configError))
        #expect(records.map(\.kind) == [.deadLetter, .result])
        let dlq = try MessageCoding.decode(DeadLetterRecord.self, from: records[0].value)
        #expect(dlq.reason == .configError && dlq.appleStatus == 21004 && dlq.sourceOffset == 42)
        let result = try MessageCoding.decode(VerificationResult.self, from: records[1].value)
        #expect(result.reason == .configError && result.appleStatus == 21004)
    }

    @Test func noVerdictBecomesARetryRecordUntilTheLastRound() throws {
        let first = router(rounds: 3).route(Samples.unavailable, job: job(), breakerOpen: false, nowMs: nowMs)
        #expect(first.disposition == .retry(round: 1, notBeforeMs: nowMs + 10_000))
        #expect(first.records.map(\.kind) == [.retry])
        let record = try MessageCoding.decode(RetryRecord.self, from: first.records[0].value)
        #expect(record.round == 1 && record.attempts == 3 && record.notBeforeMs == nowMs + 10_000)
        #expect(record.submission.submissionId == "s-1")
        #expect(first.records[0].topic == "retry" && first.records[0].key == Array("user-1".utf8))

        let second = router(rounds: 3).route(
            Samples.unavailable, job: job(round: 1, attempts: 3, partition: Samples.retry), breakerOpen: false,
            nowMs: nowMs)
        #expect(second.disposition == .retry(round: 2, notBeforeMs: nowMs + 20_000))

        let last = router(rounds: 3).route(
            Samples.unavailable, job: job(round: 2, attempts: 6, partition: Samples.retry), breakerOpen: false,
            nowMs: nowMs)
        #expect(last.disposition == .result(.failed, .appleUnavailable))
        #expect(last.records.map(\.kind) == [.deadLetter, .result])
        let result = try MessageCoding.decode(VerificationResult.self, from: last.records[1].value)
        #expect(result.attempts == 9 && result.reason == .appleUnavailable)
    }

    @Test func roundsCutShortByTheServerAPIRateLimitNeverFailASubmission() throws {
        let limited = VerificationOutcome.unavailable(
            VerificationFailure(
                reason: .appleUnavailable, message: "held back after a 429", appleStatus: 4_290_000,
                environment: .production, attempts: 0, source: .serverAPI, rateLimited: true))
        // The last round by count: an ordinary failure here is `failed`; a rate-limited one waits for another round.
        let last = router(rounds: 3).route(
            limited, job: job(round: 2, attempts: 6, partition: Samples.retry), breakerOpen: false, nowMs: nowMs)
        #expect(last.disposition == .retry(round: 2, notBeforeMs: nowMs + 20_000))
        #expect(last.records.map(\.kind) == [.retry])
        let single = router(rounds: 1).route(limited, job: job(), breakerOpen: false, nowMs: nowMs)
        #expect(single.disposition == .retry(round: 1, notBeforeMs: nowMs + 10_000))
        let record = try MessageCoding.decode(RetryRecord.self, from: single.records[0].value)
        #expect(record.lastAppleStatus == 4_290_000 && record.source == .serverAPI)
        // The same failure without the flag fails the submission on its last round.
        var ordinary = try #require(limited.failureDetails)
        ordinary.rateLimited = false
        let failed = router(rounds: 1).route(.unavailable(ordinary), job: job(), breakerOpen: false, nowMs: nowMs)
        #expect(failed.disposition == .result(.failed, .appleUnavailable))
    }

    @Test func roundsDuringAnOutageDoNotCount() {
        let during = router(rounds: 3).route(
            Samples.unavailable, job: job(round: 2, attempts: 6, partition: Samples.retry), breakerOpen: true,
            nowMs: nowMs)
        #expect(during.disposition == .retry(round: 2, notBeforeMs: nowMs + 20_000))
        let fresh = router(rounds: 1).route(Samples.unavailable, job: job(), breakerOpen: true, nowMs: nowMs)
        #expect(fresh.disposition == .retry(round: 1, notBeforeMs: nowMs + 10_000))
    }
}

extension VerificationOutcome {
    fileprivate var failureDetails: VerificationFailure? {
        if case .unavailable(let failure) = self { return failure }
        return nil
    }
}
