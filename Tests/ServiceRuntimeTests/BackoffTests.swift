import ServiceSupport
import Testing

@Suite struct BackoffTests {
    @Test func doublesUpToTheMaximumAndStartsOverAfterReset() {
        var backoff = Backoff(initial: .milliseconds(100), maximum: .milliseconds(500))
        let waits = (0..<5).map { _ in backoff.next() }
        #expect(waits == [100, 200, 400, 500, 500].map { Duration.milliseconds($0) })
        backoff.reset()
        #expect(backoff.next() == .milliseconds(100))
    }

    @Test func theDefaultsAreTheServicesRetryPace() {
        var backoff = Backoff()
        #expect(backoff.next() == .milliseconds(100))
        #expect(backoff.maximum == .seconds(5))
    }
}
