import CMicroHTTPD
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ServiceSupport
import Synchronization

/// A small HTTP/1.1 server over libmicrohttpd: `threadCount` daemons of one epoll thread each, connections handed to
/// them in turn by one accepting thread (`ConnectionAcceptor`), keep-alive, limits on
/// connections, header and body size, and requests held open (suspended, holding no thread) until the handler
/// responds from whatever thread finished the work.
///
/// Lifecycle: `init` -> `start()` -> `close()`. `close` is idempotent and also runs when the server is released.
public final class HTTPServer: Sendable {
    private struct State {
        // The daemon pointer is only used under the lock that holds this state, or after being taken out of it by
        // `close`, which then owns it exclusively.
        var daemons: [SendableOpaquePointer] = []
        var acceptor: ConnectionAcceptor?
        var port: UInt16 = 0
        var stopped = false
    }

    private let core: ServerCore
    private let state = Locked(State())

    /// - Parameters:
    ///   - onResponse: called on the serving thread for every response queued, including the ones the server
    ///     sends itself (413, deadline 503); keep it cheap (metrics).
    public init(
        configuration: HTTPServerConfiguration, handler: any HTTPHandler, logger: Logger,
        onResponse: (@Sendable (HTTPResponseEvent) -> Void)? = nil
    ) {
        self.core = ServerCore(
            configuration: configuration, handler: handler, logger: logger, onResponse: onResponse)
    }

    deinit {
        close()
    }

    /// Binds and starts serving.
    /// - Throws: `HTTPServerError` when the address is invalid or cannot be bound (in use, no permission), or when
    ///   called twice.
    public func start() throws {
        let configuration = core.configuration
        let address = try SocketAddress(configuration.listen)
        // No listening socket of libmicrohttpd's: `ConnectionAcceptor` accepts and hands connections out in turn.
        var flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ERROR_LOG.rawValue | MHD_USE_NO_LISTEN_SOCKET.rawValue
        if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        let coreContext = Unmanaged.passUnretained(core).toOpaque()

        try state.withLock { state in
            guard state.daemons.isEmpty, !state.stopped else {
                throw HTTPServerError("the HTTP server was already started")
            }
            let connectionLimit = FileDescriptorBudget.apply(
                connectionLimit: configuration.connectionLimit, logger: core.logger)
            let acceptor = try ConnectionAcceptor(
                address: address, listen: configuration.listen, core: core, connectionLimit: connectionLimit)
            // libmicrohttpd answers a head that does not fit in the connection's memory 431 itself; the server's own
            // limit (`maxHeaderBytes`, checked from the head) must come first.
            let connectionMemory = max(
                configuration.connectionMemoryLimitBytes, configuration.maxHeaderBytes + Self.connectionMemoryBeyondHead)
            // The logger goes first so that libmicrohttpd reports option errors through it too. The connection limits
            // are the acceptor's (counted across the daemons); each daemon could hold them all.
            let options: [CVarArg] = [
                MHD_OPTION.EXTERNAL_LOGGER.rawValue,
                CVarArgPointer.function(MHDCallbacks.errorLogger), Int(bitPattern: coreContext),
                MHD_OPTION.CONNECTION_LIMIT.rawValue, UInt32(clamping: connectionLimit),
                MHD_OPTION.CONNECTION_TIMEOUT.rawValue, UInt32(clamping: configuration.idleTimeoutSeconds),
                MHD_OPTION.CONNECTION_MEMORY_LIMIT.rawValue, UInt(clamping: connectionMemory),
                MHD_OPTION.NOTIFY_COMPLETED.rawValue,
                CVarArgPointer.function(MHDCallbacks.requestCompleted), Int(bitPattern: coreContext),
                MHD_OPTION.NOTIFY_CONNECTION.rawValue,
                CVarArgPointer.function(MHDCallbacks.connectionNotification), Int(bitPattern: coreContext),
                // Paths and query arguments as sent: decoded in Swift, never cut at a decoded NUL (`PercentEncoding`).
                MHD_OPTION.UNESCAPE_CALLBACK.rawValue, CVarArgPointer.function(MHDCallbacks.keepEscaped), Int(0),
                MHD_OPTION.END.rawValue,
            ]
            var daemons: [SendableOpaquePointer] = []
            for _ in 0..<max(1, configuration.threadCount) {
                let daemon = withVaList(options) { arguments in
                    MHD_start_daemon_va(flags, 0, nil, nil, MHDCallbacks.accessHandler, coreContext, arguments)
                }
                guard let daemon else {
                    for started in daemons { MHD_stop_daemon(started.pointer) }
                    acceptor.stop()
                    throw HTTPServerError("cannot start the HTTP server's threads on \(configuration.listen)")
                }
                daemons.append(SendableOpaquePointer(daemon))
            }
            acceptor.start(daemons: daemons)
            state.daemons = daemons
            state.acceptor = acceptor
            state.port = acceptor.port
        }
        core.logger.info(
            "HTTP server listening",
            ["address": .string(configuration.listen.host), "port": .int(Int(port)),
             "threads": .int(configuration.threadCount)])
    }

    /// Connection memory libmicrohttpd needs beyond the request head: the read buffer for the body and the response
    /// headers (measured: with less, heads near `maxHeaderBytes` get libmicrohttpd's own 431).
    static let connectionMemoryBeyondHead = 8 * 1024

    /// Connections open, accepted, refused and closed past their deadlines.
    public var connectionStatistics: HTTPConnectionStatistics {
        let connections = core.connections
        return HTTPConnectionStatistics(
            open: connections.openCount, accepted: connections.accepted.load(ordering: .relaxed),
            refused: connections.refused.load(ordering: .relaxed),
            headTimeouts: connections.headTimeouts.load(ordering: .relaxed),
            bodyTimeouts: connections.bodyTimeouts.load(ordering: .relaxed))
    }

    /// The bound port (useful with port 0); 0 before `start`.
    public var port: UInt16 {
        state.withLock { $0.port }
    }

    /// Requests handed to the handler and not answered yet.
    public var requestsAwaitingResponse: Int {
        core.awaitingResponse.load(ordering: .relaxed)
    }

    /// Body bytes held for requests still being received (counted as they arrive), across all connections; at most
    /// `maxBufferedBodyBytes`.
    public var bufferedBodyBytes: Int {
        core.bufferedBodyBytes.load(ordering: .relaxed)
    }

    /// Requests answered `busyResponse` because their body did not fit under `maxBufferedBodyBytes`, since start.
    public var busyRefusals: Int {
        core.busyRefusals.load(ordering: .relaxed)
    }

    /// Gives requests waiting on their handler up to `stopGracePeriod` to be answered, answers the rest 503, then
    /// closes every connection and the listening socket. Meanwhile every new request, on an open keep-alive connection
    /// or a new one, is answered 503 with `Retry-After` and `Connection: close` (the service's readiness is false by
    /// then, so load balancers send nothing new). Blocks the caller; idempotent.
    ///
    /// The daemon is not quiesced first: libmicrohttpd 0.9.75's `MHD_quiesce_daemon` races its own epoll threads over
    /// the listening socket and aborts the process ("Failed to remove listen FD from epoll set", seen once in `make
    /// test`). `MHD_stop_daemon` stops the threads before it closes the socket.
    public func close() {
        let (daemons, acceptor) = state.withLock { state in
            defer {
                state.daemons = []
                state.acceptor = nil
                state.stopped = true
            }
            return (state.daemons, state.acceptor)
        }
        guard let acceptor, !daemons.isEmpty else { return }
        core.isStopping.store(true, ordering: .relaxed)

        let grace = core.configuration.stopGracePeriod.clampedNanoseconds
        let graceDeadline = SystemTime.monotonicNanoseconds() &+ grace
        while core.awaitingResponse.load(ordering: .relaxed) > 0, SystemTime.monotonicNanoseconds() < graceDeadline {
            usleep(5_000)
        }
        let registered = core.sweeper.removeAll().compactMap(\.context)
        let unanswered = registered.filter { $0.respond(ServerResponses.shuttingDown, origin: .shuttingDown) }
        if !unanswered.isEmpty {
            core.logger.warning("answered 503 to requests still waiting at stop", ["count": .int(unanswered.count)])
        }
        // Let the answers just given (and any response being written) reach their clients.
        let flushDeadline = SystemTime.monotonicNanoseconds() &+ 1_000_000_000
        while core.activeRequests.load(ordering: .relaxed) > 0, SystemTime.monotonicNanoseconds() < flushDeadline {
            usleep(2_000)
        }
        // A handler's late response may be resuming its connection right now: `detach` waits for that (resumes
        // happen under the same lock) and stops any later one, so none touches a connection the daemon frees.
        for context in registered { context.detach() }
        acceptor.stop()
        for daemon in daemons { MHD_stop_daemon(daemon.pointer) }
        core.sweeper.cancel()
        core.connections.cancel()
        core.logger.info("HTTP server stopped")
    }
}

/// Pointers travel through `va_list` as pointer-sized integers (Swift's pointer types are not `CVarArg` here).
private enum CVarArgPointer {
    static func function<F>(_ function: F) -> Int {
        precondition(MemoryLayout<F>.size == MemoryLayout<Int>.size, "not a C function pointer")
        return unsafeBitCast(function, to: Int.self)
    }
}
