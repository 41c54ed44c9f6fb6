import Foundation
import ServiceSupport
import TestSupport
import Testing

@Suite("ShutdownSignal")
struct ShutdownSignalTests {
    /// A SIGTERM sent the instant `init` returns reaches the handler. (With a Dispatch signal source the signal was
    /// ignored until the source's asynchronous registration: a service stopped right after it started missed it and
    /// was later killed without draining.) Only one signal is sent: a second one exits the process by design. If the
    /// handler were not installed, the default disposition would end the whole test process: a loud failure.
    @Test("a SIGTERM right after init calls the handler once, with the signal's name")
    func signalRightAfterInitIsDelivered() async {
        let calls = Locked<[String]>([])
        var shutdown: ShutdownSignal? = ShutdownSignal { name in calls.withLock { $0.append(name) } }
        kill(getpid(), SIGTERM)
        #expect(await eventually { !calls.withLock { $0.isEmpty } })
        #expect(calls.withLock { $0 } == ["SIGTERM"])
        withExtendedLifetime(shutdown) {}
        shutdown = nil  // the default dispositions come back for the rest of the test process
    }
}
