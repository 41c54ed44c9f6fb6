import ServiceSupport

/// A retry record (`RETRY_TOPIC`) as JSON, its one writer: `JSONEncoder`'s bytes (sorted keys, absent optional
/// members omitted, slashes unescaped) without `JSONEncoder`, its submission written by `SubmissionJSON`, so a
/// submission has one writer whether it travels alone or inside a retry record. Read with `Decodable`
/// (`MessageCoding.decode`). `RetryRecordJSONTests` hold the bytes to `JSONEncoder`'s form.
public enum RetryRecordJSON {
    public static func encode(_ record: RetryRecord) -> [UInt8] {
        let submission = SubmissionJSON.encode(record.submission)
        var out = JSONWriter(capacity: 256 + submission.count)
        // Members in sorted key order (as `.sortedKeys` writes them).
        out.member("attempts", first: true)
        out.number(Int64(record.attempts))
        if let status = record.lastAppleStatus {
            out.member("last_apple_status")
            out.number(Int64(status))
        }
        out.member("last_error")
        out.string(record.lastError)
        out.member("not_before_ms")
        out.number(record.notBeforeMs)
        out.member("round")
        out.number(Int64(record.round))
        out.member("schema_version")
        out.number(Int64(record.schemaVersion))
        if let source = record.source {
            out.member("source")
            out.string(source.rawValue)
        }
        out.member("submission")
        out.raw(String(decoding: submission, as: UTF8.self))
        out.raw("}")
        return out.bytes
    }
}
