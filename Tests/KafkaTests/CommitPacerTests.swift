import Kafka
import Testing

@Suite("CommitPacer")
struct CommitPacerTests {
    static let millisecond: UInt64 = 1_000_000

    /// What `request` and `takeDue` answered, in order, for requests (`r`) and due checks (`d`) at times in ms.
    private static func run(_ pacer: inout CommitPacer, _ steps: [(Character, UInt64)]) -> [Bool] {
        steps.map { kind, ms in
            kind == "r" ? pacer.request(nowNs: ms * millisecond) : pacer.takeDue(nowNs: ms * millisecond)
        }
    }

    @Test("the first request commits at once; requests within the interval are merged into one later commit")
    func leadingAndTrailingEdge() {
        var pacer = CommitPacer(minimumInterval: .milliseconds(100))
        #expect(pacer.minimumIntervalNs == 100 * Self.millisecond)
        #expect(Self.run(&pacer, [("r", 1_000)]) == [true])
        #expect(!pacer.isPending)
        #expect(pacer.nanosecondsUntilDue(nowNs: 1_000 * Self.millisecond) == nil)
        // Three stores within the interval: no commit now, one pending.
        #expect(Self.run(&pacer, [("r", 1_010), ("r", 1_050), ("r", 1_099)]) == [false, false, false])
        #expect(pacer.isPending)
        #expect(pacer.nanosecondsUntilDue(nowNs: 1_060 * Self.millisecond) == 40 * Self.millisecond)
        // Not yet due; then exactly one commit covers them all.
        #expect(Self.run(&pacer, [("d", 1_099), ("d", 1_100), ("d", 1_200)]) == [false, true, false])
        #expect(pacer.lastCommitNs == 1_100 * Self.millisecond)
    }

    @Test("a request after a quiet interval commits at once; nothing requested means nothing due")
    func quietThenRequest() {
        var pacer = CommitPacer(minimumInterval: .milliseconds(100))
        #expect(Self.run(&pacer, [("d", 5), ("r", 10), ("r", 500), ("r", 501)]) == [false, true, true, false])
        #expect(pacer.nanosecondsUntilDue(nowNs: 700 * Self.millisecond) == 0)
        #expect(Self.run(&pacer, [("d", 700)]) == [true])
    }

    @Test("two commits the pacer asks for are never closer than the interval, whatever the request pattern")
    func neverCloserThanTheInterval() {
        var pacer = CommitPacer(minimumInterval: .milliseconds(50))
        var commits: [UInt64] = []
        var now: UInt64 = 0
        var generator = SplitMix(seed: 0x5EED_C0FF)  // fixed: the same request pattern on every run
        for _ in 0..<10_000 {
            now += UInt64.random(in: 0...(20 * Self.millisecond), using: &generator)
            let commit = Bool.random(using: &generator) ? pacer.request(nowNs: now) : pacer.takeDue(nowNs: now)
            if commit { commits.append(now) }
        }
        #expect(commits.count > 10)
        #expect(zip(commits, commits.dropFirst()).allSatisfy { $1 - $0 >= 50 * Self.millisecond })
        // A pending request is never lost: once the interval passed, it is due.
        if pacer.isPending {
            let due = pacer.takeDue(nowNs: now + 50 * Self.millisecond)
            #expect(due)
        }
    }

    @Test("a zero interval commits on every request")
    func zeroInterval() {
        var pacer = CommitPacer(minimumInterval: .zero)
        #expect(Self.run(&pacer, [("r", 1), ("r", 1), ("d", 1)]) == [true, true, false])
    }
}
