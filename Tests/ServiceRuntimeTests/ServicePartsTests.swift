import ServiceRuntime
import ServiceSupport
import Testing

/// The runtime owns shutdown: what a service makes is registered as it is made and closed last made first, on a
/// failed start (exactly what was made) and at the end of a drain (after the drain's own work), each part within its
/// own bound.
@Suite struct ServicePartsTests {
    /// What happened, in order: "close <part> <bound in ms>" and "drain work".
    final class Journal: Sendable {
        private let entries = Locked<[String]>([])
        func record(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// The verifier's parts, in the order `VerifierService.init` makes them, with their bounds.
    static let verifierParts: [(String, Duration)] = [
        ("endpoint", .zero), ("producer", .seconds(2)), ("producer flush", .seconds(5)), ("catalog watch", .zero),
        ("OCSP client", .zero), ("App Store client", .zero), ("consumer", .seconds(10)), ("ticker", .zero),
    ]

    /// A service made the way the real ones are: each part registered right after it is made; `failMakingAt` throws
    /// before the part of that index is made (as a client that cannot be created), `failStarting` from `start()`.
    final class FakeService: ManagedService {
        let parts: ServiceParts
        let journal: Journal
        let failStarting: Bool
        private let drainOnce = DrainOnce()

        init(
            parts: ServiceParts, journal: Journal, failMakingAt: Int?, failStarting: Bool
        ) throws(ServiceStartupError) {
            self.parts = parts
            self.journal = journal
            self.failStarting = failStarting
            for (index, (name, bound)) in ServicePartsTests.verifierParts.enumerated() {
                if index == failMakingAt { throw ServiceStartupError("cannot create the \(name)") }
                parts.add(name, bound: bound) { given in
                    journal.record("close \(name) \(given.clampedMilliseconds)")
                    return true
                }
            }
        }

        func start() throws(ServiceStartupError) {
            if failStarting { throw ServiceStartupError("cannot listen") }
        }

        @discardableResult
        func drain(within bound: Duration) -> Bool {
            guard drainOnce.claim() else { return true }
            journal.record("drain work \(bound.clampedMilliseconds)")
            return parts.closeAll().isComplete
        }

        var drainBound: Duration { .seconds(20) }
        var health: Health { Health() }
    }

    static func closes(_ parts: ArraySlice<(String, Duration)>) -> [String] {
        parts.reversed().map { "close \($0.0) \($0.1.clampedMilliseconds)" }
    }

    /// (the step that fails: the index of the part that cannot be made, or nil = `start()`; what was made).
    static let failedStarts: [(Int?, Int)] = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (nil, 8)]

    @Test(arguments: failedStarts)
    func aFailedStartClosesExactlyWhatWasMadeLastFirst(failingAt: Int?, made: Int) {
        let journal = Journal()
        let parts = ServiceParts()
        #expect(throws: ServiceStartupError.self) {
            try ServiceMain.start(context: ServiceContext(logger: Logger(label: "test"), metrics: MetricsRegistry(), parts: parts)) {
                context throws(ServiceStartupError) in
                try FakeService(
                    parts: context.parts, journal: journal, failMakingAt: failingAt, failStarting: failingAt == nil)
            }
        }
        #expect(journal.all == Self.closes(Self.verifierParts.prefix(made)))
        #expect(parts.registered.isEmpty)
    }

    @Test func aDrainDoesItsOwnWorkThenClosesEveryPartLastFirstOnce() throws {
        let journal = Journal()
        let context = ServiceContext(logger: Logger(label: "test"), metrics: MetricsRegistry())
        let service = try ServiceMain.start(context: context) { context throws(ServiceStartupError) in
            try FakeService(parts: context.parts, journal: journal, failMakingAt: nil, failStarting: false)
        }
        #expect(journal.all.isEmpty)
        #expect(service.parts.bound == .seconds(17))
        #expect(service.drain(within: service.drainBound))
        #expect(journal.all == ["drain work 20000"] + Self.closes(Self.verifierParts[...]))
        #expect(service.drain(within: service.drainBound))
        #expect(journal.all.count == 1 + Self.verifierParts.count)
    }

    @Test func eachPartGetsItsOwnBoundAndAPartThatGaveUpIsNamed() {
        let parts = ServiceParts()
        let given = Locked<[String: Duration]>([:])
        parts.add("consumer", bound: .seconds(10)) { bound in
            given.withLock { $0["consumer"] = bound }
            return true
        }
        parts.add("flush", bound: .milliseconds(1)) { bound in
            given.withLock { $0["flush"] = bound }
            return false
        }
        parts.add("ticker") { given.withLock { $0["ticker"] = .zero } }
        #expect(parts.bound == .seconds(10) + .milliseconds(1))
        #expect(parts.registered.map(\.name) == ["consumer", "flush", "ticker"])
        let closing = parts.closeAll()
        #expect(closing.closed == ["ticker", "flush", "consumer"])
        #expect(closing.gaveUp == ["flush"])
        #expect(!closing.isComplete)
        #expect(given.withLock { $0 } == ["consumer": .seconds(10), "flush": .milliseconds(1), "ticker": .zero])
        #expect(parts.bound == .zero)
        #expect(parts.closeAll().closed.isEmpty)
    }

    @Test func anEndpointMadeFirstAnswersStartingUntilItsHealthIsAttached() {
        let health = DeferredHealth()
        #expect(health.current == Health(readiness: "starting"))
        health.attach { .unhealthy("fatal Kafka error: x") }
        #expect(health.current == .unhealthy("fatal Kafka error: x"))
    }
}
