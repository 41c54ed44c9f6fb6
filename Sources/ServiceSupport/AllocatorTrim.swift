import CMalloc
import Dispatch

/// Gives the allocator's free memory back to the system at intervals. glibc keeps memory that was freed inside its
/// heaps (it returns only the top of a heap), so a service whose heap in use rises and falls (bursts, Kafka's
/// buffers, a cache turning over) keeps the resident pages of the highest point it ever reached; that high-water
/// mark creeps up slowly, and a soak cannot tell the creep from a leak. `malloc_trim(0)` releases every whole free
/// page of every arena (madvise), so resident memory follows the heap in use.
public final class AllocatorTrim: Sendable {
    private let timer: SendableDispatchTimer

    /// Trims every `interval` when the allocator keeps at least `minimumFreeBytes` free (below that it is not worth
    /// the walk over the arenas).
    public init(every interval: Duration = .seconds(30), minimumFreeBytes: Int = 8 << 20) {
        timer = .repeating(
            every: interval, leeway: .seconds(1), on: DispatchQueue(label: "allocator-trim", qos: .utility))
        timer.start {
            if mallinfo2().fordblks >= minimumFreeBytes { Self.trim() }
        }
    }

    deinit {
        timer.source.cancel()
    }

    /// Releases the free pages now; true when some memory went back to the system.
    @discardableResult
    public static func trim() -> Bool {
        malloc_trim(0) == 1
    }
}
