import Synchronization
import ServiceSupport

/// The notifications the fake signed, with their delivery attempts, in the order they were made: what
/// `GET /admin/notifications` lists, passed on (through `observer`) to the fake Server API's Get Notification History.
/// Keeps the most recent `capacity` (4,096 by default; a signed notification is ~12 KB, so ~50 MB at most): under a
/// soak's steady load an unbounded history grew by 450 MB in 30 minutes. Older entries are forgotten, oldest first
/// (a later attempt for a forgotten one is ignored). Thread-safe.
public final class FakeNotificationHistory: Sendable {
    /// How many entries are kept unless told otherwise; the fake Server API's Get Notification History keeps as many
    /// per environment.
    public static let defaultCapacity = 4_096

    /// What changed, for the observer (called outside the lock, on the thread that made the change).
    public enum Change: Sendable {
        case added(Entry)
        case attempted(Entry)
    }

    /// One delivery attempt, as Apple reports it (`sendAttempts[]`).
    public struct Attempt: Sendable, Equatable {
        public var dateMs: Int64
        /// Apple's `sendAttemptResult`: `SUCCESS`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, `TIMED_OUT`, `TLS_ISSUE`,
        /// `SOCKET_ISSUE`, `OTHER`, ...
        public var result: String
        /// The HTTP status answered, when there was an answer.
        public var httpStatus: Int?

        public init(dateMs: Int64, result: String, httpStatus: Int?) {
            self.dateMs = dateMs
            self.result = result
            self.httpStatus = httpStatus
        }

        public var succeeded: Bool { result == "SUCCESS" }
    }

    public struct Entry: Sendable, Equatable {
        public var notificationUUID: String
        public var notificationType: String
        public var subtype: String?
        public var transactionId: String?
        public var originalTransactionId: String?
        public var signedPayload: String
        /// `Production` or `Sandbox`: whose history it is part of.
        public var environment: String
        /// The notification's `signedDate`, epoch ms (what Get Notification History's date window selects on).
        public var signedDateMs: Int64
        public var url: String?
        public var attempts: [Attempt]
        /// True once no retry is left (delivered, or every scheduled attempt failed).
        public var finished: Bool

        public var delivered: Bool { attempts.contains(where: \.succeeded) }

        /// Apple's `sendAttempts`: `[{"attemptDate": ms, "sendAttemptResult": "..."}]`.
        public var sendAttemptsJSON: String {
            "[" + attempts.map { "{\"attemptDate\":\($0.dateMs),\"sendAttemptResult\":\"\($0.result)\"}" }
                .joined(separator: ",") + "]"
        }
    }

    private let entries = Locked<[Entry]>([])
    private let observer: (@Sendable (Change) -> Void)?
    /// The most entries kept.
    public let capacity: Int

    public init(capacity: Int = FakeNotificationHistory.defaultCapacity, observer: (@Sendable (Change) -> Void)? = nil) {
        precondition(capacity > 0, "a notification history keeps at least one entry")
        self.capacity = capacity
        self.observer = observer
    }

    /// Records a signed notification before its first attempt.
    public func add(_ notification: FakeNotification, signedPayload: String, url: String?) {
        let entry = Entry(
            notificationUUID: notification.notificationUUID, notificationType: notification.notificationType,
            subtype: notification.subtype, transactionId: notification.transaction?.transactionId,
            originalTransactionId: notification.transaction?.originalTransactionId, signedPayload: signedPayload,
            environment: notification.environment, signedDateMs: notification.signedDateMs, url: url, attempts: [],
            finished: url == nil)
        let capacity = capacity
        entries.withLock { entries in
            entries.append(entry)
            entries.removeOldest(keeping: capacity)
        }
        observer?(.added(entry))
    }

    func recordAttempt(_ attempt: Attempt, uuid: String, finished: Bool) {
        let updated = entries.withLock { entries -> Entry? in
            guard let index = entries.lastIndex(where: { $0.notificationUUID == uuid }) else { return nil }
            entries[index].attempts.append(attempt)
            entries[index].finished = finished
            return entries[index]
        }
        if let updated { observer?(.attempted(updated)) }
    }

    /// Every entry, oldest first.
    public var all: [Entry] { entries.withLock { $0 } }

    public func entry(uuid: String) -> Entry? {
        entries.withLock { $0.last(where: { $0.notificationUUID == uuid }) }
    }

    /// Forgets everything (`POST /admin/reset`).
    public func reset() {
        entries.withLock { $0.removeAll() }
    }
}

extension Array {
    /// Drops the first elements until at most `count` are left (the oldest, for lists kept in arrival order).
    mutating func removeOldest(keeping count: Int) {
        if self.count > count { removeFirst(self.count - count) }
    }
}
