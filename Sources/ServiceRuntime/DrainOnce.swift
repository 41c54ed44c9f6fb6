import Synchronization

/// The guard that makes a service's `drain(within:)` idempotent: the first call claims it and drains, every later
/// (or concurrent) call returns at once.
public final class DrainOnce: Sendable {
    private let claimed = Atomic<Bool>(false)

    public init() {}

    /// True exactly once: for the first caller.
    public func claim() -> Bool {
        !claimed.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// Whether `claim()` was called.
    @_spi(Testing) public var isClaimed: Bool { claimed.load(ordering: .acquiring) }
}
