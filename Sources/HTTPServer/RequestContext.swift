import CMicroHTTPD
import ServiceSupport
import Synchronization

/// The state of one request, from its headers to libmicrohttpd's "request completed" notification.
///
/// Created on the first access-handler call, handed to libmicrohttpd as `*con_cls` with a +1 retain that the
/// completion callback gives back. Responder closures keep their own strong references, so a late `respond` always
/// finds live memory.
///
/// Threading invariants:
/// - The fields marked "connection thread" are only touched by libmicrohttpd's thread serving this connection
///   (access-handler calls of one connection never overlap), so they need no lock.
/// - `shared` is the only state touched from other threads (responders, the deadline sweeper).
/// - `connection` is passed to `MHD_resume_connection` at most once, and only after `MHD_suspend_connection`
///   returned and before the connection was resumed, when libmicrohttpd guarantees it is alive: suspended
///   connections are never timed out or closed, and `HTTPServer.close` resumes every one of them before it stops
///   the daemon.
/// - `MHD_resume_connection` is called while `shared`'s lock is held (it only sets a flag and wakes the daemon),
///   and the request's end (`markCompleted`, called before libmicrohttpd frees the connection) and `detach` (called
///   by `HTTPServer.close` before `MHD_stop_daemon`) take the same lock: a resume and the connection's teardown never
///   overlap, and no resume happens after either.
final class RequestContext: @unchecked Sendable {
    private struct Shared {
        /// The first response given; later ones are dropped.
        var response: (HTTPResponse, HTTPResponseOrigin)?
        /// `MHD_suspend_connection` was called and nobody has resumed the connection yet.
        var suspended = false
        /// libmicrohttpd reported the request finished, or the server is stopping the daemon: the connection must
        /// not be touched any more.
        var completed = false
    }

    let method: String
    /// Percent-decoded (`PercentEncoding.decodeLeniently`).
    let path: String
    /// As sent.
    let rawPath: String
    /// When the headers were parsed (`SystemTime.monotonicNanoseconds`).
    let startedAt: UInt64
    private let connection: OpaquePointer
    private let shared = Locked(Shared())

    // Connection thread only.
    /// The connection's deadlines (set on the first access-handler call; nil only if libmicrohttpd gave no socket
    /// context).
    var connectionState: ConnectionState?
    /// Set on the first access-handler call, when the headers were parsed.
    var head: HTTPRequestHead?
    /// This request's body limit (the server's, or a smaller one from `HTTPHandler.admit`).
    var maxBodyBytes = 0
    var body: [UInt8] = []
    /// Counted in `ServerCore.bufferedBodyBytes` for this request, as its body arrives (given back when the body is
    /// handed to the handler, discarded, or the request ends).
    var reservedBodyBytes = 0
    /// The body did not fit under `maxBufferedBodyBytes`: its bytes are discarded and the answer is `busyResponse`.
    var bodyRefusedBusy = false
    var bodyTooLarge = false
    var discardedBodyBytes = 0
    var handlerInvoked = false
    /// Counted in `ServerCore.awaitingResponse` (from the handler call until its response is taken for queueing).
    var countedAsAwaiting = false
    var responseQueued = false

    /// - Parameter rawPath: the path as sent (libmicrohttpd decodes nothing: `MHDCallbacks.keepEscaped`).
    init(connection: OpaquePointer, method: String, rawPath: String) {
        self.connection = connection
        self.method = method
        self.rawPath = rawPath
        self.path = PercentEncoding.decodeLeniently(rawPath)
        self.startedAt = SystemTime.monotonicNanoseconds()
    }

    /// Records `response` unless one was recorded already; resumes the connection when it is suspended.
    /// Returns false for a late (ignored) response.
    @discardableResult
    func respond(_ response: HTTPResponse, origin: HTTPResponseOrigin) -> Bool {
        shared.withLock { shared in
            guard shared.response == nil, !shared.completed else { return false }
            shared.response = (response, origin)
            if shared.suspended {
                shared.suspended = false
                MHD_resume_connection(connection)
            }
            return true
        }
    }

    /// Connection thread: the response, if one was given (the caller then queues it).
    func takeResponse() -> (HTTPResponse, HTTPResponseOrigin)? {
        shared.withLock { $0.response }
    }

    /// Connection thread, inside the access handler: suspends the connection until a response is given. When one
    /// arrived meanwhile, resumes at once (libmicrohttpd then calls the access handler again to queue it).
    func suspendUntilResponse() {
        MHD_suspend_connection(connection)
        shared.withLock { shared in
            if shared.response != nil {
                MHD_resume_connection(connection)
            } else {
                shared.suspended = true
            }
        }
    }

    /// Connection thread (completion callback): from now on nothing touches the connection. Waits for a resume
    /// in progress on another thread.
    func markCompleted() {
        shared.withLock { $0.completed = true }
    }

    /// `HTTPServer.close`, before it stops the daemon (which frees the connections): waits for a resume in progress
    /// and lets no later response touch the connection.
    func detach() {
        shared.withLock { $0.completed = true }
    }

    /// Whether the request is still waiting for a response (used by the deadline sweeper).
    var isAwaitingResponse: Bool {
        shared.withLock { $0.response == nil && !$0.completed }
    }
}
