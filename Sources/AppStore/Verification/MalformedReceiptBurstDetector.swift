/// Tells an Apple incident from a malformed receipt when verifyReceipt answers 21002.
///
/// Apple documents 21002 as "the receipt data was malformed *or* the service experienced a temporary issue". One
/// receipt answered 21002 again and again is malformed; 21002 for most receipts at once is Apple failing, and judging
/// those receipts `invalid_receipt` would refuse money that is owed. The detector keeps the last `windowSize`
/// answers that carried a status (process-wide, any receipt), younger than `maximumAge`, and reports a burst while
///
/// - at least `minimumAnswers` answers are in the window,
/// - at least `burstShare` of them are 21002, and
/// - those 21002 answers came for at least `minimumReceipts` distinct receipts.
///
/// During a burst the verifier treats 21002 like a 5xx (no verdict; retried later). A burst ends only when Apple
/// reads receipts again (other answers bring the 21002 share below `burstShare`), never by the passing of time nor by
/// the window filling with the 21002s of fewer receipts: while the verifier's breaker holds work back, the few probes
/// (often for one receipt) must still count as part of the outage. Outside a burst,
/// answers older than `maximumAge` are forgotten, so that scattered 21002s of a quiet day never add up to one.
///
/// Pure and thread-free: the caller serializes calls and passes the time in.
public struct MalformedReceiptBurstDetector: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var windowSize: Int
        public var minimumAnswers: Int
        public var burstShare: Double
        public var minimumReceipts: Int
        public var maximumAge: Duration

        /// Defaults: of the last 100 status answers of the past minute, at least 20, half or more 21002, for at least
        /// 5 different receipts.
        public init(
            windowSize: Int = 100, minimumAnswers: Int = 20, burstShare: Double = 0.5, minimumReceipts: Int = 5,
            maximumAge: Duration = .seconds(60)
        ) {
            precondition(windowSize >= 1 && minimumAnswers >= 1 && minimumAnswers <= windowSize)
            precondition(burstShare > 0 && burstShare <= 1 && minimumReceipts >= 1)
            self.windowSize = windowSize
            self.minimumAnswers = minimumAnswers
            self.burstShare = burstShare
            self.minimumReceipts = minimumReceipts
            self.maximumAge = maximumAge
        }
    }

    /// One answer that carried a verifyReceipt status.
    public enum Answer: Sendable, Equatable {
        /// 21002, for the receipt identified by `receipt` (any stable identity of the receipt data, e.g. its hash).
        case malformed(receipt: Int)
        /// Any other status (0, 21007, 21003...): Apple read a receipt.
        case other
    }

    /// A change of state, for logs and metrics.
    public enum Transition: Sendable, Equatable {
        case started
        case ended
    }

    private struct Entry {
        var atNs: UInt64
        /// Nil for `.other`.
        var receipt: Int?
    }

    public let configuration: Configuration
    /// Whether 21002 answers are an outage now (as of the last `record`).
    public private(set) var isBurst = false
    private var ring: [Entry?]
    private var oldest = 0
    private var count = 0
    private var malformed = 0
    /// 21002 answers in the window per receipt.
    private var receipts: [Int: Int] = [:]

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        ring = Array(repeating: nil, count: configuration.windowSize)
    }

    /// Answers in the window, and how many of them are 21002 (for metrics and logs).
    public var answersInWindow: Int { count }
    public var malformedInWindow: Int { malformed }
    /// Distinct receipts among the window's 21002 answers.
    public var malformedReceiptsInWindow: Int { receipts.count }

    /// Whether `receipt`'s repeated 21002 may be judged a malformed receipt now: never during a burst, and not while
    /// one may be forming either, that is with fewer than `minimumAnswers` answers in the window, at least
    /// `burstShare` of them 21002, some for other receipts. A verifier that starts (or wakes after a quiet minute)
    /// inside an Apple incident sees its first receipts answer 21002 before the window holds enough answers to call it
    /// a burst; judging them then would refuse money that is owed. One receipt alone answered 21002 on a quiet day is
    /// still judged at once.
    public func mayJudgeMalformed(receipt: Int) -> Bool {
        if isBurst { return false }
        if count >= configuration.minimumAnswers { return true }
        let otherReceiptsAnswered21002 = receipts.keys.contains { $0 != receipt }
        let mostly21002 = Double(malformed) >= configuration.burstShare * Double(count)
        return !(otherReceiptsAnswered21002 && mostly21002)
    }

    /// Adds an answer received at monotonic time `nowNs` and re-evaluates. Returns the transition, if any.
    public mutating func record(_ answer: Answer, nowNs: UInt64) -> Transition? {
        dropExpired(nowNs: nowNs)
        if count == configuration.windowSize { removeOldest() }
        var receipt: Int?
        if case .malformed(let id) = answer { receipt = id }
        ring[(oldest + count) % configuration.windowSize] = Entry(atNs: nowNs, receipt: receipt)
        count += 1
        if let receipt {
            malformed += 1
            receipts[receipt, default: 0] += 1
        }
        return evaluate()
    }

    private mutating func evaluate() -> Transition? {
        let mostly21002 = Double(malformed) >= configuration.burstShare * Double(count)
        // Starting needs enough answers for enough receipts; ending needs readable answers and nothing else. While
        // the breaker holds work back, the window fills with probes of one or two receipts: that is still the outage.
        let burst =
            isBurst
            ? mostly21002
            : count >= configuration.minimumAnswers && mostly21002
                && receipts.count >= configuration.minimumReceipts
        defer { isBurst = burst }
        if burst == isBurst { return nil }
        return burst ? .started : .ended
    }

    private mutating func dropExpired(nowNs: UInt64) {
        guard !isBurst else { return }
        let ageNs = configuration.maximumAge.clampedNanoseconds
        while count > 0, let entry = ring[oldest], nowNs >= entry.atNs, nowNs - entry.atNs > ageNs {
            removeOldest()
        }
    }

    private mutating func removeOldest() {
        guard count > 0, let entry = ring[oldest] else { return }
        if let receipt = entry.receipt {
            malformed -= 1
            let left = (receipts[receipt] ?? 1) - 1
            receipts[receipt] = left > 0 ? left : nil
        }
        ring[oldest] = nil
        oldest = (oldest + 1) % configuration.windowSize
        count -= 1
    }
}
