import RDKafka
import ServiceSupport
import Synchronization

/// librdkafka's mock cluster, in this process: real Kafka protocol on 127.0.0.1 ephemeral ports, data in memory.
///
/// Other processes can connect to `bootstrapServers`. Supports produce (idempotent too), consumer groups with
/// rebalancing and committed offsets; not transactions or the Admin API (create topics here instead; topics a client
/// asks for that do not exist are auto-created with 4 partitions). Broker ids are 1...brokers.
///
/// A test and development tool (the `embedded-kafka` executable, `KafkaTests`), kept out of the production targets:
/// the mock cluster's C calls are `RDKafkaMockCluster`'s, in this target, over RDKafka's configuration and callbacks.
///
/// Invariant: calls and `close` are serialized by `state`'s lock, so no call reaches a destroyed cluster.
public final class EmbeddedKafkaCluster: Sendable {
    private let state: Locked<RDKafkaMockCluster?>
    /// The bootstrap list (`127.0.0.1:port,...`), fixed for the cluster's life.
    public let bootstrapServers: String
    public let brokerCount: Int

    /// Starts a cluster of `brokers` brokers with `topics` created.
    /// - Parameter logger: receives the mock cluster's log lines (warnings and errors by default).
    /// - Throws: `KafkaError` when the cluster cannot start or a topic cannot be created.
    public init(
        brokers: Int = 1, topics: [(name: String, partitions: Int)] = [],
        logger: Logger = Logger(label: "embedded-kafka", threshold: .warning)
    ) throws(KafkaError) {
        guard brokers >= 1 else {
            throw KafkaError(
                code: KafkaErrorCode.invalidArgument, message: "a cluster needs at least 1 broker, not \(brokers)")
        }
        let cluster = try RDKafkaMockCluster(brokers: brokers, logger: logger)
        self.bootstrapServers = cluster.bootstrapServers
        self.brokerCount = brokers
        self.state = Locked(cluster)
        for topic in topics {
            try createTopic(topic.name, partitions: topic.partitions)
        }
    }

    deinit {
        close()
    }

    /// Stops the cluster (connections are closed) and frees it. Idempotent.
    public func close() {
        state.withLock { cluster in
            cluster?.destroy()
            cluster = nil
        }
    }

    /// Creates `name` with `partitions` partitions.
    /// - Throws: `KafkaError` when the cluster refuses (for example a replication factor above the broker count).
    public func createTopic(_ name: String, partitions: Int, replicationFactor: Int = 1) throws(KafkaError) {
        guard partitions >= 1, replicationFactor >= 1, replicationFactor <= brokerCount else {
            throw KafkaError(
                code: KafkaErrorCode.invalidArgument,
                message: "topic \(name): \(partitions) partitions, replication factor \(replicationFactor) "
                    + "with \(brokerCount) brokers is not possible")
        }
        try state.withLock { (cluster: inout RDKafkaMockCluster?) throws(KafkaError) in
            try cluster?.createTopic(name, partitions: partitions, replicationFactor: replicationFactor)
        }
    }

    /// Takes broker `brokerId` down: its connections are closed and new ones refused until `setBrokerUp`.
    public func setBrokerDown(_ brokerId: Int32) {
        state.withLock { $0?.setBrokerDown(brokerId) }
    }

    public func setBrokerUp(_ brokerId: Int32) {
        state.withLock { $0?.setBrokerUp(brokerId) }
    }

    /// Delays every response of broker `brokerId` by `milliseconds`.
    public func setRoundTripTime(_ brokerId: Int32, milliseconds: Int) {
        state.withLock { $0?.setRoundTripTime(brokerId, milliseconds: milliseconds) }
    }

    /// The next requests with Kafka API key `apiKey` (0 Produce, 1 Fetch, 3 Metadata, 8 OffsetCommit, 11 JoinGroup,
    /// ...) are answered with `errors` in order, one per request, on any broker.
    public func pushRequestErrors(apiKey: Int16, errors: [KafkaErrorCode]) {
        state.withLock { $0?.pushRequestErrors(apiKey: apiKey, errors: errors) }
    }

    /// Forgets errors pushed for `apiKey` and not yet returned.
    public func clearRequestErrors(apiKey: Int16) {
        state.withLock { $0?.clearRequestErrors(apiKey: apiKey) }
    }
}
