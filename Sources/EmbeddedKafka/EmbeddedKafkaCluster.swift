import CRdKafka
import RDKafka
import ServiceSupport
import Synchronization

/// librdkafka's mock cluster, in this process: real Kafka protocol on 127.0.0.1 ephemeral ports, data in memory.
///
/// Other processes can connect to `bootstrapServers`. Supports produce (idempotent too), consumer groups with
/// rebalancing and committed offsets; not transactions or the Admin API (create topics here instead; topics a client
/// asks for that do not exist are auto-created with 4 partitions). Broker ids are 1...brokers.
///
/// A test and development tool (the `embedded-kafka` executable, `KafkaTests`), kept out of the production `Kafka`
/// target: its own target over librdkafka's mock API, using `RDKafka` only for configuration, logging and errors.
///
/// Invariant: the mock cluster is owned by a private `rd_kafka_t` and is destroyed before it (`shutdown`, or deinit).
public final class EmbeddedKafkaCluster: Sendable {
    private let state: Locked<Handles?>
    /// The bootstrap list (`127.0.0.1:port,...`), fixed for the cluster's life.
    public let bootstrapServers: String
    public let brokerCount: Int

    private struct Handles: @unchecked Sendable {
        let client: OpaquePointer
        let cluster: OpaquePointer
        let context: Unmanaged<RDKafkaCallbackContext>
    }

    /// Starts a cluster of `brokers` brokers with `topics` created.
    /// - Parameter logger: receives the mock cluster's log lines (warnings and errors by default).
    /// - Throws: `KafkaError` when the cluster cannot start or a topic cannot be created.
    public init(
        brokers: Int = 1, topics: [(name: String, partitions: Int)] = [],
        logger: Logger = Logger(label: "embedded-kafka", threshold: .warning)
    ) throws(KafkaError) {
        guard brokers >= 1 else {
            throw KafkaError(
                code: KafkaError.invalidArgument, message: "a cluster needs at least 1 broker, not \(brokers)")
        }
        let context = RDKafkaCallbackContext(logger: logger)
        let retained = Unmanaged.passRetained(context)
        let conf: OpaquePointer
        do {
            conf = try RDKafkaClient.makeConf(["log_level": "4"])
        } catch {
            retained.release()
            throw error
        }
        rd_kafka_conf_set_log_cb(conf, RDKafkaCallbacks.log)
        rd_kafka_conf_set_opaque(conf, retained.toOpaque())
        var errorText = [CChar](repeating: 0, count: 512)
        guard let client = rd_kafka_new(RD_KAFKA_PRODUCER, conf, &errorText, errorText.count) else {
            rd_kafka_conf_destroy(conf)
            retained.release()
            throw KafkaError(
                code: KafkaError.invalidArgument,
                message: "cannot create the mock cluster's client: \(errorText.nulTerminatedString)")
        }
        guard let cluster = rd_kafka_mock_cluster_new(client, Int32(brokers)) else {
            rd_kafka_destroy(client)
            retained.release()
            throw KafkaError(code: KafkaError.invalidState, message: "cannot start a mock cluster of \(brokers) brokers")
        }
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        self.brokerCount = brokers
        self.state = Locked(Handles(client: client, cluster: cluster, context: retained))
        for topic in topics {
            try createTopic(topic.name, partitions: topic.partitions)
        }
    }

    deinit {
        shutdown()
    }

    /// Stops the cluster (connections are closed) and frees it. Idempotent.
    public func shutdown() {
        guard let handles = state.withLock({ $0.take() }) else { return }
        rd_kafka_mock_cluster_destroy(handles.cluster)
        rd_kafka_destroy(handles.client)
        handles.context.release()
    }

    /// Creates `name` with `partitions` partitions.
    /// - Throws: `KafkaError` when the cluster refuses (for example a replication factor above the broker count).
    public func createTopic(_ name: String, partitions: Int, replicationFactor: Int = 1) throws(KafkaError) {
        guard partitions >= 1, replicationFactor >= 1, replicationFactor <= brokerCount else {
            throw KafkaError(
                code: KafkaError.invalidArgument,
                message: "topic \(name): \(partitions) partitions, replication factor \(replicationFactor) "
                    + "with \(brokerCount) brokers is not possible")
        }
        let code = withCluster { rd_kafka_mock_topic_create($0, name, Int32(partitions), Int32(replicationFactor)) }
        if let code, code != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError.from(code: code.rawValue, context: "cannot create topic \(name)")
        }
    }

    /// Takes broker `brokerId` down: its connections are closed and new ones refused until `setBrokerUp`.
    public func setBrokerDown(_ brokerId: Int32) {
        _ = withCluster { rd_kafka_mock_broker_set_down($0, brokerId) }
    }

    public func setBrokerUp(_ brokerId: Int32) {
        _ = withCluster { rd_kafka_mock_broker_set_up($0, brokerId) }
    }

    /// Delays every response of broker `brokerId` by `milliseconds`.
    public func setRoundTripTime(_ brokerId: Int32, milliseconds: Int) {
        _ = withCluster { rd_kafka_mock_broker_set_rtt($0, brokerId, Int32(clamping: milliseconds)) }
    }

    /// The next requests with Kafka API key `apiKey` (0 Produce, 1 Fetch, 3 Metadata, 8 OffsetCommit, 11 JoinGroup,
    /// ...) are answered with `errors` in order (`rd_kafka_resp_err_t` codes), one per request, on any broker.
    public func pushRequestErrors(apiKey: Int16, errors: [Int32]) {
        var codes = errors.map { rd_kafka_resp_err_t(rawValue: $0) }
        _ = withCluster { cluster in
            codes.withUnsafeMutableBufferPointer { buffer in
                rd_kafka_mock_push_request_errors_array(cluster, apiKey, buffer.count, buffer.baseAddress)
            }
        }
    }

    /// Forgets errors pushed for `apiKey` and not yet returned.
    public func clearRequestErrors(apiKey: Int16) {
        _ = withCluster { rd_kafka_mock_clear_request_errors($0, apiKey) }
    }

    /// Runs `body` with the cluster while it exists (the lock keeps `shutdown` from freeing it meanwhile).
    private func withCluster<R>(_ body: (OpaquePointer) -> R) -> R? {
        state.withLock { handles in
            guard let handles else { return nil }
            return body(handles.cluster)
        }
    }
}
