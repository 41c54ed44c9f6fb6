internal import CRdKafka

/// An error from librdkafka or from this module's use of it, carrying librdkafka's `rd_kafka_resp_err_t` code.
///
/// Negative codes are local to the client (queue full, timed out, invalid configuration); positive codes come from
/// the broker. `isRetriable` says the same operation may succeed later without any change (back off and retry);
/// `isFatal` says the client is unusable and must be recreated (an idempotent producer that lost its guarantees).
public struct KafkaError: Error, Sendable, CustomStringConvertible, Equatable {
    /// librdkafka's `rd_kafka_resp_err_t` value.
    public let code: KafkaErrorCode
    /// A readable explanation, naming the property, topic or partition involved when there is one.
    public let message: String
    /// True when librdkafka flagged the error as fatal (`RD_KAFKA_RESP_ERR__FATAL` or a fatal `rd_kafka_error_t`).
    public let isFatal: Bool

    public init(code: KafkaErrorCode, message: String, isFatal: Bool = false) {
        self.code = code
        self.message = message
        self.isFatal = isFatal || code == .fatal
    }

    /// librdkafka's own short description of `code` (`rd_kafka_err2str`).
    public static func describe(code: KafkaErrorCode) -> String {
        String(cString: rd_kafka_err2str(code.resp))
    }

    /// An error for `code` whose message is `context` followed by librdkafka's description of the code.
    package static func from(code: KafkaErrorCode, context: String) -> KafkaError {
        KafkaError(code: code, message: "\(context): \(describe(code: code))")
    }

    static func from(_ code: rd_kafka_resp_err_t, context: String) -> KafkaError {
        from(code: KafkaErrorCode(code), context: context)
    }

    /// librdkafka's description of `code`, as the error for it.
    static func described(_ code: rd_kafka_resp_err_t) -> KafkaError {
        KafkaError(code: KafkaErrorCode(code), message: describe(code: KafkaErrorCode(code)))
    }

    /// Takes ownership of `error` (an `rd_kafka_error_t`) and destroys it.
    static func consuming(_ error: OpaquePointer, context: String) -> KafkaError {
        defer { rd_kafka_error_destroy(error) }
        let code = KafkaErrorCode(rd_kafka_error_code(error))
        let text = rd_kafka_error_string(error).map { String(cString: $0) } ?? describe(code: code)
        return KafkaError(code: code, message: "\(context): \(text)", isFatal: rd_kafka_error_is_fatal(error) != 0)
    }

    public var isQueueFull: Bool { code == .queueFull }

    /// True for transient conditions: a later attempt of the same operation may succeed.
    public var isRetriable: Bool {
        !isFatal && Self.retriableCodes.contains(code)
    }

    private static let retriableCodes: Set<KafkaErrorCode> = [
        RD_KAFKA_RESP_ERR__QUEUE_FULL, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT,
        RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE, RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN,
        RD_KAFKA_RESP_ERR__RESOLVE, RD_KAFKA_RESP_ERR__PURGE_QUEUE, RD_KAFKA_RESP_ERR__PURGE_INFLIGHT,
        RD_KAFKA_RESP_ERR__WAIT_COORD, RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC,
        RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION,
        RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
        RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
        RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR, RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS,
    ].reduce(into: Set<KafkaErrorCode>()) { $0.insert(KafkaErrorCode($1)) }

    public var description: String {
        "KafkaError(\(code.rawValue) \(isFatal ? "fatal, " : "")\(isRetriable ? "retriable, " : "")\(message))"
    }
}

/// A librdkafka error code (`rd_kafka_resp_err_t`): negative codes are the client's own (`RD_KAFKA_RESP_ERR__*`),
/// positive ones the broker's. The codes this project acts on are named here, from librdkafka's own constants, so no
/// other module compares raw numbers; any other code librdkafka reports is kept as it came (`rawValue`, logged as
/// `kafka_code`).
public struct KafkaErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    init(_ code: rd_kafka_resp_err_t) {
        self.rawValue = code.rawValue
    }

    var resp: rd_kafka_resp_err_t { rd_kafka_resp_err_t(rawValue: rawValue) }

    /// The number and librdkafka's name for it (`-185 Local: Message timed out`).
    public var description: String { "\(rawValue) \(KafkaError.describe(code: self))" }

    /// The local producer queue is full (`queue.buffering.max.messages` / `.kbytes`): back-pressure, retry later.
    public static let queueFull = KafkaErrorCode(RD_KAFKA_RESP_ERR__QUEUE_FULL)
    /// The message was not delivered within `message.timeout.ms`.
    public static let messageTimedOut = KafkaErrorCode(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT)
    /// An operation did not complete within its timeout.
    public static let timedOut = KafkaErrorCode(RD_KAFKA_RESP_ERR__TIMED_OUT)
    /// An invalid argument, including an unknown configuration property or an invalid value for one.
    public static let invalidArgument = KafkaErrorCode(RD_KAFKA_RESP_ERR__INVALID_ARG)
    /// The operation is not valid in the client's current state (for example storing an offset for a partition
    /// that is no longer assigned).
    public static let invalidState = KafkaErrorCode(RD_KAFKA_RESP_ERR__STATE)
    /// The client is being destroyed or was closed.
    public static let destroyed = KafkaErrorCode(RD_KAFKA_RESP_ERR__DESTROY)
    /// The message was removed from the queue by `close` before it could be sent.
    public static let purgedQueue = KafkaErrorCode(RD_KAFKA_RESP_ERR__PURGE_QUEUE)
    /// The message was in flight when `close` gave up on it; it may or may not have been written.
    public static let purgedInFlight = KafkaErrorCode(RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
    /// The topic or partition is unknown to the cluster.
    public static let unknownTopicOrPartition = KafkaErrorCode(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
    /// A local-only view of `unknownTopicOrPartition` (the topic is not in the client's metadata).
    public static let unknownTopic = KafkaErrorCode(RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
    /// The message is larger than `message.max.bytes`.
    public static let messageSizeTooLarge = KafkaErrorCode(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE)
    /// The broker could not replicate the write to enough replicas (retriable).
    public static let notEnoughReplicas = KafkaErrorCode(RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS)
    /// No broker is reachable.
    public static let allBrokersDown = KafkaErrorCode(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
    /// A fatal error was raised; `rd_kafka_fatal_error` has the underlying one.
    public static let fatal = KafkaErrorCode(RD_KAFKA_RESP_ERR__FATAL)
    /// Nothing was stored to commit (not an error for this module's commits).
    package static let noOffset = KafkaErrorCode(RD_KAFKA_RESP_ERR__NO_OFFSET)
    /// The end of a partition was reached (only reported when `enable.partition.eof` is set).
    public static let partitionEOF = KafkaErrorCode(RD_KAFKA_RESP_ERR__PARTITION_EOF)

    /// No error (`RD_KAFKA_RESP_ERR_NO_ERROR`).
    public static let noError = KafkaErrorCode(RD_KAFKA_RESP_ERR_NO_ERROR)
    /// A batch larger than the broker's segment size (`RECORD_LIST_TOO_LARGE`).
    public static let recordListTooLarge = KafkaErrorCode(RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE)
    /// The connection to a broker failed (local).
    public static let transport = KafkaErrorCode(RD_KAFKA_RESP_ERR__TRANSPORT)
}
