import ReceiptModel

/// What an output record is, for metrics and logs.
public enum OutgoingRecordKind: String, Sendable {
    case result
    case retry
    case deadLetter = "dlq"
    /// A purchase event made from a verified App Store Server Notification.
    case event
}

/// What an output record holds, typed: what the verifier needs to know about a record it wrote (the DLQ reason for
/// metrics, the retry or DLQ record to rewrite when Kafka refuses it as too large) is read here, never decoded again
/// from its own bytes or headers.
public enum OutgoingPayload: Sendable, Equatable {
    case result(VerificationResult)
    case retry(RetryRecord)
    case deadLetter(DeadLetterRecord)
    case event(PurchaseEvent)
}

/// One record the verifier produces (a result, a retry record, a DLQ record or a purchase event).
public struct OutgoingRecord: Sendable, Equatable {
    /// The record, typed; `value` is its encoding.
    public let payload: OutgoingPayload
    public let topic: String
    public let key: [UInt8]?
    public let value: [UInt8]
    /// Header name and UTF-8 value pairs (`submission-id`, `outcome`, `dlq-reason`, `event-id`, `event-type`).
    public let headers: [(name: String, value: String)]

    public init(
        _ payload: OutgoingPayload, topic: String, key: [UInt8]?, value: [UInt8],
        headers: [(name: String, value: String)]
    ) {
        self.payload = payload
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
    }

    public var kind: OutgoingRecordKind {
        switch payload {
        case .result: .result
        case .retry: .retry
        case .deadLetter: .deadLetter
        case .event: .event
        }
    }

    public func header(_ name: String) -> String? {
        headers.first(where: { $0.name == name })?.value
    }

    public static func == (lhs: OutgoingRecord, rhs: OutgoingRecord) -> Bool {
        lhs.kind == rhs.kind && lhs.topic == rhs.topic && lhs.key == rhs.key && lhs.value == rhs.value
            && lhs.headers.count == rhs.headers.count
            && zip(lhs.headers, rhs.headers).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}
