internal import CRdKafka
import ServiceSupport

/// The C callbacks given to librdkafka. They are static members of a nonisolated type (never closures formed in
/// actor-isolated code: librdkafka calls them on its own threads) and find their Swift target through the opaque.
package enum RDKafkaCallbacks {
    /// librdkafka's log lines -> the client's JSON logger (syslog levels: 0-2 error, 3-4 warning, 5-6 info, 7 debug).
    /// librdkafka logs transient connection failures at 3 and reports errors again through `error`, where fatal
    /// ones are logged as errors: logging level 3 as warnings keeps one outage from reading as many errors.
    package static let log: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Void = {
        client, level, facility, text in
        guard let client, let context = RDKafkaCallbackContext.from(rd_kafka_opaque(client)) else { return }
        let logLevel: LogLevel =
            switch level {
            case ...2: .error
            case 3, 4: .warning
            case 5, 6: .info
            default: .debug
            }
        guard context.logger.isEnabled(logLevel) else { return }
        context.logger.log(
            logLevel, text.map { String(cString: $0) } ?? "",
            [
                "facility": .string(facility.map { String(cString: $0) } ?? ""),
                "client": .string(String(cString: rd_kafka_name(client))),
            ])
    }

    static let error: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void =
        { client, code, reason, opaque in
            guard let context = RDKafkaCallbackContext.from(opaque) else { return }
            var effectiveCode = KafkaErrorCode(rawValue: code)
            var isFatal = effectiveCode == .fatal
            var text = reason.map { String(cString: $0) } ?? KafkaError.describe(code: effectiveCode)
            if isFatal, let client {
                // The underlying error is the one worth reporting.
                var buffer = [CChar](repeating: 0, count: 512)
                let underlying = rd_kafka_fatal_error(client, &buffer, buffer.count)
                if underlying != RD_KAFKA_RESP_ERR_NO_ERROR {
                    effectiveCode = KafkaErrorCode(underlying)
                    text = buffer.nulTerminatedString
                }
                isFatal = true
            }
            let error = KafkaError(code: effectiveCode, message: text, isFatal: isFatal)
            context.target?.rdKafkaDidReport(error)
        }

    /// Statistics JSON (`statistics.interval.ms`), served by the poll thread. Returning 0 lets librdkafka free it
    /// (the store copies what it keeps).
    static let statistics: @convention(c) (OpaquePointer?, UnsafeMutablePointer<CChar>?, Int, UnsafeMutableRawPointer?)
        -> Int32 = { _, json, length, opaque in
            guard let json, let context = RDKafkaCallbackContext.from(opaque) else { return 0 }
            // Decoded on the store's own queue: this thread delivers the acknowledgements.
            context.statistics.receive(UnsafeRawBufferPointer(start: json, count: length))
            return 0
        }

    /// Per-message delivery report: the message's `_private` is the retained `DeliveryContext` given at produce time.
    static let delivery: @convention(c) (OpaquePointer?, UnsafePointer<rd_kafka_message_t>?, UnsafeMutableRawPointer?)
        -> Void = { _, message, _ in
            guard let message, let opaque = message.pointee._private else { return }
            let delivery = Unmanaged<DeliveryContext>.fromOpaque(opaque).takeRetainedValue()
            let code = message.pointee.err
            if code == RD_KAFKA_RESP_ERR_NO_ERROR {
                delivery.complete(
                    .success(
                        KafkaDeliveryReport(
                            topic: delivery.topic, partition: message.pointee.partition,
                            offset: message.pointee.offset)))
            } else {
                delivery.complete(
                    .failure(
                        KafkaError.from(code, context: "delivery to \(delivery.topic) failed")))
            }
        }

    static let rebalance: @convention(c) (
        OpaquePointer?, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?,
        UnsafeMutableRawPointer?
    ) -> Void = { client, code, partitions, opaque in
        guard let client else { return }
        guard let target = RDKafkaCallbackContext.from(opaque)?.target else {
            // The consumer object is gone (closing): still keep librdkafka's state machine moving.
            rd_kafka_assign(client, code == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS ? partitions : nil)
            return
        }
        target.rdKafkaRebalance(RDKafkaRebalance(client: client, code: code, list: partitions))
    }
}

/// The per-message opaque of a produced message: who to tell about its delivery. One allocation per message.
final class DeliveryContext: Sendable {
    let topic: String
    private let completion: @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void

    init(topic: String, completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void) {
        self.topic = topic
        self.completion = completion
    }

    func complete(_ result: Result<KafkaDeliveryReport, KafkaError>) {
        completion(result)
    }
}
