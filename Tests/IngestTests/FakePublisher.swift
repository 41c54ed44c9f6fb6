import Ingest
import Kafka
import Synchronization
import ServiceSupport

/// A `SubmissionPublisher` that records what it is given and answers as the test says.
final class FakePublisher: SubmissionPublisher {
    enum Behaviour: Sendable {
        /// Delivery reported at once.
        case acknowledge
        /// Completions kept until the test calls `complete`.
        case hold
        /// Delivery reported as failed.
        case fail(KafkaError)
        /// Refused at enqueue.
        case refuse(KafkaError)
    }

    struct Published: Sendable {
        let topic: String
        let key: [UInt8]?
        let value: [UInt8]
        let headers: [KafkaHeader]
    }

    typealias Completion = @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void

    private let behaviour: Locked<Behaviour>
    private let connected = Atomic<Bool>(true)
    private let records = Locked<[Published]>([])
    private let held = Locked<[Completion]>([])

    init(_ behaviour: Behaviour = .acknowledge) {
        self.behaviour = Locked(behaviour)
    }

    func setBehaviour(_ newValue: Behaviour) { behaviour.withLock { $0 = newValue } }
    func setConnected(_ value: Bool) { connected.store(value, ordering: .relaxed) }

    var isConnected: Bool { connected.load(ordering: .relaxed) }
    var published: [Published] { records.withLock { $0 } }
    var heldCount: Int { held.withLock { $0.count } }

    func publish(
        topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void
    ) throws(KafkaError) {
        let current = behaviour.withLock { $0 }
        if case .refuse(let error) = current { throw error }
        let offset = records.withLock { records in
            records.append(Published(topic: topic, key: key, value: value, headers: headers))
            return Int64(records.count - 1)
        }
        switch current {
        case .acknowledge: completion(.success(KafkaDeliveryReport(topic: topic, partition: 0, offset: offset)))
        case .hold: held.withLock { $0.append(completion) }
        case .fail(let error): completion(.failure(error))
        case .refuse: break
        }
    }

    /// Reports delivery for every held message.
    func completeHeld() {
        let completions = held.withLock { held in
            defer { held = [] }
            return held
        }
        for (index, completion) in completions.enumerated() {
            completion(.success(KafkaDeliveryReport(topic: "t", partition: 0, offset: Int64(index))))
        }
    }
}
