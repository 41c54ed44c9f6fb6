import CRdKafka
import ServiceSupport

/// Creates librdkafka clients from a `KafkaConfiguration`, with this module's callbacks installed.
enum RDKafkaClient {
    enum Kind {
        case producer, consumer

        var cType: rd_kafka_type_t { self == .producer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER }
    }

    /// Validates every property (`rd_kafka_conf_set`), installs the callbacks and creates the client.
    /// - Throws: `KafkaError` with code `invalidArgument` naming the property (and its environment variable) that
    ///   librdkafka refused, or the reason `rd_kafka_new` failed.
    static func make(
        _ kind: Kind, configuration: KafkaConfiguration, context: RDKafkaCallbackContext,
        rebalanceCallback: Bool = false
    ) throws(KafkaError) -> RDKafkaHandle {
        let conf = try makeConf(configuration)
        rd_kafka_conf_set_log_cb(conf, RDKafkaCallbacks.log)
        rd_kafka_conf_set_error_cb(conf, RDKafkaCallbacks.error)
        rd_kafka_conf_set_stats_cb(conf, RDKafkaCallbacks.statistics)
        if kind == .producer {
            rd_kafka_conf_set_dr_msg_cb(conf, RDKafkaCallbacks.delivery)
        }
        if rebalanceCallback {
            rd_kafka_conf_set_rebalance_cb(conf, RDKafkaCallbacks.rebalance)
        }
        let retained = Unmanaged.passRetained(context)
        rd_kafka_conf_set_opaque(conf, retained.toOpaque())

        var errorText = [CChar](repeating: 0, count: 512)
        guard let client = rd_kafka_new(kind.cType, conf, &errorText, errorText.count) else {
            // On failure the configuration is still ours.
            rd_kafka_conf_destroy(conf)
            retained.release()
            throw KafkaError(
                code: KafkaError.invalidArgument,
                message: "cannot create Kafka \(kind) client: \(errorText.nulTerminatedString)")
        }
        return RDKafkaHandle(pointer: client, context: retained)
    }

    /// An `rd_kafka_conf_t` with every property set, or the first refusal as an error (the conf is then destroyed).
    static func makeConf(_ configuration: KafkaConfiguration) throws(KafkaError) -> OpaquePointer {
        let conf = rd_kafka_conf_new()!
        var errorText = [CChar](repeating: 0, count: 512)
        // Sorted so that the reported property is deterministic when several are wrong.
        for (name, value) in configuration.properties.sorted(by: { $0.key < $1.key }) {
            let result = rd_kafka_conf_set(conf, name, value, &errorText, errorText.count)
            guard result == RD_KAFKA_CONF_OK else {
                rd_kafka_conf_destroy(conf)
                let sensitive = KafkaConfiguration.isSensitive(name)
                let reason =
                    sensitive
                    ? (result == RD_KAFKA_CONF_UNKNOWN ? "no such configuration property" : "invalid value (not shown)")
                    : errorText.nulTerminatedString
                let shownValue = sensitive ? "" : " = \"\(value)\""
                throw KafkaError(
                    code: KafkaError.invalidArgument,
                    message: "invalid Kafka property \(configuration.origin(of: name))\(shownValue): \(reason)")
            }
        }
        return conf
    }
}

/// Conversions between Swift values and `rd_kafka_topic_partition_list_t`.
enum RDKafkaTopicPartitionList {
    /// A new list (caller destroys it with `rd_kafka_topic_partition_list_destroy`); `offsets` per entry when given.
    static func make(_ partitions: [TopicPartition], offsets: [Int64]? = nil)
        -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t>
    {
        let list = rd_kafka_topic_partition_list_new(Int32(max(partitions.count, 1)))!
        for (index, partition) in partitions.enumerated() {
            let entry = rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)!
            if let offsets { entry.pointee.offset = offsets[index] }
        }
        return list
    }

    static func withList<R, E: Error>(
        _ partitions: [TopicPartition], offsets: [Int64]? = nil,
        _ body: (UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) throws(E) -> R
    ) throws(E) -> R {
        let list = make(partitions, offsets: offsets)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        return try body(list)
    }

    /// Each entry as (partition, offset, per-entry error code).
    static func entries(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>?)
        -> [(partition: TopicPartition, offset: Int64, error: rd_kafka_resp_err_t)]
    {
        guard let list, let elements = list.pointee.elems else { return [] }
        return (0..<Int(list.pointee.cnt)).map { index in
            let element = elements[index]
            return (
                TopicPartition(topic: String(cString: element.topic), partition: element.partition),
                element.offset, element.err
            )
        }
    }

    static func partitions(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>?) -> [TopicPartition] {
        entries(list).map(\.partition)
    }
}

/// Copies a consumed `rd_kafka_message_t` into a `KafkaMessage`.
enum RDKafkaMessageReader {
    static func read(_ message: UnsafePointer<rd_kafka_message_t>) -> KafkaMessage {
        let m = message.pointee
        let topic = m.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
        let key: [UInt8]? = m.key.map { Array(UnsafeRawBufferPointer(start: $0, count: m.key_len)) }
        let value: [UInt8] = m.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: m.len)) } ?? []
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let timestamp = rd_kafka_message_timestamp(message, &timestampType)
        return KafkaMessage(
            topic: topic, partition: m.partition, offset: m.offset, key: key, value: value,
            headers: headers(of: message),
            timestampMs: timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : timestamp)
    }

    private static func headers(of message: UnsafePointer<rd_kafka_message_t>) -> [KafkaHeader] {
        var list: OpaquePointer?
        // rd_kafka_message_headers takes a non-const message but only reads (and caches) the parsed headers.
        guard rd_kafka_message_headers(UnsafeMutablePointer(mutating: message), &list) == RD_KAFKA_RESP_ERR_NO_ERROR,
            let list
        else { return [] }
        var headers: [KafkaHeader] = []
        headers.reserveCapacity(rd_kafka_header_cnt(list))
        var index = 0
        var name: UnsafePointer<CChar>?
        var value: UnsafeRawPointer?
        var size = 0
        while rd_kafka_header_get_all(list, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
            let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
            headers.append(KafkaHeader(name: name.map { String(cString: $0) } ?? "", value: bytes))
            index += 1
        }
        return headers
    }
}

extension Duration {
    /// Whole milliseconds, clamped to what librdkafka's `int` timeouts accept.
    var clampedMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, milliseconds))
    }
}

extension [CChar] {
    /// The C string held in this buffer (up to the first NUL).
    var nulTerminatedString: String {
        let end = firstIndex(of: 0) ?? endIndex
        return String(decoding: self[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
