import AppStoreServerAPI
import Foundation
import NotificationBackfill
import ReceiptModel
import Synchronization
import Testing
import ServiceSupport

/// A Get Notification History that serves fixed pages and records what it was asked.
final class FakeHistory: NotificationHistoryPaging {
    let pages: [Result<NotificationHistoryPage, NotificationHistoryError>]
    let requests = Locked<[(startMs: Int64, endMs: Int64, onlyFailures: Bool, token: String?)]>([])

    init(_ pages: [Result<NotificationHistoryPage, NotificationHistoryError>]) {
        self.pages = pages
    }

    func page(startMs: Int64, endMs: Int64, onlyFailures: Bool, paginationToken: String?) async
        -> Result<NotificationHistoryPage, NotificationHistoryError>
    {
        let index = requests.withLock { requests in
            requests.append((startMs, endMs, onlyFailures, paginationToken))
            return requests.count - 1
        }
        return index < pages.count ? pages[index] : .failure(NotificationHistoryError("asked for a page that does not exist"))
    }
}

/// Records written records; refuses those whose key is in `refuse`.
final class FakeWriter: NotificationRecordWriting {
    let written = Locked<[(key: [UInt8]?, value: [UInt8])]>([])
    let refuse: Set<String>

    init(refuse: Set<String> = []) {
        self.refuse = refuse
    }

    func write(key: [UInt8]?, value: [UInt8]) async -> String? {
        if let key, refuse.contains(String(decoding: key, as: UTF8.self)) { return "Local: Message timed out" }
        written.withLock { $0.append((key, value)) }
        return nil
    }
}

/// A JWS-shaped (unsigned) notification with `uuid` and, when given, a nested transaction of `original`.
func signedPayload(uuid: String, original: String?) -> String {
    func segment(_ json: String) -> String {
        Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
    let header = segment(#"{"alg":"ES256","x5c":["AA==","AA==","AA=="]}"#)
    let transaction = original.map {
        header + "." + segment(#"{"originalTransactionId":"\#($0)","transactionId":"1"}"#) + ".c2ln"
    }
    let data = transaction.map { #"{"signedTransactionInfo":"\#($0)"}"# } ?? "{}"
    return header + "." + segment(#"{"notificationUUID":"\#(uuid)","data":\#(data)}"#) + ".c2ln"
}

@Suite("BackfillRun: pages of Get Notification History to NOTIFICATIONS_TOPIC")
struct BackfillRunTests {
    let options = BackfillOptions(sinceMs: 1_000, untilMs: 9_000)

    private func run(
        _ history: FakeHistory, writer: FakeWriter?, options: BackfillOptions? = nil
    ) async -> (BackfillSummary, [String]) {
        let lines = Locked<[String]>([])
        let summary = await BackfillRun(
            options: options ?? self.options, source: history, writer: writer,
            output: { line in lines.withLock { $0.append(line) } }, nowMs: { 5_000 }
        ).run()
        return (summary, lines.withLock { $0 })
    }

    @Test func everyPageIsFollowedWithItsTokenAndEveryNotificationWrittenKeyedAsTheIngestKeysIt() async throws {
        let history = FakeHistory([
            .success(.init(
                signedPayloads: [signedPayload(uuid: "u1", original: "o1"), signedPayload(uuid: "u2", original: nil)],
                hasMore: true, paginationToken: "t1")),
            .success(.init(signedPayloads: [signedPayload(uuid: "u3", original: "o3")], hasMore: true,
                           paginationToken: "t2")),
            .success(.init(signedPayloads: [], hasMore: false, paginationToken: nil)),
        ])
        var onlyFailures = options
        onlyFailures.onlyFailures = true
        let writer = FakeWriter()
        let (summary, lines) = await run(history, writer: writer, options: onlyFailures)
        #expect(summary == BackfillSummary(pages: 3, notifications: 3, written: 3, failed: 0, skipped: 0, error: nil))
        #expect(summary.succeeded)
        let requests = history.requests.withLock { $0 }
        #expect(requests.map(\.token) == [nil, "t1", "t2"])
        #expect(requests.allSatisfy { $0.startMs == 1_000 && $0.endMs == 9_000 && $0.onlyFailures })
        let written = writer.written.withLock { $0 }
        #expect(Set(written.map { String(decoding: $0.key ?? [], as: UTF8.self) }) == ["o1", "u2", "o3"])
        for record in written {
            let decoded = try MessageCoding.decode(NotificationRecord.self, from: record.value)
            #expect(decoded.origin == .notificationHistory && decoded.receivedAtMs == 5_000)
            #expect(decoded.signedPayload.hasPrefix("eyJ"))
        }
        #expect(lines.count == 4)
        #expect(lines[0].contains("\"page\":1") && lines[0].contains("\"written\":2"))
        #expect(lines[0].contains("\"has_more\":true"))
        #expect(lines[3].hasPrefix("{\"summary\":") && lines[3].contains("\"written\":3"))
    }

    @Test func aWriteKafkaDidNotAcknowledgeFailsTheRun() async {
        let history = FakeHistory([
            .success(.init(
                signedPayloads: [signedPayload(uuid: "u1", original: "o1"), signedPayload(uuid: "u2", original: "o2")],
                hasMore: false, paginationToken: nil))
        ])
        let (summary, lines) = await run(history, writer: FakeWriter(refuse: ["o2"]))
        #expect(summary.written == 1 && summary.failed == 1 && !summary.succeeded)
        #expect(lines.last?.contains("\"failed\":1") == true)
    }

    @Test func aDryRunReadsEveryPageAndWritesNothing() async {
        let history = FakeHistory([
            .success(.init(signedPayloads: [signedPayload(uuid: "u1", original: "o1")], hasMore: true,
                           paginationToken: "t")),
            .success(.init(signedPayloads: [signedPayload(uuid: "u2", original: "o2")], hasMore: false,
                           paginationToken: nil)),
        ])
        var dry = options
        dry.dryRun = true
        let writer = FakeWriter()
        let (summary, lines) = await run(history, writer: writer, options: dry)
        #expect(summary.pages == 2 && summary.notifications == 2 && summary.written == 0 && summary.succeeded)
        #expect(writer.written.withLock { $0.isEmpty })
        #expect(lines.last?.contains("\"dry_run\":true") == true)
    }

    @Test func anAPIErrorStopsThePagingAndFailsTheRunAfterWritingWhatWasRead() async {
        let history = FakeHistory([
            .success(.init(signedPayloads: [signedPayload(uuid: "u1", original: "o1")], hasMore: true,
                           paginationToken: "t")),
            .failure(NotificationHistoryError("4000014 invalid pagination token")),
        ])
        let writer = FakeWriter()
        let (summary, lines) = await run(history, writer: writer)
        #expect(summary.pages == 1 && summary.written == 1 && !summary.succeeded)
        #expect(summary.error == "4000014 invalid pagination token")
        #expect(lines.last?.contains("4000014") == true)
        // hasMore without a token is not followed blindly either.
        let tokenless = FakeHistory([.success(.init(signedPayloads: [], hasMore: true, paginationToken: nil))])
        let (stopped, _) = await run(tokenless, writer: writer)
        #expect(stopped.error?.contains("paginationToken") == true && tokenless.requests.withLock { $0.count } == 1)
    }

    @Test func anEntryThatIsNotANotificationIsSkippedNotWritten() async {
        let history = FakeHistory([
            .success(.init(
                signedPayloads: ["not-a-jws", signedPayload(uuid: "u1", original: "o1")], hasMore: false,
                paginationToken: nil))
        ])
        let writer = FakeWriter()
        let (summary, _) = await run(history, writer: writer)
        #expect(summary.skipped == 1 && summary.written == 1 && summary.succeeded)
    }
}

@Suite("BackfillOptions")
struct BackfillOptionsTests {
    let now: Int64 = 1_800_000_000_000

    func parse(_ arguments: [String]) throws(CommandLineError) -> BackfillOptions {
        var reader = CommandLineArguments(arguments)
        return try BackfillOptions.parse(&reader, nowMs: now)
    }

    @Test func theWindowIsReadAndChecked() throws {
        let options = try parse(
            ["--since", "2027-01-14T00:00:00Z", "--only-failures", "--dry-run", "--bundle-id", "com.x"])
        #expect(options.sinceMs == 1_799_884_800_000 && options.untilMs == now)
        #expect(options.onlyFailures && options.dryRun && !options.sandbox && options.bundleId == "com.x")
        let sandbox = try parse(
            ["--since", String(now - 3_600_000), "--until", String(now - 60_000), "--environment", "sandbox"])
        #expect(sandbox.sandbox && sandbox.untilMs == now - 60_000)
        #expect(throws: CommandLineError.helpRequested) { try parse(["--since", String(now - 1), "--help"]) }
    }

    @Test func badWindowsAreRefusedNamingTheProblem() {
        let cases: [([String], String)] = [
            ([], "--since is required"),
            (["--since", "yesterday"], "ISO 8601"),
            (["--since", String(now), "--until", String(now - 1)], "before --until"),
            (["--since", String(now - 181 * 86_400_000)], "180 days"),
            (["--since", String(now - 31 * 86_400_000), "--environment", "sandbox"], "30 days"),
            (["--since", String(now - 1), "--environment", "staging"], "production or sandbox"),
            (["--since", String(now - 1), "--wat"], "unknown argument"),
        ]
        for (arguments, message) in cases {
            do {
                _ = try parse(arguments)
                Issue.record("\(arguments) was accepted")
            } catch {
                #expect(error.description.contains(message), "\(arguments): \(error.description)")
            }
        }
    }
}
