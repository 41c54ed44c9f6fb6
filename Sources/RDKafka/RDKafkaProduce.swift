internal import CRdKafka

/// `rd_kafka_produceva` (the variadic `rd_kafka_producev` is not callable from Swift) without heap allocations of its
/// own: the argument vector lives on the stack and key, value and headers are copied by librdkafka (`F_COPY`).
enum RDKafkaProduce {
    /// A valid pointer for zero-length keys, values and header values: librdkafka treats a NULL pointer as "no
    /// value" (a tombstone or null header), which is not the same as empty.
    nonisolated(unsafe) private static let emptyBytes = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    /// Enqueues one message on `topic` (an `rd_kafka_topic_t`), with `opaque` as its delivery-report opaque.
    /// - Returns: nil when enqueued; otherwise why not (the opaque was not taken).
    static func produce(
        _ client: OpaquePointer, topic: OpaquePointer, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        opaque: UnsafeMutableRawPointer
    ) -> KafkaError? {
        let headerList = headers.isEmpty ? nil : makeHeaders(headers)
        let error: OpaquePointer? = value.withUnsafeBytes { valueBytes in
            withOptionalBytes(key) { keyBytes in
                withUnsafeTemporaryAllocation(of: rd_kafka_vu_t.self, capacity: 7) { arguments in
                    var count = 0
                    func append(_ type: rd_kafka_vtype_t, _ fill: (inout rd_kafka_vu_t) -> Void) {
                        var argument = rd_kafka_vu_t()
                        argument.vtype = type
                        fill(&argument)
                        arguments.initializeElement(at: count, to: argument)
                        count += 1
                    }
                    append(RD_KAFKA_VTYPE_RKT) { $0.u.rkt = topic }
                    append(RD_KAFKA_VTYPE_MSGFLAGS) { $0.u.i = RD_KAFKA_MSG_F_COPY }
                    append(RD_KAFKA_VTYPE_VALUE) {
                        $0.u.mem.ptr = UnsafeMutableRawPointer(mutating: valueBytes.baseAddress) ?? emptyBytes
                        $0.u.mem.size = valueBytes.count
                    }
                    if let keyBytes {
                        append(RD_KAFKA_VTYPE_KEY) {
                            $0.u.mem.ptr = UnsafeMutableRawPointer(mutating: keyBytes.baseAddress) ?? emptyBytes
                            $0.u.mem.size = keyBytes.count
                        }
                    }
                    if let headerList {
                        append(RD_KAFKA_VTYPE_HEADERS) { $0.u.headers = headerList }
                    }
                    append(RD_KAFKA_VTYPE_OPAQUE) { $0.u.ptr = opaque }
                    defer { arguments.baseAddress!.deinitialize(count: count) }
                    return rd_kafka_produceva(client, arguments.baseAddress, count)
                }
            }
        }
        guard let error else { return nil }
        // On failure the headers list stays ours.
        if let headerList { rd_kafka_headers_destroy(headerList) }
        let name = String(cString: rd_kafka_topic_name(topic))
        return KafkaError.consuming(error, context: "cannot enqueue message for \(name)")
    }

    private static func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
        guard let bytes else { return body(nil) }
        return bytes.withUnsafeBytes { body($0) }
    }

    /// A new `rd_kafka_headers_t` with copies of `headers` (ownership passes to the message on success).
    private static func makeHeaders(_ headers: [KafkaHeader]) -> OpaquePointer {
        let list = rd_kafka_headers_new(headers.count)!
        for header in headers {
            header.name.withCString { name in
                if let value = header.value {
                    value.withUnsafeBytes { bytes in
                        let pointer = bytes.baseAddress ?? UnsafeRawPointer(emptyBytes)
                        _ = rd_kafka_header_add(list, name, -1, pointer, bytes.count)
                    }
                } else {
                    _ = rd_kafka_header_add(list, name, -1, nil, 0)
                }
            }
        }
        return list
    }
}
