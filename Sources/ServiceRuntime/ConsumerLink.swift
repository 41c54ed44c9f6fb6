import Kafka
import ServiceSupport
import Synchronization

/// A service's side of its Kafka consumer, the same for every service: the consumer's delegate, which hands
/// messages and rebalances to the service, turns a fatal consumer error into the service's liveness problem, and
/// (with a `Waterline`) pauses fetching while what the service holds is over the high water mark and resumes it
/// once it is down to the low one.
///
/// Built before the consumer (the consumer needs its delegate), then `attach(consumer:)`; the handlers are given at
/// `init`, and the consumer is started only after both, so no event finds either missing.
public final class ConsumerLink: KafkaConsumerDelegate {
    /// What the service does with the consumer's events; each runs on the consumer's poll thread.
    public struct Handlers: Sendable {
        public var received: @Sendable (KafkaMessage) -> Void
        public var assigned: @Sendable ([TopicPartition]) -> Void
        public var revoking: @Sendable ([TopicPartition]) -> Void

        public init(
            received: @escaping @Sendable (KafkaMessage) -> Void,
            assigned: @escaping @Sendable ([TopicPartition]) -> Void = { _ in },
            revoking: @escaping @Sendable ([TopicPartition]) -> Void = { _ in }
        ) {
            self.received = received
            self.assigned = assigned
            self.revoking = revoking
        }
    }

    /// Fetching pauses (every assigned partition) when `level()` reaches `high`, and resumes when it is at or below
    /// `low`; the level is read after each message and on `checkWaterline()`.
    public struct Waterline: Sendable {
        public let high: Int
        public let low: Int
        public let level: @Sendable () -> Int

        /// `low` defaults to half of `high`.
        public init(high: Int, low: Int? = nil, level: @escaping @Sendable () -> Int) {
            self.high = max(high, 1)
            self.low = min(low ?? self.high / 2, self.high - 1)
            self.level = level
        }

        /// What to do at `level` when fetching is (`paused`) or is not paused: pause at or above `high`, resume at
        /// or below `low`, else nothing (between the marks the state stays, so fetching does not flap).
        public func step(level: Int, paused: Bool) -> Step? {
            if !paused, level >= high { return .pause }
            if paused, level <= low { return .resume }
            return nil
        }

        public enum Step: Sendable, Equatable {
            case pause, resume
        }
    }

    private let service: String
    private let logger: Logger
    private let handlers: Locked<Handlers?>
    private let waterline: Waterline?
    private let consumerBox = Locked<KafkaConsumer?>(nil)
    private let paused = Atomic<Bool>(false)
    private let fatal = Locked<String?>(nil)

    /// - Parameters:
    ///   - service: the executable's name, for the message that says to restart it.
    public init(service: String, logger: Logger, waterline: Waterline? = nil, handlers: Handlers? = nil) {
        self.service = service
        self.logger = logger
        self.waterline = waterline
        self.handlers = Locked(handlers)
    }

    /// The handlers, when what they call needs the consumer, which needs the link first (the verifier's engine
    /// drives the consumer); before the consumer starts.
    public func attach(handlers: Handlers) { self.handlers.withLock { $0 = handlers } }

    public func attach(consumer: KafkaConsumer) { consumerBox.withLock { $0 = consumer } }

    /// The consumer, once attached.
    public var consumer: KafkaConsumer? { consumerBox.withLock { $0 } }

    /// The fatal consumer error librdkafka reported, if any: the process is no longer healthy and must be restarted.
    public var fatalProblem: String? { fatal.withLock { $0 } }

    /// `fatalProblem` as a liveness (and readiness) reason.
    public var liveness: String? { fatalProblem.map { "fatal Kafka error: \($0)" } }

    /// Whether fetching is paused by the waterline.
    public var isPausedByWaterline: Bool { paused.load(ordering: .relaxed) }

    /// Pauses or resumes fetching as the waterline's level says (after the service took work out).
    public func checkWaterline() {
        guard let waterline, let consumer else { return }
        let level = waterline.level()
        switch waterline.step(level: level, paused: paused.load(ordering: .relaxed)) {
        case .pause:
            // The exchange makes one caller (poll thread or worker) do it when both see the same level.
            guard !paused.exchange(true, ordering: .relaxed) else { return }
            consumer.pause(consumer.assignment)
            logger.debug("fetching paused: over the high water mark", ["buffered": .int(level)])
        case .resume:
            guard paused.exchange(false, ordering: .relaxed) else { return }
            // Every partition was paused: nothing wakes librdkafka's fetchers but the resume's own request.
            consumer.resume(consumer.assignment, wakingFetchers: true)
            logger.debug("fetching resumed: under the low water mark", ["buffered": .int(level)])
        case nil:
            break
        }
    }

    private var currentHandlers: Handlers? { handlers.withLock { $0 } }

    // MARK: KafkaConsumerDelegate (poll thread)

    public func consumer(_ consumer: KafkaConsumer, didReceive message: KafkaMessage) {
        currentHandlers?.received(message)
        if let waterline, !paused.load(ordering: .relaxed), waterline.level() >= waterline.high {
            checkWaterline()
        }
    }

    public func consumer(_ consumer: KafkaConsumer, didAssign partitions: [TopicPartition]) {
        // A pause does not survive a rebalance.
        if paused.load(ordering: .relaxed) { consumer.pause(partitions) }
        currentHandlers?.assigned(partitions)
    }

    public func consumer(_ consumer: KafkaConsumer, willRevoke partitions: [TopicPartition]) {
        currentHandlers?.revoking(partitions)
    }

    public func consumer(_ consumer: KafkaConsumer, didFail error: KafkaError) {
        if error.isFatal {
            fatal.withLock { $0 = error.message }
            logger.error("fatal Kafka consumer error: restart the \(service)", ["error": .string(error.message)])
        } else {
            logger.warning("Kafka consumer error", ["error": .string(error.message), "code": .int(Int(error.code.rawValue))])
        }
    }
}
