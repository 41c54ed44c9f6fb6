import Ingest
import Kafka
import ServiceSupport
import Testing
import TestSupport

/// `KafkaResultFeed` readiness without a reachable cluster (loopback only: the broker address refuses connections).
@Suite("Kafka result feed readiness")
struct KafkaResultFeedTests {
    @Test("not caught up before it started; caught up at the readiness bound when no partition can be followed")
    func readinessBound() async throws {
        let feed = try KafkaResultFeed(
            configuration: KafkaConfiguration(["bootstrap.servers": "127.0.0.1:1"]),
            topic: ServiceTopic.results.defaultName, replay: .seconds(300), readBackLimit: 1000,
            readinessBound: .milliseconds(300),
            logger: Logger(label: "feed-test", threshold: .error, sink: DiscardingSink()))
        defer { feed.close(timeout: .seconds(5)) }
        #expect(!feed.isCaughtUp)
        let started = ContinuousClock.now
        feed.start { _ in }
        #expect(await eventually(timeout: .seconds(5), interval: .milliseconds(20)) { feed.isCaughtUp })
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        // Once caught up, it stays so (watched for about a second).
        #expect(feed.isCaughtUp)
        let watchUntil = ContinuousClock.now + .seconds(1)
        var fellBehind = false
        while ContinuousClock.now < watchUntil, !fellBehind {
            fellBehind = !feed.isCaughtUp
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(!fellBehind)
        #expect(feed.isCaughtUp)
    }

    @Test("an invalid librdkafka property is refused when the feed is made")
    func invalidConfiguration() {
        #expect(throws: KafkaError.self) {
            try KafkaResultFeed(
                configuration: KafkaConfiguration(["bootstrap.servers": "127.0.0.1:1", "no.such.property": "1"]),
                topic: ServiceTopic.results.defaultName, replay: .everything, readBackLimit: 1000,
                logger: Logger(label: "feed-test", threshold: .error, sink: DiscardingSink()))
        }
    }
}
