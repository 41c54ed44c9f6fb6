import ServiceSupport
import Testing

@Suite struct BackoffTests {
    @Test func doublesUpToTheMaximumAndStartsOverAfterReset() {
        var backoff = Backoff(initial: .milliseconds(100), maximum: .milliseconds(500))
        let waits = (0..<5).map { _ in backoff.next() }
        #expect(waits == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(500), .milliseconds(500)])
        backoff.reset()
        #expect(backoff.next() == .milliseconds(100))
    }

    @Test func theDefaultsAreTheServicesRetryPace() {
        var backoff = Backoff()
        #expect(backoff.next() == .milliseconds(100))
        #expect(backoff.maximum == .seconds(5))
    }
}
