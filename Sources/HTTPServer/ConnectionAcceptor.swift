import CMicroHTTPD
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ServiceSupport
import Synchronization

/// The server's listening socket and the thread that accepts on it, handing each connection to the next of the
/// server's libmicrohttpd daemons in turn (`MHD_add_connection`), each daemon one thread with its own epoll set.
///
/// Why not libmicrohttpd's own thread pool: there every worker accepts from the shared socket and keeps what it
/// accepted for the connection's life, and a worker that wakes accepts up to ten in a row; a client opening many
/// keep-alive connections at once (a load balancer, wrk) ends up mostly on one worker, which then serves most of the
/// requests on one core while the others idle (bench/ingest.sh showed one worker with five times the other's CPU,
/// or all of it). Handing connections out in turn spreads them evenly.
///
/// The connection limits are counted here, across the daemons, as libmicrohttpd's pool counted them across its
/// workers: a connection over `connectionLimit` or over `perIPConnectionLimit` for its address is closed at once,
/// nothing read, and counted in `ConnectionSweeper.refused`. A connection counts from its accept until
/// libmicrohttpd's "closed" notification (`ConnectionCounts.closed`).
final class ConnectionAcceptor: Sendable {
    let socket: Int32
    let port: UInt16
    private let core: ServerCore
    private let connectionLimit: Int
    private var counts: ConnectionCounts { core.connectionCounts }
    private let stopping = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    private let finished = Gate()

    /// Binds and listens on `address` (the daemons are given with `start`).
    /// - Throws: `HTTPServerError` when the address cannot be bound (in use, not local, not permitted).
    init(address: SocketAddress, listen: ListenAddress, core: ServerCore, connectionLimit: Int) throws {
        var address = address
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let socket = Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw HTTPServerError("cannot create a socket to listen on \(listen)") }
        var one: Int32 = 1
        _ = setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let length = socklen_t(address.isIPv6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        let bound = address.withSockaddr { bind(socket, $0.assumingMemoryBound(to: sockaddr.self), length) }
        guard bound == 0, Glibc.listen(socket, SOMAXCONN) == 0 else {
            Glibc.close(socket)
            throw HTTPServerError(
                "cannot listen on \(listen): the address is in use, not local, or not permitted")
        }
        var local = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &localLength) }
        }
        self.port = withUnsafeBytes(of: local) { bytes in
            // sin_port and sin6_port sit at the same offset, in network order.
            UInt16(bigEndian: bytes.load(fromByteOffset: MemoryLayout<sa_family_t>.size, as: UInt16.self))
        }
        self.socket = socket
        self.core = core
        self.connectionLimit = connectionLimit
    }

    /// Starts accepting, handing connections to `daemons` in turn.
    func start(daemons: [SendableOpaquePointer]) {
        started.store(true, ordering: .releasing)
        Thread.startNamed("http-acceptor") { [self] in
            acceptUntilStopped(daemons: daemons)
            finished.open()
        }
    }

    /// Stops accepting and closes the listening socket (waits for the accepting thread). Idempotent.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = shutdown(socket, Int32(SHUT_RDWR))
        // The thread leaves `accept` at the shutdown; the socket is closed only once it no longer uses it.
        if started.load(ordering: .acquiring) { _ = finished.wait(within: .seconds(5)) }
        Glibc.close(socket)
    }

    private func acceptUntilStopped(daemons: [SendableOpaquePointer]) {
        var next = 0
        let perIPLimit = core.configuration.perIPConnectionLimit
        while !stopping.load(ordering: .acquiring) {
            var peer = sockaddr_storage()
            var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(socket, $0, &peerLength)
                }
            }
            guard client >= 0 else {
                if stopping.load(ordering: .acquiring) { return }
                let error = errno
                // Out of descriptors: the pending connection stays in the backlog; wait for some to close.
                if error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM { usleep(10_000) }
                continue
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            guard counts.open.load(ordering: .relaxed) < connectionLimit else {
                refuse(client)
                continue
            }
            var address: String?
            if perIPLimit > 0 {
                let text = Self.addressText(&peer)
                let admitted = counts.byAddress.withLock { counts -> Bool in
                    let current = counts[text] ?? 0
                    guard current < perIPLimit else { return false }
                    counts[text] = current + 1
                    return true
                }
                guard admitted else {
                    refuse(client)
                    continue
                }
                address = text
            }
            counts.open.add(1, ordering: .relaxed)
            let daemon = daemons[next % daemons.count].pointer
            next &+= 1
            let added: MHD_Result = withUnsafePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    MHD_add_connection(daemon, client, $0, peerLength)
                }
            }
            // On failure libmicrohttpd closed the socket and will not report it.
            if added != MHD_Result.YES { counts.closed(address: address) }
        }
    }

    private func refuse(_ client: Int32) {
        Glibc.close(client)
        core.connections.refused.add(1, ordering: .relaxed)
    }

    /// The client's address as `cmhd_client_address` writes it (the key of the per-IP counts on both sides).
    static func addressText(_ address: UnsafeMutablePointer<sockaddr_storage>) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            let written = address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                cmhd_sockaddr_text($0, buffer.baseAddress, socklen_t(buffer.count))
            }
            return written == 0 ? String(cString: buffer.baseAddress!) : ""
        }
    }
}

/// Connections handed to the daemons and not yet reported closed, in all and by client address (the latter only with
/// a per-IP limit): what `ConnectionAcceptor` checks the limits against.
final class ConnectionCounts: Sendable {
    let open = Atomic<Int>(0)
    let byAddress = Locked<[String: Int]>([:])

    /// libmicrohttpd's "closed" notification of a connection the acceptor handed over (`address`: its key in
    /// `byAddress`, nil when not counted by address).
    func closed(address: String?) {
        open.subtract(1, ordering: .relaxed)
        guard let address else { return }
        byAddress.withLock { counts in
            let remaining = (counts[address] ?? 1) - 1
            counts[address] = remaining > 0 ? remaining : nil
        }
    }
}
