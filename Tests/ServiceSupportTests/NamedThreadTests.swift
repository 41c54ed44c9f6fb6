import Foundation
import ServiceSupport
import Testing

@Suite struct NamedThreadTests {
    /// The name the operating system shows for the calling thread (`/proc/thread-self/comm`, without its newline).
    static func operatingSystemName() -> String? {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .newlines)
    }

    static func nameSeen(inThreadNamed name: String) -> String? {
        let seen = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.startNamed(name) {
            seen.withLock { $0 = operatingSystemName() }
            done.signal()
        }
        done.wait()
        return seen.withLock { $0 }
    }

    @Test func theOperatingSystemSeesTheThreadsName() {
        #expect(Self.nameSeen(inThreadNamed: "ledger-worker") == "ledger-worker")
    }

    @Test func longNamesKeepTheirFirstFifteenBytes() {
        #expect(Self.nameSeen(inThreadNamed: "kafka-producer-poll") == "kafka-producer-")
    }
}
