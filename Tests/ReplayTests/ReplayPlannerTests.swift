import Testing

@testable import ReceiptModel
@testable import Replay

@Suite struct ReplayPlannerTests {
    private let submission = Submission(
        submissionId: "s-1", receiptData: "YQ==", orderId: "o-1", userId: "u-1", submittedAtMs: 10)

    private func dlqBytes(
        reason: Reason, failedAtMs: Int64 = 1_000, original: [UInt8], id: String? = "s-1", key: [UInt8]? = Array("u-1".utf8)
    ) throws -> [UInt8] {
        try MessageCoding.encode(
            DeadLetterRecord(
                submissionId: id, reason: reason, message: "m", sourceTopic: "iap.receipts.submitted",
                sourcePartition: 2, sourceOffset: 40, originalKey: key, originalValue: original, appleStatus: 21005,
                attempts: 9, failedAtMs: failedAtMs))
    }

    @Test func replaysTheOriginalSubmissionBytesWithTheOriginalKey() throws {
        let original = SubmissionJSON.encode(submission)
        var planner = ReplayPlanner(filter: ReplayFilter(), destination: .submissions)
        let decision = planner.decide(dlqValue: try dlqBytes(reason: .appleUnavailable, original: original), nowMs: 5)
        #expect(decision == .replay(submissionId: "s-1", key: Array("u-1".utf8), value: original))
    }

    @Test func eachSubmissionIsReplayedOncePerRun() throws {
        let original = SubmissionJSON.encode(submission)
        var planner = ReplayPlanner(filter: ReplayFilter(), destination: .submissions)
        _ = planner.decide(dlqValue: try dlqBytes(reason: .appleUnavailable, original: original), nowMs: 5)
        let second = planner.decide(dlqValue: try dlqBytes(reason: .appleUnavailable, original: original), nowMs: 5)
        #expect(second == .duplicate(submissionId: "s-1"))
    }

    @Test func filtersByReasonAndTime() throws {
        let original = SubmissionJSON.encode(submission)
        var byReason = ReplayPlanner(filter: ReplayFilter(reasons: [.configError]), destination: .submissions)
        #expect(byReason.decide(dlqValue: try dlqBytes(reason: .appleUnavailable, original: original), nowMs: 0)
            == .skip("does not match the filter"))
        #expect(byReason.decide(dlqValue: try dlqBytes(reason: .configError, original: original), nowMs: 0)
            != .skip("does not match the filter"))

        let window = ReplayFilter(sinceMs: 1_000, untilMs: 2_000)
        #expect(window.matches(try MessageCoding.decode(DeadLetterRecord.self, from: try dlqBytes(reason: .configError, failedAtMs: 1_000, original: original))))
        #expect(!window.matches(try MessageCoding.decode(DeadLetterRecord.self, from: try dlqBytes(reason: .configError, failedAtMs: 999, original: original))))
        #expect(!window.matches(try MessageCoding.decode(DeadLetterRecord.self, from: try dlqBytes(reason: .configError, failedAtMs: 2_000, original: original))))
    }

    @Test func aRetryRecordGoesBackAsItsSubmission() throws {
        let retry = RetryRecord(
            submission: submission, round: 6, attempts: 24, notBeforeMs: 1, lastAppleStatus: 21005, lastError: "x")
        var planner = ReplayPlanner(filter: ReplayFilter(), destination: .submissions)
        let decision = planner.decide(
            dlqValue: try dlqBytes(reason: .appleUnavailable, original: RetryRecordJSON.encode(retry)), nowMs: 5)
        guard case .replay(let id, _, let value) = decision else {
            Issue.record("expected a replay, got \(decision)")
            return
        }
        #expect(id == "s-1")
        #expect(try MessageCoding.decode(Submission.self, from: value) == submission)
    }

    @Test func toTheRetryTopicIsAFreshSeriesOfRoundsDueNow() throws {
        var planner = ReplayPlanner(filter: ReplayFilter(), destination: .retry)
        let decision = planner.decide(
            dlqValue: try dlqBytes(reason: .appleUnavailable, original: SubmissionJSON.encode(submission)),
            nowMs: 777)
        guard case .replay(_, let key, let value) = decision else {
            Issue.record("expected a replay, got \(decision)")
            return
        }
        let retry = try MessageCoding.decode(RetryRecord.self, from: value)
        #expect(retry.submission == submission)
        #expect(retry.round == 0)
        #expect(retry.attempts == 9)
        #expect(retry.notBeforeMs == 777)
        #expect(key == Array("u-1".utf8))
    }

    @Test func malformedOriginalsGoOnlyToTheSubmissionsTopic() throws {
        let garbage = Array("{not json".utf8)
        var toRetry = ReplayPlanner(filter: ReplayFilter(), destination: .retry)
        guard case .skip = toRetry.decide(
            dlqValue: try dlqBytes(reason: .malformedSubmission, original: garbage, id: nil, key: nil), nowMs: 0)
        else {
            Issue.record("a malformed submission cannot become a retry record")
            return
        }
        var toSubmissions = ReplayPlanner(filter: ReplayFilter(), destination: .submissions)
        #expect(
            toSubmissions.decide(
                dlqValue: try dlqBytes(reason: .malformedSubmission, original: garbage, id: nil, key: nil), nowMs: 0)
                == .replay(submissionId: nil, key: nil, value: garbage))
    }

    @Test func aRecordWithoutTheOriginalBytesIsSkippedWithWhereToFindThem() throws {
        var planner = ReplayPlanner(filter: ReplayFilter(), destination: .submissions)
        let decision = planner.decide(dlqValue: try dlqBytes(reason: .appleUnavailable, original: []), nowMs: 0)
        guard case .skip(let why) = decision else {
            Issue.record("expected a skip, got \(decision)")
            return
        }
        #expect(why.contains("iap.receipts.submitted partition 2 offset 40"))
    }

    @Test func notADeadLetterRecordIsSkipped() {
        var planner = ReplayPlanner(filter: ReplayFilter(), destination: .submissions)
        guard case .skip = planner.decide(dlqValue: Array("[]".utf8), nowMs: 0) else {
            Issue.record("expected a skip")
            return
        }
    }
}

/// DLQ records of notifications go back to the notifications topic, unchanged, once per source position.
@Suite struct NotificationReplayTests {
    private let original = Array(#"{"schema_version":1,"signed_payload":"a.b.c","received_at_ms":5}"#.utf8)

    private func dlqBytes(sourceTopic: String, offset: Int64 = 40, reason: Reason = .invalidSignature) throws
        -> [UInt8]
    {
        try MessageCoding.encode(
            DeadLetterRecord(
                submissionId: nil, reason: reason, message: "signedPayload does not verify", sourceTopic: sourceTopic,
                sourcePartition: 1, sourceOffset: offset, originalKey: Array("otx-1".utf8), originalValue: original,
                appleStatus: nil, attempts: 0, failedAtMs: 1_000))
    }

    @Test(arguments: ReplayDestination.allCases)
    func aNotificationGoesBackToTheNotificationsTopicWhateverTheDestination(_ destination: ReplayDestination) throws {
        var planner = ReplayPlanner(filter: ReplayFilter(), destination: destination, notificationsTopic: "notes")
        let decision = planner.decide(dlqValue: try dlqBytes(sourceTopic: "notes"), nowMs: 5)
        #expect(decision == .replayNotification(key: Array("otx-1".utf8), value: original))
    }

    @Test func theSameNotificationDeadLetteredTwiceIsReplayedOnce() throws {
        var planner = ReplayPlanner(filter: ReplayFilter(), destination: .submissions, notificationsTopic: "notes")
        _ = planner.decide(dlqValue: try dlqBytes(sourceTopic: "notes"), nowMs: 5)
        #expect(planner.decide(dlqValue: try dlqBytes(sourceTopic: "notes"), nowMs: 5)
            == .duplicateNotification(source: "notes/1/40"))
        #expect(planner.decide(dlqValue: try dlqBytes(sourceTopic: "notes", offset: 41), nowMs: 5)
            == .replayNotification(key: Array("otx-1".utf8), value: original))
    }

    @Test func theReasonFilterAppliesToNotificationsToo() throws {
        var planner = ReplayPlanner(
            filter: ReplayFilter(reasons: [.appleUnavailable]), destination: .submissions, notificationsTopic: "notes")
        let decision = planner.decide(dlqValue: try dlqBytes(sourceTopic: "notes"), nowMs: 5)
        #expect(decision == .skip("does not match the filter"))
    }

    @Test func aRecordOfAnotherTopicIsNotTakenForANotification() throws {
        var planner = ReplayPlanner(filter: ReplayFilter(), destination: .submissions)
        let decision = planner.decide(dlqValue: try dlqBytes(sourceTopic: "iap.receipts.submitted"), nowMs: 5)
        #expect(decision == .replay(submissionId: nil, key: Array("otx-1".utf8), value: original))
    }
}
