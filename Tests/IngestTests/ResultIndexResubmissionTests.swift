import Foundation
import Ingest
import ReceiptModel
import Synchronization
import Testing

/// The result index's rules for resubmissions and tenants (pure: manual clock and timer): which result wins,
/// what a reused `submission_id` gets (`admit`), and who sees what.
@Suite("result index: resubmissions, final results, tenants")
struct ResultIndexResubmissionTests {
    typealias ManualTime = ResultIndexTests.ManualTime
    typealias Outcomes = ResultIndexTests.Outcomes

    private let sameFingerprint = ResultFixtures.fingerprint
    private let otherFingerprint = String(repeating: "0", count: 64)

    private func makeIndex(_ time: ManualTime) -> ResultIndex {
        ResultIndex(
            limits: .init(maxEntries: 1000, maxBytes: 1 << 20, maxPending: 1000, maxAgeMs: 60_000),
            clock: time.clock)
    }

    private func reservation(_ admission: ResultIndex.Admission) -> ResultIndex.Reservation? {
        if case .write(let reservation) = admission { return reservation }
        return nil
    }

    @Test("a later verified or rejected result replaces a failed one; verified and rejected are never replaced")
    func finalResults() throws {
        let time = ManualTime()
        let index = makeIndex(time)
        let failed = try ResultFixtures.bytes("f-1", outcome: .failed)
        let verified = try ResultFixtures.bytes("f-1", outcome: .verified)
        let rejected = try ResultFixtures.bytes("f-1", outcome: .rejected)
        #expect(
            index.record(value: failed, timestampMs: time.now)
                == .indexed(submissionId: "f-1", waitersCompleted: 0))
        #expect(index.lookup("f-1") == .result(failed))
        // A DLQ replay's verdict must be visible to lookups.
        #expect(
            index.record(value: verified, timestampMs: time.now)
                == .replaced(submissionId: "f-1", waitersCompleted: 0))
        #expect(index.lookup("f-1") == .result(verified))
        #expect(
            index.record(value: rejected, timestampMs: time.now)
                == .duplicate(submissionId: "f-1"))
        #expect(
            index.record(value: failed, timestampMs: time.now)
                == .duplicate(submissionId: "f-1"))
        #expect(index.lookup("f-1") == .result(verified))
        #expect(index.statistics.entries == 1)
        #expect(index.statistics.bytes == verified.count)
        #expect(index.statistics.replaced == 1)
        #expect(index.statistics.duplicates == 2)

        // A rejected result is final too; a failed one is replaced by a later failed one (a new attempt's).
        let rejectedFirst = try ResultFixtures.bytes("f-2", outcome: .rejected)
        index.record(value: rejectedFirst, timestampMs: time.now)
        #expect(
            index.record(value: try ResultFixtures.bytes("f-2"), timestampMs: time.now)
                == .duplicate(submissionId: "f-2"))
        #expect(index.lookup("f-2") == .result(rejectedFirst))
        index.record(value: try ResultFixtures.bytes("f-3", outcome: .failed), timestampMs: time.now)
        let failedAgain = VerificationResultJSON.encode(
            { var result = ResultFixtures.result("f-3", outcome: .failed); result.attempts = 9; return result }())
        #expect(
            index.record(value: failedAgain, timestampMs: time.now)
                == .replaced(submissionId: "f-3", waitersCompleted: 0))
        #expect(index.lookup("f-3") == .result(failedAgain))
    }

    /// One row: what the index holds for the id, who posts with which fingerprint, what `admit` says.
    struct AdmitCase: Sendable, CustomTestStringConvertible {
        enum Known: Sendable {
            case nothing
            case result(Outcome, clientId: String?, fingerprint: String?)
            /// Pending (acknowledged) or being written (not acknowledged yet).
            case mark(clientId: String?, acknowledged: Bool)
        }
        enum Expected: Sendable, Equatable { case write, answer, conflict, foreign }

        let name: String
        let known: Known
        let caller: Caller
        let sameFingerprint: Bool
        let expected: Expected
        var testDescription: String { name }
    }

    static let admitCases: [AdmitCase] = [
        .init(
            name: "unknown id: write", known: .nothing, caller: .unrestricted, sameFingerprint: true,
            expected: .write),
        .init(
            name: "verified, same fingerprint: answer", known: .result(.verified, clientId: nil, fingerprint: "same"),
            caller: .unrestricted, sameFingerprint: true, expected: .answer),
        .init(
            name: "rejected, same fingerprint: answer", known: .result(.rejected, clientId: nil, fingerprint: "same"),
            caller: .unrestricted, sameFingerprint: true, expected: .answer),
        .init(
            name: "verified, other fingerprint: conflict",
            known: .result(.verified, clientId: nil, fingerprint: "same"), caller: .unrestricted,
            sameFingerprint: false, expected: .conflict),
        .init(
            name: "verified without a fingerprint: conflict",
            known: .result(.verified, clientId: nil, fingerprint: nil),
            caller: .unrestricted, sameFingerprint: true, expected: .conflict),
        .init(
            name: "failed, same fingerprint: written again",
            known: .result(.failed, clientId: nil, fingerprint: "same"),
            caller: .unrestricted, sameFingerprint: true, expected: .write),
        .init(
            name: "failed, other fingerprint: conflict", known: .result(.failed, clientId: nil, fingerprint: "same"),
            caller: .unrestricted, sameFingerprint: false, expected: .conflict),
        .init(
            name: "failed without a fingerprint (unreadable proof): written again",
            known: .result(.failed, clientId: nil, fingerprint: nil), caller: .unrestricted, sameFingerprint: false,
            expected: .write),
        .init(
            name: "pending, same fingerprint: written again", known: .mark(clientId: nil, acknowledged: true),
            caller: .unrestricted, sameFingerprint: true, expected: .write),
        .init(
            name: "pending, other fingerprint: conflict", known: .mark(clientId: nil, acknowledged: true),
            caller: .unrestricted, sameFingerprint: false, expected: .conflict),
        .init(
            name: "being written, other fingerprint: conflict", known: .mark(clientId: nil, acknowledged: false),
            caller: .unrestricted, sameFingerprint: false, expected: .conflict),
        .init(
            name: "another client's result: foreign, also with another fingerprint",
            known: .result(.verified, clientId: "billing", fingerprint: "same"), caller: .client("support"),
            sameFingerprint: false, expected: .foreign),
        .init(
            name: "a result without client_id, posted by a named key: foreign",
            known: .result(.verified, clientId: nil, fingerprint: "same"), caller: .client("support"),
            sameFingerprint: true, expected: .foreign),
        .init(
            name: "the same client's result: answer",
            known: .result(.verified, clientId: "billing", fingerprint: "same"),
            caller: .client("billing"), sameFingerprint: true, expected: .answer),
        .init(
            name: "an unnamed key sees a named client's result",
            known: .result(.verified, clientId: "billing", fingerprint: "same"),
            caller: .unrestricted, sameFingerprint: true, expected: .answer),
        .init(
            name: "another client's pending submission: foreign", known: .mark(clientId: "billing", acknowledged: true),
            caller: .client("support"), sameFingerprint: true, expected: .foreign),
        .init(
            name: "another client's submission being written: foreign",
            known: .mark(clientId: "billing", acknowledged: false),
            caller: .client("support"), sameFingerprint: false, expected: .foreign),
    ]

    @Test("admit: another client's id is foreign, a different fingerprint a conflict, a final verdict answered",
          arguments: admitCases)
    func admit(row: AdmitCase) throws {
        let time = ManualTime()
        let index = makeIndex(time)
        let id = "a-1"
        var known: [UInt8]?
        switch row.known {
        case .nothing:
            break
        case .result(let outcome, let clientId, let fingerprint):
            let value = try ResultFixtures.bytes(
                id, outcome: outcome, clientId: clientId, fingerprint: fingerprint.map { _ in sameFingerprint })
            index.record(value: value, timestampMs: time.now)
            known = value
        case .mark(let clientId, let acknowledged):
            let caller = clientId.map(Caller.client) ?? .unrestricted
            let reserved = try #require(reservation(index.admit(id, fingerprint: sameFingerprint, caller: caller)))
            if acknowledged { index.accepted(reserved) }
        }
        let admission = index.admit(
            id, fingerprint: row.sameFingerprint ? sameFingerprint : otherFingerprint, caller: row.caller)
        switch row.expected {
        case .write: #expect(reservation(admission) != nil, "\(admission)")
        case .answer: #expect(admission == .answer(try #require(known)))
        case .conflict: #expect(admission == .conflict)
        case .foreign: #expect(admission == .foreign)
        }
    }

    @Test("a failed result resubmitted: pending once Kafka acknowledged the new write, then the new verdict")
    func failedResubmitted() throws {
        let time = ManualTime()
        let index = makeIndex(time)
        let failed = try ResultFixtures.bytes("r-1", outcome: .failed)
        index.record(value: failed, timestampMs: time.now)
        let reserved = try #require(
            reservation(index.admit("r-1", fingerprint: sameFingerprint, caller: .unrestricted)))
        // Not written yet: the failed result is still the answer.
        #expect(index.lookup("r-1") == .result(failed))
        index.accepted(reserved)
        #expect(index.lookup("r-1") == .pending)
        // A wait now waits for the fresh attempt's result instead of returning the old failure.
        let outcomes = Outcomes()
        index.wait(for: "r-1", timeoutMs: 1000) { outcomes.append($0) }
        #expect(outcomes.all.isEmpty)
        let verified = try ResultFixtures.bytes("r-1")
        #expect(
            index.record(value: verified, timestampMs: time.now)
                == .replaced(submissionId: "r-1", waitersCompleted: 1))
        #expect(outcomes.all == [.verdict(verified)])
        #expect(index.lookup("r-1") == .result(verified))
        // The answered waiter's deadline passing changes nothing (and its timer runs: left pending, the timer would
        // keep the index alive in a cycle through ManualTime that LeakSanitizer reports).
        time.advance(by: 1000)
        #expect(outcomes.all == [.verdict(verified)])
        #expect(time.scheduledCount == 0)
    }

    @Test("a write that did not happen leaves no mark; one possibly written (kept reserved) still guards the id")
    func abandonedWrites() throws {
        let time = ManualTime()
        let index = makeIndex(time)
        let first = try #require(reservation(index.admit("w-1", fingerprint: sameFingerprint, caller: .unrestricted)))
        #expect(index.admit("w-1", fingerprint: otherFingerprint, caller: .unrestricted) == .conflict)
        index.abandoned(first)
        #expect(index.statistics.pending == 0)
        #expect(reservation(index.admit("w-1", fingerprint: otherFingerprint, caller: .unrestricted)) != nil)

        // Two writes of the same submission; one acknowledged, the other refused: it stays pending.
        let a = try #require(reservation(index.admit("w-2", fingerprint: sameFingerprint, caller: .unrestricted)))
        let b = try #require(reservation(index.admit("w-2", fingerprint: sameFingerprint, caller: .unrestricted)))
        index.accepted(a)
        index.abandoned(b)
        #expect(index.lookup("w-2") == .pending)

        // Before Kafka acknowledged anything the id is not "pending" to lookups, but is guarded.
        _ = try #require(reservation(index.admit("w-3", fingerprint: sameFingerprint, caller: .unrestricted)))
        #expect(index.lookup("w-3") == .unknown)
        #expect(index.admit("w-3", fingerprint: otherFingerprint, caller: .unrestricted) == .conflict)
    }

    @Test("an acknowledgement arriving after the result does not mark the id pending again")
    func resultBeforeAcknowledgement() throws {
        let time = ManualTime()
        let index = makeIndex(time)
        let reserved = try #require(
            reservation(index.admit("q-1", fingerprint: sameFingerprint, caller: .unrestricted)))
        let result = try ResultFixtures.bytes("q-1", outcome: .failed)
        index.record(value: result, timestampMs: time.now)
        index.accepted(reserved)
        #expect(index.lookup("q-1") == .result(result))
        #expect(index.statistics.pending == 0)
    }

    @Test("lookups and waits show a result or pending only to a caller that may see its client_id")
    func tenants() throws {
        let time = ManualTime()
        let index = makeIndex(time)
        let billing = try ResultFixtures.bytes("t-1", clientId: "billing")
        index.record(value: billing, timestampMs: time.now)
        #expect(index.lookup("t-1", for: .client("billing")) == .result(billing))
        #expect(index.lookup("t-1", for: .client("support")) == .unknown)
        #expect(index.lookup("t-1", for: .unrestricted) == .result(billing))
        let reserved = try #require(
            reservation(index.admit("t-2", fingerprint: sameFingerprint, caller: .client("billing"))))
        index.accepted(reserved)
        #expect(index.lookup("t-2", for: .client("billing")) == .pending)
        #expect(index.lookup("t-2", for: .client("support")) == .unknown)

        // A waiter gets only a result it may see; one it may not see leaves it waiting (until its time).
        let seen = Outcomes()
        let hidden = Outcomes()
        index.wait(for: "t-3", caller: .unrestricted, timeoutMs: 500) { seen.append($0) }
        index.wait(for: "t-3", caller: .client("billing"), timeoutMs: 500) { hidden.append($0) }
        let support = try ResultFixtures.bytes("t-3", clientId: "support")
        #expect(
            index.record(value: support, timestampMs: time.now)
                == .indexed(submissionId: "t-3", waitersCompleted: 1))
        #expect(seen.all == [.verdict(support)])
        #expect(hidden.all.isEmpty)
        time.advance(by: 500)
        #expect(hidden.all == [.timedOut])
        // A wait by a caller who may not see the known result does not get it either.
        index.wait(for: "t-1", caller: .client("support"), timeoutMs: 100) { hidden.append($0) }
        time.advance(by: 100)
        #expect(hidden.all == [.timedOut, .timedOut])
    }
}
