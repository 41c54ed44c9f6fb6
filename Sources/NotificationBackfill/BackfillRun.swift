import AppStoreServerAPI
import Foundation
import ReceiptModel
import ServiceSupport

/// What a backfill did.
public struct BackfillSummary: Sendable, Equatable {
    public var pages = 0
    /// Notifications Get Notification History returned.
    public var notifications = 0
    /// Records Kafka acknowledged (0 on a dry run).
    public var written = 0
    /// Records Kafka did not acknowledge.
    public var failed = 0
    /// History entries whose `signedPayload` is not a notification's shape (not written; the verifier would refuse
    /// them anyway).
    public var skipped = 0
    /// Why the paging stopped early, when it did.
    public var error: String?

    public init(
        pages: Int = 0, notifications: Int = 0, written: Int = 0, failed: Int = 0, skipped: Int = 0,
        error: String? = nil
    ) {
        self.pages = pages
        self.notifications = notifications
        self.written = written
        self.failed = failed
        self.skipped = skipped
        self.error = error
    }

    /// Everything that was read was written (or would be, on a dry run), and the paging reached the end.
    public var succeeded: Bool { failed == 0 && error == nil }
}

/// Pages through Get Notification History and writes each recovered `signedPayload` as a `NotificationRecord`
/// (origin `notification_history`) keyed as the ingest keys Apple's posts (the unverified original transaction
/// id, else the notification UUID), so a recovered notification lands in the same partition, in order with its
/// subscription's others. Duplicates of notifications that did arrive are harmless: their events carry the same
/// `event_id`.
///
/// Prints one JSON line per page and a summary line through `output`.
public struct BackfillRun: Sendable {
    public let options: BackfillOptions
    public let source: any NotificationHistoryPaging
    /// nil on a dry run.
    public let writer: (any NotificationRecordWriting)?
    public let output: @Sendable (String) -> Void
    public let nowMs: @Sendable () -> Int64

    public init(
        options: BackfillOptions, source: any NotificationHistoryPaging, writer: (any NotificationRecordWriting)?,
        output: @escaping @Sendable (String) -> Void, nowMs: @escaping @Sendable () -> Int64 = SystemTime.wallMilliseconds
    ) {
        self.options = options
        self.source = source
        self.writer = options.dryRun ? nil : writer
        self.output = output
        self.nowMs = nowMs
    }

    public func run() async -> BackfillSummary {
        var summary = BackfillSummary()
        var token: String?
        paging: while true {
            let page: NotificationHistoryPage
            switch await source.page(
                startMs: options.sinceMs, endMs: options.untilMs, onlyFailures: options.onlyFailures,
                paginationToken: token)
            {
            case .success(let next): page = next
            case .failure(let error):
                summary.error = error.description
                break paging
            }
            summary.pages += 1
            let counts = await write(page.signedPayloads)
            summary.notifications += page.signedPayloads.count
            summary.written += counts.written
            summary.failed += counts.failed
            summary.skipped += counts.skipped
            output(
                "{\"page\":\(summary.pages),\"notifications\":\(page.signedPayloads.count),"
                    + "\"written\":\(counts.written),\"failed\":\(counts.failed),\"skipped\":\(counts.skipped),"
                    + "\"has_more\":\(page.hasMore),\"dry_run\":\(options.dryRun)}")
            guard page.hasMore else { break }
            guard let next = page.paginationToken, !next.isEmpty else {
                summary.error = "Apple said hasMore but gave no paginationToken"
                break
            }
            token = next
        }
        output(
            "{\"summary\":{\"pages\":\(summary.pages),\"notifications\":\(summary.notifications),"
                + "\"written\":\(summary.written),\"failed\":\(summary.failed),\"skipped\":\(summary.skipped),"
                + "\"dry_run\":\(options.dryRun),\"since_ms\":\(options.sinceMs),\"until_ms\":\(options.untilMs),"
                + "\"only_failures\":\(options.onlyFailures),"
                + "\"error\":\(summary.error.map(JSONText.quoted) ?? "null")}}")
        return summary
    }

    /// Writes one page's records concurrently and waits for every acknowledgement.
    private func write(_ payloads: [String]) async -> (written: Int, failed: Int, skipped: Int) {
        var records: [(key: [UInt8]?, value: [UInt8])] = []
        var skipped = 0
        let receivedAtMs = nowMs()
        for payload in payloads {
            guard let record = NotificationHistoryRecord.make(signedPayload: payload, receivedAtMs: receivedAtMs) else {
                skipped += 1
                continue
            }
            records.append(record)
        }
        guard let writer else { return (0, 0, skipped) }
        let failures = await withTaskGroup(of: Bool.self) { group in
            for record in records {
                group.addTask { await writer.write(key: record.key, value: record.value) != nil }
            }
            var failed = 0
            for await didFail in group where didFail { failed += 1 }
            return failed
        }
        return (records.count - failures, failures, skipped)
    }
}
