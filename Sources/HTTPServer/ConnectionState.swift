import CMicroHTTPD
#if canImport(Glibc)
import Glibc
#endif
import ServiceSupport

/// Where one connection is in its requests, and until when it may stay there: the server's own deadlines, which
/// libmicrohttpd cannot keep (its idle timeout restarts with every byte received, so a client trickling a byte every
/// few seconds would hold a connection forever).
///
/// - Waiting for a request head: until `requestHeadTimeout` after connecting; on a kept-alive connection, until
///   `idleTimeoutSeconds` after the previous response. Bytes trickling in do not extend it.
/// - Receiving a body: until `bodyTimeout` after the head.
/// - With the handler, then writing the response: no deadline here (the handler's is `responseDeadline`, the client
///   reading the response is bounded by libmicrohttpd's idle timeout).
///
/// `ConnectionSweeper` shuts down the socket of a connection whose deadline passed; libmicrohttpd then sees the
/// connection end and closes it as if the client had gone.
///
/// Threading: the connection's libmicrohttpd thread moves it between phases, the sweeper expires it, and
/// libmicrohttpd's "connection closed" notification (`markClosed`) ends it, all under `shared`'s lock. libmicrohttpd
/// sends that notification before it closes the socket, so the sweeper never shuts down a socket number that already
/// belongs to another connection.
final class ConnectionState: Sendable {
    enum Phase: Sendable, Equatable {
        case awaitingHead
        case receivingBody
        case handling
        /// The sweeper shut the socket down; libmicrohttpd has not reported the close yet.
        case timedOut
        case closed
    }

    private struct Shared {
        var phase: Phase
        /// `SystemTime.monotonicNanoseconds` after which the phase is over; 0 = none.
        var deadline: UInt64
    }

    let socket: Int32
    /// The client's address as `ConnectionCounts.byAddress` counts it (nil without a per-IP limit).
    let countedAddress: String?
    private let shared: Locked<Shared>

    init(socket: Int32, headDeadline: UInt64, countedAddress: String? = nil) {
        self.socket = socket
        self.countedAddress = countedAddress
        self.shared = Locked(Shared(phase: .awaitingHead, deadline: headDeadline))
    }

    /// Connection thread: moves to `phase` until `deadline` (0 = none). Returns false, changing nothing, when the
    /// sweeper already shut the connection down: the caller must not go on with the request.
    @discardableResult
    func enter(_ phase: Phase, deadline: UInt64) -> Bool {
        shared.withLock { shared in
            guard shared.phase != .timedOut, shared.phase != .closed else { return false }
            shared.phase = phase
            shared.deadline = deadline
            return true
        }
    }

    /// Sweeper: when the connection waits for a head or a body past its deadline, shuts its socket down (both ways)
    /// and returns the phase it was in; otherwise nil.
    func expireIfDue(now: UInt64) -> Phase? {
        shared.withLock { shared in
            guard shared.phase == .awaitingHead || shared.phase == .receivingBody, shared.deadline != 0,
                shared.deadline <= now
            else { return nil }
            let expired = shared.phase
            shared.phase = .timedOut
            // The socket is still this connection's: `markClosed` (before libmicrohttpd closes it) takes this lock.
            _ = shutdown(socket, Int32(SHUT_RDWR))
            return expired
        }
    }

    /// libmicrohttpd's "connection closed" notification, before it closes the socket: nothing touches it any more.
    func markClosed() {
        shared.withLock { $0.phase = .closed }
    }

    var phase: Phase {
        shared.withLock { $0.phase }
    }
}
