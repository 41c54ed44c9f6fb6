#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value that threads share, protected by a mutex: the project's one lock.
///
/// Why not `Synchronization.Mutex`: on Linux it locks with futexes inside the prebuilt Swift runtime, where
/// ThreadSanitizer cannot see the acquire and release, so every access it protects is reported as a race and a TSan
/// run (`make test-sanitize`) could find nothing else. This lock is a `pthread_mutex_t`, which TSan intercepts, at the
/// same cost (an uncontended lock and unlock are one atomic each, no system call). The mutex lives in the same
/// allocation as the value (one `ManagedBuffer`), so creating one costs a single allocation.
///
/// Invariant behind `@unchecked Sendable`: the value is read and written only inside `withLock`, with the mutex held,
/// and it is `Sendable`, so what `withLock` hands out may cross threads.
public final class Locked<Value: Sendable>: @unchecked Sendable {
    @usableFromInline let storage: Storage

    public init(_ initialValue: Value) {
        storage = Storage.create(initialValue)
    }

    /// Runs `body` with the mutex held and the value to read or change. Keep `body` short: it blocks other threads.
    @inlinable
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        try storage.withLock(body)
    }

    @usableFromInline
    final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        static func create(_ value: Value) -> Storage {
            let buffer = Storage.create(minimumCapacity: 1) { _ in value }
            buffer.withUnsafeMutablePointerToElements { mutex in
                // A plain (non-recursive) mutex: the default attributes.
                let result = pthread_mutex_init(mutex, nil)
                precondition(result == 0, "pthread_mutex_init failed: \(result)")
            }
            // `create` is declared to return the ManagedBuffer base type; the dynamic type is Storage.
            return unsafeDowncast(buffer, to: Storage.self)
        }

        @inlinable
        func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
            try withUnsafeMutablePointers { (value, mutex) throws(E) -> Result in
                pthread_mutex_lock(mutex)
                defer { pthread_mutex_unlock(mutex) }
                return try body(&value.pointee)
            }
        }

        // The header (the value) is destroyed by ManagedBuffer itself; the element (the mutex) is ours to destroy.
        deinit {
            withUnsafeMutablePointerToElements { mutex in
                _ = pthread_mutex_destroy(mutex)
            }
        }
    }
}
