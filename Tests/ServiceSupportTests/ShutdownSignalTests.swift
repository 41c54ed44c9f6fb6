import Foundation
import ServiceSupport
import Testing

@Suite struct ShutdownSignalTests {
    /// The signal is sent the moment `init` returns (libdispatch registers signal sources asynchronously: before the
    /// fix an early signal was discarded). It is seen on the signal queue (which reads and sets the
    /// `@unchecked Sendable` latch), the handler runs on its own queue, and this test reads what it recorded from a
    /// third thread: under ThreadSanitizer (`make test-sanitize`) that checks the latch's and the handler's
    /// happens-before. Only one signal is sent: a second one exits the process by design.
    @Test func aSignalSentAsSoonAsInitReturnsCallsTheHandlerOnceWithTheSignalsName() async throws {
        let calls = Locked<[String]>([])
        var shutdown: ShutdownSignal? = ShutdownSignal { name in calls.withLock { $0.append(name) } }
        defer {
            withExtendedLifetime(shutdown) {}
            shutdown = nil
            // The process's other tests (and an operator's Ctrl-C) get the default disposition back.
            signal(SIGTERM, SIG_DFL)
            signal(SIGINT, SIG_DFL)
        }
        // Under the default disposition the signal would end the test process: never send it then.
        try #require(!Self.hasDefaultAction(SIGTERM), "ShutdownSignal left SIGTERM's default action (exit) in place")
        kill(getpid(), SIGTERM)
        let deadline = ContinuousClock.now + .seconds(20)
        while calls.withLock({ $0.isEmpty }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        // A second call would show up now.
        try await Task.sleep(for: .milliseconds(200))
        #expect(calls.withLock { $0 } == ["SIGTERM"])
    }

    private static func hasDefaultAction(_ number: Int32) -> Bool {
        var action = sigaction()
        guard sigaction(number, nil, &action) == 0 else { return true }
        return action.__sigaction_handler.sa_handler == nil
    }
}
