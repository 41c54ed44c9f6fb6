internal import CRdKafka
import RDKafka
import ServiceSupport

/// librdkafka's mock cluster and the client that owns it: every `rd_kafka_mock_*` call, here in the test-support
/// target rather than in RDKafka so that no service links them (`EmbeddedKafkaCluster` speaks Swift over it).
///
/// Invariants: the cluster is destroyed before its client, and the callback context stays retained until the client
/// is destroyed (librdkafka may log until then); `destroy` does both once, and `deinit` runs it when no one did. The
/// owner serializes calls (`EmbeddedKafkaCluster` holds it under a lock), so no call runs during `destroy`.
final class RDKafkaMockCluster: @unchecked Sendable {
    private let client: OpaquePointer
    private let cluster: OpaquePointer
    private let context: Unmanaged<RDKafkaCallbackContext>
    private var destroyed = false
    /// The bootstrap list (`127.0.0.1:port,...`).
    let bootstrapServers: String

    /// Starts `brokers` mock brokers on 127.0.0.1 ephemeral ports; librdkafka's log lines go to `logger`.
    init(brokers: Int, logger: Logger) throws(KafkaError) {
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
                code: KafkaErrorCode.invalidArgument,
                message: "cannot create the mock cluster's client: \(errorText.nulTerminatedString)")
        }
        guard let cluster = rd_kafka_mock_cluster_new(client, Int32(brokers)) else {
            rd_kafka_destroy(client)
            retained.release()
            throw KafkaError(code: KafkaErrorCode.invalidState, message: "cannot start a mock cluster of \(brokers) brokers")
        }
        self.client = client
        self.cluster = cluster
        self.context = retained
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
    }

    deinit {
        destroy()
    }

    /// Closes the brokers' connections and frees the cluster, then its client. Idempotent.
    func destroy() {
        guard !destroyed else { return }
        destroyed = true
        rd_kafka_mock_cluster_destroy(cluster)
        rd_kafka_destroy(client)
        context.release()
    }

    /// Creates `name`; librdkafka's error code when the cluster refuses.
    func createTopic(_ name: String, partitions: Int, replicationFactor: Int) throws(KafkaError) {
        let code = rd_kafka_mock_topic_create(cluster, name, Int32(partitions), Int32(replicationFactor))
        if code != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError.from(code: KafkaErrorCode(rawValue: code.rawValue), context: "cannot create topic \(name)")
        }
    }

    func setBrokerDown(_ brokerId: Int32) {
        _ = rd_kafka_mock_broker_set_down(cluster, brokerId)
    }

    func setBrokerUp(_ brokerId: Int32) {
        _ = rd_kafka_mock_broker_set_up(cluster, brokerId)
    }

    func setRoundTripTime(_ brokerId: Int32, milliseconds: Int) {
        _ = rd_kafka_mock_broker_set_rtt(cluster, brokerId, Int32(clamping: milliseconds))
    }

    /// The next requests with Kafka API key `apiKey` are answered with `errors` (librdkafka codes), in order.
    func pushRequestErrors(apiKey: Int16, errors: [KafkaErrorCode]) {
        var codes = errors.map { rd_kafka_resp_err_t(rawValue: $0.rawValue) }
        codes.withUnsafeMutableBufferPointer { buffer in
            rd_kafka_mock_push_request_errors_array(cluster, apiKey, buffer.count, buffer.baseAddress)
        }
    }

    func clearRequestErrors(apiKey: Int16) {
        rd_kafka_mock_clear_request_errors(cluster, apiKey)
    }
}
