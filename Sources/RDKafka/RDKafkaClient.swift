internal import CRdKafka
import Glibc
import ServiceSupport

/// The one owner of a librdkafka client (`rd_kafka_t`) and the only caller of its C API: the producer, consumer and
/// topic follower above it speak Swift types only (the `Kafka` target cannot import `CRdKafka`).
///
/// Invariants:
/// - `pointer` is valid while `alive`. Every call from a thread other than the owning poll thread goes through
///   `withClient`, which holds the read lock for the duration of its C call, so `retire` (write lock) cannot flip
///   `alive` while a call is in progress, and nothing reaches the pointer after `retire` returned true.
/// - Methods documented "owner thread only" run on the owner's poll thread (or its close path) without the lock:
///   only that thread retires, so the pointer cannot go away under them.
/// - The callback context passed to librdkafka as the opaque stays retained until `rd_kafka_destroy` returned
///   (librdkafka may call back until then); cached topic handles are destroyed before the client.
/// - C resources free themselves: lists, metadata, messages and errors inside the call that made them; the client
///   in `destroy`, which `deinit` runs when no close path did.
package final class RDKafkaClient: @unchecked Sendable {
    package enum Kind: Sendable, CustomStringConvertible {
        case producer, consumer

        var cType: rd_kafka_type_t { self == .producer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER }
        package var description: String { self == .producer ? "producer" : "consumer" }
    }

    /// What a consumer poll returned (partition EOFs are not reported).
    package enum PollResult: Sendable {
        case message(KafkaMessage)
        case error(KafkaError)
    }

    /// librdkafka's logical offsets.
    package static let offsetBeginning = Int64(RD_KAFKA_OFFSET_BEGINNING)
    package static let offsetEnd = Int64(RD_KAFKA_OFFSET_END)

    private let pointer: OpaquePointer
    private let context: Unmanaged<RDKafkaCallbackContext>
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    private var alive = true
    private var destroyed = false
    /// What a call on a retired client answers.
    private let closedError: KafkaError
    /// The producer's `rd_kafka_topic_t` per topic (created on first use, destroyed before the client).
    private let topicHandles = Locked<[String: SendableOpaquePointer]>([:])

    /// Validates every property (`rd_kafka_conf_set`), installs the callbacks and creates the client. A consumer's
    /// main queue is redirected to the consumer queue, so `consumerPoll` serves everything (rebalances, errors,
    /// statistics).
    /// - Parameters:
    ///   - origin: how to name a property in an error (for example with the environment variable it came from).
    ///   - rebalanceCallback: route group rebalances to the context's target (`rdKafkaRebalance`).
    ///   - closedError: what calls answer once the client was retired.
    /// - Throws: `KafkaError` with code `invalidArgument` naming the property that librdkafka refused, or the
    ///   reason `rd_kafka_new` failed.
    package init(
        _ kind: Kind, properties: [String: String], origin: (String) -> String = { $0 },
        context: RDKafkaCallbackContext, rebalanceCallback: Bool = false, closedError: KafkaError
    ) throws(KafkaError) {
        let conf = try Self.makeConf(properties, origin: origin)
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
                code: KafkaErrorCode.invalidArgument,
                message: "cannot create Kafka \(kind) client: \(errorText.nulTerminatedString)")
        }
        if kind == .consumer {
            rd_kafka_poll_set_consumer(client)
        }
        self.pointer = client
        self.context = retained
        self.closedError = closedError
        self.lock = .allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        if retire() { destroy() }
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// An `rd_kafka_conf_t` with every property set, or the first refusal as an error (the conf is then destroyed).
    /// The caller owns the result (it passes to `rd_kafka_new`, or is destroyed).
    package static func makeConf(_ properties: [String: String], origin: (String) -> String = { $0 }) throws(KafkaError)
        -> OpaquePointer
    {
        let conf = rd_kafka_conf_new()!
        var errorText = [CChar](repeating: 0, count: 512)
        // Sorted so that the reported property is deterministic when several are wrong.
        for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
            let result = rd_kafka_conf_set(conf, name, value, &errorText, errorText.count)
            guard result == RD_KAFKA_CONF_OK else {
                rd_kafka_conf_destroy(conf)
                let sensitive = isSensitive(name)
                let reason =
                    sensitive
                    ? (result == RD_KAFKA_CONF_UNKNOWN ? "no such configuration property" : "invalid value (not shown)")
                    : errorText.nulTerminatedString
                let shownValue = sensitive ? "" : " = \"\(value)\""
                throw KafkaError(
                    code: KafkaErrorCode.invalidArgument,
                    message: "invalid Kafka property \(origin(name))\(shownValue): \(reason)")
            }
        }
        return conf
    }

    /// Whether a property's value must not appear in messages (passwords, keys, tokens).
    package static func isSensitive(_ property: String) -> Bool {
        let lowered = property.lowercased()
        return ["password", "secret", "key", "token", "jaas"].contains { lowered.contains($0) }
    }

    // MARK: Lifecycle

    /// Runs `body` with the client unless it was retired (then returns nil).
    private func withClient<R, E: Error>(_ body: (OpaquePointer) throws(E) -> R) throws(E) -> R? {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        guard alive else { return nil }
        return try body(pointer)
    }

    /// Marks the client unusable for every other thread. Returns true the first time only. Owner thread only.
    package func retire() -> Bool {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        guard alive else { return false }
        alive = false
        return true
    }

    /// Destroys the topic handles and the client, then releases the callback context. Call once, after `retire`
    /// returned true (later calls do nothing). Owner thread only, never from a callback of this client.
    package func destroy() {
        guard !destroyed else { return }
        destroyed = true
        topicHandles.withLock { handles in
            for topic in handles.values { rd_kafka_topic_destroy(topic.pointer) }
            handles.removeAll()
        }
        rd_kafka_destroy(pointer)
        context.release()
    }

    // MARK: Consumer

    /// Subscribes to `topics` (group consumers).
    package func subscribe(_ topics: [String]) -> KafkaError? {
        withClient { client -> KafkaError? in
            RDKafkaTopicPartitionList.withList(topics.map { TopicPartition(topic: $0, partition: -1) }) { list in
                let code = rd_kafka_subscribe(client, list)
                return code == RD_KAFKA_RESP_ERR_NO_ERROR
                    ? nil : KafkaError.from(code, context: "cannot subscribe to \(topics.joined(separator: ","))")
            }
        } ?? closedError
    }

    /// Serves callbacks and returns the next message or error, waiting up to `timeoutMs`. Owner thread only.
    package func consumerPoll(timeoutMs: Int32) -> PollResult? {
        guard let message = rd_kafka_consumer_poll(pointer, timeoutMs) else { return nil }
        defer { rd_kafka_message_destroy(message) }
        let code = message.pointee.err
        if code == RD_KAFKA_RESP_ERR_NO_ERROR { return .message(RDKafkaMessageReader.read(message)) }
        if code == RD_KAFKA_RESP_ERR__PARTITION_EOF { return nil }
        let text =
            rd_kafka_message_errstr(message).map { String(cString: $0) } ?? KafkaError.describe(code: KafkaErrorCode(code))
        return .error(KafkaError(code: KafkaErrorCode(code), message: text))
    }

    /// Leaves the group: serves the final revoke and commits stored offsets (`rd_kafka_consumer_close`). Owner
    /// thread only.
    package func closeConsumer() -> KafkaError? {
        let code = rd_kafka_consumer_close(pointer)
        return code == RD_KAFKA_RESP_ERR_NO_ERROR
            ? nil : KafkaError.described(code)
    }

    /// Stores `nextOffset` (as given, no +1) for `partition`.
    /// - Throws: `KafkaError` when librdkafka refuses it (partition not assigned) or the client is closed.
    package func storeOffset(_ partition: TopicPartition, nextOffset: Int64) throws(KafkaError) {
        let stored: Void? = try withClient { client throws(KafkaError) in
            try RDKafkaTopicPartitionList.withList([partition], offsets: [nextOffset]) { list throws(KafkaError) in
                let code = rd_kafka_offsets_store(client, list)
                let entryCode = list.pointee.elems[0].err
                let failure = code != RD_KAFKA_RESP_ERR_NO_ERROR ? code : entryCode
                guard failure == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw KafkaError.from(failure, context: "cannot store offset \(nextOffset) for \(partition)")
                }
            }
        }
        guard stored != nil else { throw closedError }
    }

    /// Pauses or resumes fetching `partitions`. Nothing happens on a closed client.
    /// - Returns: why librdkafka refused, or nil.
    package func setFetching(_ partitions: [TopicPartition], paused: Bool) -> KafkaError? {
        withClient { client -> KafkaError? in
            RDKafkaTopicPartitionList.withList(partitions) { list in
                let code = paused ? rd_kafka_pause_partitions(client, list) : rd_kafka_resume_partitions(client, list)
                return code == RD_KAFKA_RESP_ERR_NO_ERROR
                    ? nil : KafkaError.described(code)
            }
        } ?? nil
    }

    /// Asks the leaders of `partitions` for their latest offsets (one ListOffsets request per leader, blocking up to
    /// `timeout`) and ignores the answers. librdkafka 2.0 applies a resume on its main thread without waking the
    /// broker threads, and a broker thread with nothing to fetch sleeps up to a second before it looks again (0.6 s
    /// measured after the ledger resumed a drained buffer); a request to a broker wakes its thread at once, so the
    /// resumed partitions are fetched now. Nothing happens on a closed client.
    package func wakeFetchers(of partitions: [TopicPartition], timeout: Duration) {
        guard !partitions.isEmpty else { return }
        _ = withClient { client in
            RDKafkaTopicPartitionList.withList(partitions, offsets: partitions.map { _ in Self.offsetEnd }) { list in
                _ = rd_kafka_offsets_for_times(client, list, timeout.rdKafkaMilliseconds)
            }
        }
    }

    /// Moves the fetch position of assigned `partitions` to `offsets` (one each; a logical offset such as the
    /// beginning too), waiting up to `timeout` for the fetcher to take it: no message fetched from the old position
    /// is handed out after a seek that returned nil. Nothing happens on a closed client.
    /// - Returns: why librdkafka refused (the call, or the first partition it refused), or nil.
    package func seek(_ partitions: [TopicPartition], to offsets: [Int64], timeout: Duration) -> KafkaError? {
        withClient { client -> KafkaError? in
            RDKafkaTopicPartitionList.withList(partitions, offsets: offsets) { list -> KafkaError? in
                if let error = rd_kafka_seek_partitions(client, list, timeout.rdKafkaMilliseconds) {
                    return KafkaError.consuming(error, context: "seek")
                }
                return RDKafkaTopicPartitionList.entries(list).first { $0.error != RD_KAFKA_RESP_ERR_NO_ERROR }.map {
                    KafkaError.from($0.error, context: "seek \($0.partition)")
                }
            }
        } ?? nil
    }

    /// Commits the stored offsets of the assignment; `async` does not wait for the answer. Nothing stored is not
    /// an error. - Returns: nil when the client is closed, else the outcome (`context` prefixes an error's message).
    package func commitStoredOffsets(async: Bool, context: String) -> Result<Void, KafkaError>? {
        withClient { client -> Result<Void, KafkaError> in
            let code = rd_kafka_commit(client, nil, async ? 1 : 0)
            guard code == RD_KAFKA_RESP_ERR_NO_ERROR || code == RD_KAFKA_RESP_ERR__NO_OFFSET else {
                return .failure(KafkaError.from(code, context: context))
            }
            return .success(())
        }
    }

    /// The group's committed offsets of `partitions` (nil where nothing is committed), blocking up to `timeout`.
    package func committedOffsets(_ partitions: [TopicPartition], timeout: Duration, context: String)
        throws(KafkaError) -> [TopicPartition: Int64]
    {
        let answer = try withClient { client throws(KafkaError) -> [TopicPartition: Int64] in
            try RDKafkaTopicPartitionList.withList(partitions) { list throws(KafkaError) -> [TopicPartition: Int64] in
                let code = rd_kafka_committed(client, list, timeout.rdKafkaMilliseconds)
                guard code == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError.from(code, context: context) }
                var offsets: [TopicPartition: Int64] = [:]
                for entry in RDKafkaTopicPartitionList.entries(list)
                where entry.error == RD_KAFKA_RESP_ERR_NO_ERROR && entry.offset >= 0 {
                    offsets[entry.partition] = entry.offset
                }
                return offsets
            }
        }
        guard let answer else { throw closedError }
        return answer
    }

    /// librdkafka's current assignment (empty when closed).
    package var assignment: [TopicPartition] {
        withClient { client -> [TopicPartition] in
            var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
            guard rd_kafka_assignment(client, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
            defer { rd_kafka_topic_partition_list_destroy(list) }
            return RDKafkaTopicPartitionList.partitions(list)
        } ?? []
    }

    // MARK: Group-less reading (topic follower)

    /// Adds `partitions` to the assignment, each at its entry of `offsets`. Owner thread only.
    package func incrementalAssign(_ partitions: [TopicPartition], offsets: [Int64], context: String) -> KafkaError? {
        RDKafkaTopicPartitionList.withList(partitions, offsets: offsets) { list in
            rd_kafka_incremental_assign(pointer, list).map { KafkaError.consuming($0, context: context) }
        }
    }

    /// The cluster's id, asked of the brokers (blocks up to `timeout`); nil when closed, unanswered or unknown.
    package func clusterId(timeout: Duration) -> String? {
        let id = withClient { client -> String? in
            guard let text = rd_kafka_clusterid(client, timeout.rdKafkaMilliseconds) else { return nil }
            defer { rd_kafka_mem_free(client, text) }
            return String(cString: text)
        }
        return id ?? nil
    }

    /// The low and high watermarks of a partition, asked of its leader (blocks up to `timeout`).
    /// - Returns: nil when the client is closed; a failure carries librdkafka's code and description.
    package func watermarks(topic: String, partition: Int32, timeout: Duration)
        -> Result<(low: Int64, high: Int64), KafkaError>?
    {
        withClient { client -> Result<(low: Int64, high: Int64), KafkaError> in
            var low: Int64 = 0
            var high: Int64 = 0
            let code = rd_kafka_query_watermark_offsets(
                client, topic, partition, &low, &high, timeout.rdKafkaMilliseconds)
            guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
                return .failure(KafkaError.described(code))
            }
            return .success((low, high))
        }
    }

    /// The consumer's positions (next offset to read) of `partitions`, where known. Owner thread only.
    package func positions(_ partitions: [TopicPartition]) -> [TopicPartition: Int64] {
        RDKafkaTopicPartitionList.withList(partitions) { list in
            guard rd_kafka_position(pointer, list) == RD_KAFKA_RESP_ERR_NO_ERROR else { return [:] }
            var positions: [TopicPartition: Int64] = [:]
            for entry in RDKafkaTopicPartitionList.entries(list)
            where entry.error == RD_KAFKA_RESP_ERR_NO_ERROR && entry.offset >= 0 {
                positions[entry.partition] = entry.offset
            }
            return positions
        }
    }

    /// The first offset at or after `timestampMs` of each partition (-1: none), for the entries librdkafka
    /// answered without error. Owner thread only.
    /// - Returns: a failure (code and description) when the lookup as a whole failed.
    package func offsetsForTimes(_ partitions: [TopicPartition], timestampMs: Int64, timeout: Duration)
        -> Result<[TopicPartition: Int64], KafkaError>
    {
        RDKafkaTopicPartitionList.withList(partitions, offsets: partitions.map { _ in timestampMs }) { list in
            let code = rd_kafka_offsets_for_times(pointer, list, timeout.rdKafkaMilliseconds)
            guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
                return .failure(KafkaError.described(code))
            }
            var offsets: [TopicPartition: Int64] = [:]
            for entry in RDKafkaTopicPartitionList.entries(list) where entry.error == RD_KAFKA_RESP_ERR_NO_ERROR {
                offsets[entry.partition] = entry.offset
            }
            return .success(offsets)
        }
    }

    /// The partition ids of `topic` from the brokers' metadata (blocks up to `timeout`). Owner thread only.
    package func partitionIds(of topic: String, timeout: Duration) -> Result<[Int32], KafkaError> {
        RDKafkaMetadata.partitions(of: topic, client: pointer, timeout: timeout)
    }

    // MARK: Producer

    /// Enqueues one message without blocking; `completion` runs once with its delivery report (on the thread that
    /// serves `poll`).
    /// - Returns: nil when enqueued; otherwise why not (`completion` is then never called).
    package func produce(
        topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void
    ) -> KafkaError? {
        let delivery = Unmanaged.passRetained(DeliveryContext(topic: topic, completion: completion))
        let refusal: KafkaError? =
            withClient { client -> KafkaError? in
                guard let topicHandle = topicHandle(client, topic) else {
                    return KafkaError(code: KafkaErrorCode.invalidArgument, message: "invalid topic name '\(topic)'")
                }
                return RDKafkaProduce.produce(
                    client, topic: topicHandle, key: key, value: value, headers: headers, opaque: delivery.toOpaque())
            } ?? closedError
        if refusal != nil { delivery.release() }
        return refusal
    }

    /// The cached `rd_kafka_topic_t` for `topic` (created on first use).
    private func topicHandle(_ client: OpaquePointer, _ topic: String) -> OpaquePointer? {
        topicHandles.withLock { handles -> OpaquePointer? in
            if let existing = handles[topic] { return existing.pointer }
            guard let created = rd_kafka_topic_new(client, topic, nil) else { return nil }
            handles[topic] = SendableOpaquePointer(created)
            return created
        }
    }

    /// Serves delivery reports, statistics and errors, waiting up to `timeoutMs` for something to serve.
    package func poll(timeoutMs: Int32) {
        _ = withClient { rd_kafka_poll($0, timeoutMs) }
    }

    /// `rd_kafka_outq_len`: messages not yet delivered or failed, plus events waiting to be served (0 when closed).
    package var outstandingCount: Int {
        withClient { Int(rd_kafka_outq_len($0)) } ?? 0
    }

    /// Fails every queued and in-flight message (their reports say purged), without blocking.
    package func purge() {
        _ = withClient { Self.purge($0) }
    }

    /// After `retire`: purges what is left and serves the reports on this thread (bounded), so that every message
    /// gets its delivery report before `destroy` (which would drop them silently). Owner thread only.
    package func purgeAndServeRemaining() {
        Self.purge(pointer)
        var rounds = 0
        while rd_kafka_outq_len(pointer) > 0, rounds < 200 {
            rd_kafka_poll(pointer, 10)
            rounds += 1
        }
    }

    private static func purge(_ client: OpaquePointer) {
        rd_kafka_purge(client, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT | RD_KAFKA_PURGE_F_NON_BLOCKING)
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
    package var rdKafkaMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, milliseconds))
    }
}

extension [CChar] {
    /// The C string held in this buffer (up to the first NUL).
    package var nulTerminatedString: String {
        let end = firstIndex(of: 0) ?? endIndex
        return String(decoding: self[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
