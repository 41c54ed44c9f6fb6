import CRdKafka
import Glibc

/// Owns one `rd_kafka_t` and guards it against use after destruction.
///
/// Invariants: `pointer` is valid while `alive`; every caller other than the owning poll thread reaches it through
/// `withClient`, which holds the read lock for the duration of its C call, so `retire` (write lock) cannot flip
/// `alive` while a call is in progress, and nothing reaches the pointer after `retire` returned it for destruction.
/// The callback context passed to librdkafka as the opaque stays retained until `destroy`.
final class RDKafkaHandle: @unchecked Sendable {
    /// For the owning thread (poll loop, close path), which alone decides when to retire.
    let pointer: OpaquePointer
    private let context: Unmanaged<RDKafkaCallbackContext>
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    private var alive = true

    init(pointer: OpaquePointer, context: Unmanaged<RDKafkaCallbackContext>) {
        self.pointer = pointer
        self.context = context
        self.lock = .allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` with the client unless it was retired (then returns nil).
    func withClient<R, E: Error>(_ body: (OpaquePointer) throws(E) -> R) throws(E) -> R? {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        guard alive else { return nil }
        return try body(pointer)
    }

    var isAlive: Bool {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return alive
    }

    /// Marks the handle unusable for everyone else. Returns true the first time only.
    func retire() -> Bool {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        guard alive else { return false }
        alive = false
        return true
    }

    /// Destroys the client, then releases the callback context (librdkafka may call back until destroy returns).
    /// Call once, after `retire` returned true.
    func destroy() {
        rd_kafka_destroy(pointer)
        context.release()
    }
}
