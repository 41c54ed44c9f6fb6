import ReceiptModel
import Testing

@testable import Ingest

/// The result index's pure state, without lock, clock or timer: each transition's answer (the completions to run,
/// the timer to set) read from a table. Completions are the waiters' names.
@Suite("result index state")
struct ResultIndexStateTests {
    typealias State = ResultIndexState<String>

    private static let limits = ResultIndex.Limits(maxEntries: 10, maxBytes: 1 << 20, maxPending: 10, maxAgeMs: 60_000)

    private static func message(
        _ id: String, _ outcome: Outcome = .verified, client: String? = nil, atMs: Int64
    ) -> State.ResultMessage {
        State.ResultMessage(
            value: Array("\(id):\(outcome)".utf8), submissionId: id, outcome: outcome, clientId: client,
            fingerprint: "f", timestampMs: atMs)
    }

    /// One step of a waiting scenario and what the state must answer.
    enum Step {
        /// A waiter named `name` for `id` with `timeoutMs`, at `atMs`; the timer it must ask for (nil: none).
        case wait(String, id: String, caller: Caller = .unrestricted, timeoutMs: Int, atMs: Int64,
                  timer: State.TimerRequest?)
        /// A result for `id` at `atMs`; the waiters it must complete, in order.
        case result(String, client: String? = nil, atMs: Int64, completes: [String])
        /// The timer of `generation` fires at `atMs`; the waiters it ends and the next timer it asks for.
        case timer(generation: UInt64, atMs: Int64, ends: [String], next: State.TimerRequest?)
    }

    struct Scenario: CustomTestStringConvertible, Sendable {
        let name: String
        let steps: [Step]
        var testDescription: String { name }
    }

    static let scenarios: [Scenario] = [
        Scenario(
            name: "one timer for the earliest waiter; a later one sets none, an earlier one a new generation", steps: [
            .wait("a", id: "s1", timeoutMs: 1000, atMs: 0, timer: .init(delayMs: 1000, generation: 1)),
            .wait("b", id: "s2", timeoutMs: 5000, atMs: 10, timer: nil),
            .wait("c", id: "s3", timeoutMs: 100, atMs: 20, timer: .init(delayMs: 100, generation: 2)),
            // The current timer (2) ends c and asks for the next deadline (a's, at 1000).
            .timer(generation: 2, atMs: 120, ends: ["c"], next: .init(delayMs: 880, generation: 3)),
            // The superseded timer (1) still ends what is due but asks for nothing.
            .timer(generation: 1, atMs: 1000, ends: ["a"], next: nil),
            .timer(generation: 3, atMs: 1000, ends: [], next: .init(delayMs: 4010, generation: 4)),
            .timer(generation: 4, atMs: 5010, ends: ["b"], next: nil),
        ]),
        Scenario(name: "a result completes its waiters once; their deadlines then end nobody", steps: [
            .wait("a", id: "s1", timeoutMs: 1000, atMs: 0, timer: .init(delayMs: 1000, generation: 1)),
            .wait("b", id: "s1", timeoutMs: 2000, atMs: 0, timer: nil),
            .result("s1", atMs: 500, completes: ["a", "b"]),
            .timer(generation: 1, atMs: 1000, ends: [], next: .init(delayMs: 1000, generation: 2)),
            .timer(generation: 2, atMs: 2000, ends: [], next: nil),
        ]),
        Scenario(name: "a waiter of another client is not completed by a result it may not see", steps: [
            .wait("mine", id: "s1", caller: .client("app-a"), timeoutMs: 1000, atMs: 0,
                  timer: .init(delayMs: 1000, generation: 1)),
            .wait("theirs", id: "s1", caller: .client("app-b"), timeoutMs: 1000, atMs: 0, timer: nil),
            .result("s1", client: "app-a", atMs: 10, completes: ["mine"]),
            .timer(generation: 1, atMs: 1000, ends: ["theirs"], next: nil),
        ]),
        Scenario(name: "a timer that fires a little early asks again at least 1 ms ahead", steps: [
            .wait("a", id: "s1", timeoutMs: 1000, atMs: 0, timer: .init(delayMs: 1000, generation: 1)),
            .timer(generation: 1, atMs: 999, ends: [], next: .init(delayMs: 1, generation: 2)),
            .timer(generation: 2, atMs: 1000, ends: ["a"], next: nil),
        ]),
    ]

    @Test("waiting: completions and timers", arguments: scenarios)
    func waiting(_ scenario: Scenario) {
        var state = State(limits: Self.limits)
        for (number, step) in scenario.steps.enumerated() {
            switch step {
            case .wait(let name, let id, let caller, let timeoutMs, let atMs, let timer):
                let registration = state.addWaiter(
                    for: id, caller: caller, timeoutMs: timeoutMs, nowMs: atMs, completion: name)
                guard case .registered(let asked) = registration else {
                    Issue.record("step \(number): \(name) was not registered")
                    continue
                }
                #expect(asked == timer, "step \(number): the timer \(name) asks for")
            case .result(let id, let client, let atMs, let completes):
                let (_, completed) = state.record(Self.message(id, client: client, atMs: atMs), nowMs: atMs)
                #expect(completed == completes, "step \(number): the waiters the result of \(id) completes")
            case .timer(let generation, let atMs, let ends, let next):
                let (expired, asked) = state.expireDueWaiters(nowMs: atMs, generation: generation)
                #expect(expired == ends, "step \(number): the waiters timer \(generation) ends")
                #expect(asked == next, "step \(number): the timer timer \(generation) asks for")
            }
        }
        #expect(state.statistics.waiters == 0)
    }

    @Test("a result already here is answered at once; after stopWaiting every waiter ends and new ones stop at once")
    func answerNowAndStop() {
        var state = State(limits: Self.limits)
        _ = state.record(Self.message("done", atMs: 0), nowMs: 0)
        guard case .answerNow(let value) = state.addWaiter(
            for: "done", caller: .unrestricted, timeoutMs: 1000, nowMs: 1, completion: "x")
        else {
            Issue.record("a recorded result was not answered at once")
            return
        }
        #expect(value == Self.message("done", atMs: 0).value)
        _ = state.addWaiter(for: "s1", caller: .unrestricted, timeoutMs: 1000, nowMs: 1, completion: "a")
        _ = state.addWaiter(for: "s2", caller: .unrestricted, timeoutMs: 1000, nowMs: 1, completion: "b")
        let ended = state.stopWaiting()
        #expect(ended.sorted() == ["a", "b"])
        #expect(state.statistics.waiters == 0)
        guard case .stopped = state.addWaiter(
            for: "s3", caller: .unrestricted, timeoutMs: 1000, nowMs: 2, completion: "c")
        else {
            Issue.record("a wait after stopWaiting was registered")
            return
        }
        let endedAgain = state.stopWaiting()
        #expect(endedAgain.isEmpty)
    }

    /// What `record` answers for a second result of the same id, by the first's outcome and the second's age.
    struct Replacement: CustomTestStringConvertible, Sendable {
        let first: Outcome
        let secondAtMs: Int64
        let expected: ResultIndex.RecordOutcome
        var testDescription: String { "\(first) then a result at \(secondAtMs) ms → \(expected)" }
    }

    @Test(
        "a final result is kept, a failed one is replaced, an expired one is replaced as new",
        arguments: [
            Replacement(first: .verified, secondAtMs: 1_000, expected: .duplicate(submissionId: "s")),
            Replacement(first: .rejected, secondAtMs: 1_000, expected: .duplicate(submissionId: "s")),
            Replacement(first: .failed, secondAtMs: 1_000, expected: .replaced(submissionId: "s", waitersCompleted: 0)),
            Replacement(
                first: .verified, secondAtMs: 61_000, expected: .indexed(submissionId: "s", waitersCompleted: 0)),
        ])
    func replacement(_ row: Replacement) {
        var state = State(limits: Self.limits)
        // The first result is older than the second's time by more than the age limit only in the last row.
        _ = state.record(Self.message("s", row.first, atMs: 0), nowMs: 0)
        let (outcome, _) = state.record(Self.message("s", .verified, atMs: row.secondAtMs), nowMs: row.secondAtMs)
        #expect(outcome == row.expected)
    }
}
