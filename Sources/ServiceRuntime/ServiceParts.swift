import HTTPServer
import ServiceSupport

/// The parts of a service that must be closed when it stops (Kafka clients, the App Store client, a database
/// connection, an endpoint), registered as they are made. A failed start closes what was made so far and a drain
/// ends by closing all of them, in both cases last made first: each part closes after everything made after it
/// (which may use it) and before everything made before it (which it may use), as swift-service-lifecycle's
/// `ServiceGroup` shuts its services down in the reverse of their order. So the order of shutdown is the order of
/// construction, written once, and an error at any step of `init` needs no unwinding code of its own.
///
/// Each part has a bound: how long its close may wait (a Kafka client's close waits for the brokers at most that
/// long); `bound` is their sum, what closing adds to a drain's own bound. Parts that do not wait have bound zero.
public final class ServiceParts: Sendable {
    /// One registered part.
    public struct Part: Sendable {
        /// What it is, for the log and the tests ("Kafka consumer").
        public let name: String
        /// How long its close may take.
        public let bound: Duration
        /// Closes it within the bound it is given; false when it gave something up at the bound (a flush that did
        /// not finish).
        let close: @Sendable (Duration) -> Bool
    }

    /// What `closeAll` did.
    public struct Closing: Sendable, Equatable {
        /// The parts closed, in the order they were closed (last made first).
        public var closed: [String] = []
        /// Those of them that gave something up at their bound.
        public var gaveUp: [String] = []

        /// Whether every part closed completely.
        public var isComplete: Bool { gaveUp.isEmpty }
    }

    private let parts = Locked<[Part]>([])

    public init() {}

    /// Registers a part just made: `close` is called once, with `bound`, when the service stops or its start fails.
    /// - Parameter close: closes the part within the bound it is given; false when it gave something up.
    public func add(_ name: String, bound: Duration, close: @escaping @Sendable (Duration) -> Bool) {
        parts.withLock { $0.append(Part(name: name, bound: bound, close: close)) }
    }

    /// Registers a part whose close does not wait (bound zero).
    public func add(_ name: String, close: @escaping @Sendable () -> Void) {
        add(name, bound: .zero) { _ in
            close()
            return true
        }
    }

    /// The parts registered and not closed yet, first made first.
    public var registered: [Part] { parts.withLock { $0 } }

    /// The sum of the registered parts' bounds: how long `closeAll` may take.
    public var bound: Duration { registered.reduce(.zero) { $0 + $1.bound } }

    /// Closes every registered part, last made first, each within its own bound, and forgets it: a later call
    /// closes only what was registered since (nothing, once a service stopped). A part registered while this runs
    /// is closed by it too, first.
    @discardableResult
    public func closeAll() -> Closing {
        var closing = Closing()
        while let part = parts.withLock({ $0.popLast() }) {
            closing.closed.append(part.name)
            if !part.close(part.bound) { closing.gaveUp.append(part.name) }
        }
        return closing
    }
}

/// The health an endpoint answers when the endpoint is made before what it reports on: a service makes its
/// health/metrics endpoint among its first parts (so the endpoint, closed in reverse, serves until the end of a
/// drain) and attaches the health once the parts it reads exist, before the endpoint starts.
public final class DeferredHealth: Sendable {
    private let source = Locked<(@Sendable () -> Health)?>(nil)

    public init() {}

    /// Gives the health to report from now on.
    public func attach(_ health: @escaping @Sendable () -> Health) {
        source.withLock { $0 = health }
    }

    /// The attached health, or not ready ("starting") before it was attached.
    public var current: Health {
        source.withLock { $0 }?() ?? Health(readiness: "starting")
    }
}

extension HTTPServer {
    /// `start()`, a failure to bind being the service's startup error that names the setting which gave `address`.
    public func start(listening setting: String, _ address: ListenAddress) throws(ServiceStartupError) {
        do {
            try start()
        } catch {
            throw ServiceStartupError("cannot listen on \(setting) \(address): \(error)")
        }
    }
}
