import CCurl
import Dispatch
import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import ServiceSupport
import Synchronization

/// The thread that owns the libcurl multi handle and drives it with `curl_multi_socket_action` over epoll.
///
/// Threads: `submit` and `close` may be called from any thread; they put work in `inbox` (a mutex) and wake the loop
/// through an eventfd. Everything else — the multi handle, the easy handles, the socket table, the timer — is
/// touched only by the loop thread, which is why the class is `@unchecked Sendable`. Completions are never called on
/// the loop thread: they are handed to `completionQueues` (a fixed number of serial queues, round robin), so the
/// CPU work after a response is bounded in concurrency and never delays the network.
final class CurlMultiLoop: @unchecked Sendable {
    private struct Inbox {
        var pending = FIFOQueue<CurlTransfer>()
        var stopping = false
        var stopped = false
    }

    private let configuration: HTTPClientConfiguration
    /// The environment's proxy settings, read once (see `CurlProxyEnvironment`).
    private let proxies = CurlProxyEnvironment()
    private let inbox = Locked(Inbox())
    /// Set when the eventfd was signalled and the loop has not looked at the inbox since: later submissions skip
    /// the write(2), so a burst costs one wake-up.
    private let wakePending = Atomic<Bool>(false)
    private let stoppedSignal = DispatchSemaphore(value: 0)
    private let completionQueues: [DispatchQueue]
    private let inFlightGauge: Gauge?

    // Loop-thread state.
    private var multi: UnsafeMutableRawPointer?
    private let epollDescriptor: Int32
    private let wakeDescriptor: Int32
    private var sockets: EpollSocketTable
    private var timerDeadlineNanoseconds: UInt64?
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var idleEasyHandles: [UnsafeMutableRawPointer] = []
    private var nextCompletionQueue = 0

    init(configuration: HTTPClientConfiguration, inFlightGauge: Gauge?) throws(HTTPClientError) {
        CurlGlobal.initializeOnce()
        self.configuration = configuration
        self.inFlightGauge = inFlightGauge
        headerLists = CurlHeaderLists(standardLines: CurlHeaderLists.standardLines(userAgent: configuration.userAgent))
        completionQueues = (0..<max(1, configuration.completionConcurrency)).map {
            DispatchQueue(label: "appstore-http-completion-\($0)")
        }
        epollDescriptor = ccurl_epoll_create()
        wakeDescriptor = ccurl_eventfd_create()
        sockets = EpollSocketTable(epollDescriptor: epollDescriptor)
        guard epollDescriptor >= 0, wakeDescriptor >= 0,
            ccurl_epoll_ctl(epollDescriptor, 0, wakeDescriptor, ccurl_epoll_in()) == 0
        else {
            let reason = String(cString: strerror(errno))
            if epollDescriptor >= 0 { Glibc.close(epollDescriptor) }
            if wakeDescriptor >= 0 { Glibc.close(wakeDescriptor) }
            throw HTTPClientError(kind: .other, message: "cannot create the epoll loop: \(reason)")
        }
        guard let multi = curl_multi_init() else {
            Glibc.close(epollDescriptor)
            Glibc.close(wakeDescriptor)
            throw HTTPClientError(kind: .other, message: "curl_multi_init failed")
        }
        self.multi = multi
        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = ccurl_multi_setopt_socket_cb(multi, CurlCallbacks.onSocket)
        _ = ccurl_multi_setopt_ptr(multi, CURLMOPT_SOCKETDATA, me)
        _ = ccurl_multi_setopt_timer_cb(multi, CurlCallbacks.onTimer)
        _ = ccurl_multi_setopt_ptr(multi, CURLMOPT_TIMERDATA, me)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, 2 /* CURLPIPE_MULTIPLEX */)
        // Keep every connection of a full window alive between requests.
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(16, configuration.maxInFlight))
    }

    /// Starts the loop thread. The thread keeps the loop alive until `close`.
    func start() {
        Thread.startNamed("appstore-curl-multi") { [self] in run() }
    }

    /// Queues a transfer; false when the loop is stopping (the caller then fails it).
    func submit(_ transfer: CurlTransfer) -> Bool {
        let accepted = inbox.withLock { inbox in
            guard !inbox.stopping else { return false }
            inbox.pending.append(transfer)
            return true
        }
        if accepted { wake() }
        return accepted
    }

    /// Fails queued and in-flight transfers with `.shutdown`, frees libcurl's handles and ends the thread. Blocks
    /// until done, except on the loop thread itself (the last reference to a client can be dropped there, when a
    /// completion batch is released), where it only asks the loop to end; idempotent.
    func close() {
        let mustWait = inbox.withLock { inbox in
            defer { inbox.stopping = true }
            return !inbox.stopping
        }
        guard mustWait else { return }
        if loopThreadId.load(ordering: .acquiring) == UInt(bitPattern: Int(bitPattern: pthread_self())) {
            return  // the loop sees `stopping` at the end of this iteration
        }
        wakePending.store(false, ordering: .sequentiallyConsistent)
        wake()
        stoppedSignal.wait()
    }

    private func wake() {
        if !wakePending.exchange(true, ordering: .sequentiallyConsistent) {
            ccurl_eventfd_signal(wakeDescriptor)
        }
    }

    var queuedCount: Int { inbox.withLock { $0.pending.count } }

    // MARK: Loop thread

    /// `pthread_self()` of the loop thread, once it runs.
    private let loopThreadId = Atomic<UInt>(0)

    private func run() {
        loopThreadId.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .releasing)
        let capacity = 256
        let readyDescriptors = UnsafeMutablePointer<Int32>.allocate(capacity: capacity)
        let readyEvents = UnsafeMutablePointer<UInt32>.allocate(capacity: capacity)
        defer {
            readyDescriptors.deallocate()
            readyEvents.deallocate()
        }
        var running: Int32 = 0
        while true {
            let count = ccurl_epoll_wait_us(
                epollDescriptor, readyDescriptors, readyEvents, Int32(capacity), waitTimeoutMicroseconds())
            if count > 0 {
                for index in 0..<Int(count) {
                    let descriptor = readyDescriptors[index]
                    if descriptor == wakeDescriptor {
                        ccurl_eventfd_drain(wakeDescriptor)
                        // Cleared before the inbox is read below, so a submission after this point signals again.
                        wakePending.store(false, ordering: .sequentiallyConsistent)
                        continue
                    }
                    if sockets.isParked(descriptor) {
                        sockets.unpark(descriptor)
                        continue
                    }
                    let events = readyEvents[index]
                    var flags: Int32 = 0
                    if events & ccurl_epoll_in() != 0 { flags |= 0x01 /* CURL_CSELECT_IN */ }
                    if events & ccurl_epoll_out() != 0 { flags |= 0x02 /* CURL_CSELECT_OUT */ }
                    if events & ccurl_epoll_err() != 0 { flags |= 0x04 /* CURL_CSELECT_ERR */ }
                    _ = curl_multi_socket_action(multi, descriptor, flags, &running)
                }
            }
            if let deadline = timerDeadlineNanoseconds, deadline <= DispatchTime.now().uptimeNanoseconds {
                timerDeadlineNanoseconds = nil
                _ = curl_multi_socket_action(multi, -1 /* CURL_SOCKET_TIMEOUT */, 0, &running)
            }
            collectFinished()
            if admitPending() == false { break }
            flushFinishedIfDue()
        }
        shutDownOnLoopThread()
    }

    /// Microseconds epoll may sleep: until libcurl's timer or the completion flush, at most a second.
    private func waitTimeoutMicroseconds() -> Int {
        let flushAt = oldestUnflushedNanoseconds.map { $0 + completionWindowNanoseconds }
        guard let deadline = [timerDeadlineNanoseconds, flushAt].compactMap({ $0 }).min() else { return 1_000_000 }
        let now = DispatchTime.now().uptimeNanoseconds
        guard deadline > now else { return 0 }
        return Int(min(1_000_000, (deadline - now + 999) / 1_000))
    }

    /// Moves queued transfers onto the wire while the window has room. False when the loop must stop.
    private func admitPending() -> Bool {
        let room = configuration.maxInFlight - active.count
        let (admitted, stopping) = inbox.withLock { inbox -> ([CurlTransfer], Bool) in
            if inbox.stopping { return ([], true) }
            return (inbox.pending.removeFirst(upTo: room), false)
        }
        if stopping { return false }
        for transfer in admitted {
            guard let easy = idleEasyHandles.popLast() ?? newEasyHandle() else {
                finish(transfer, .failure(HTTPClientError(kind: .other, message: "curl_easy_init failed")))
                continue
            }
            let headers = headerLists.acquire(transfer.request.headers)
            transfer.headerList = headers
            if let error = transfer.configure(
                easy: easy, headers: headers, configuration: configuration, proxies: proxies) {
                recycle(easy, after: transfer)
                finish(transfer, .failure(error))
                continue
            }
            let code = curl_multi_add_handle(multi, easy)
            guard code == CURLM_OK else {
                recycle(easy, after: transfer)
                let message = String(cString: curl_multi_strerror(code))
                finish(
                    transfer, .failure(HTTPClientError(kind: .other, curlCode: Int32(code.rawValue), message: message)))
                continue
            }
            active[easy] = transfer
        }
        inFlightGauge?.set(active.count)
        return true
    }

    private func collectFinished() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            _ = curl_multi_remove_handle(multi, easy)
            guard let transfer = active.removeValue(forKey: easy) else { continue }
            let result = transfer.result(code: code)
            transfer.easy = nil
            transfer.release()
            recycle(easy, after: transfer)
            finish(transfer, result)
        }
    }

    private func newEasyHandle() -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else { return nil }
        // Connections remember the close-socket callback of the handle that opened them; all of them run on this
        // thread (inside curl_multi_* calls, the last at curl_multi_cleanup while this loop is alive).
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard CurlTransfer.configureShared(easy: easy, configuration: configuration, proxies: proxies)
            == CURLE_OK,
            ccurl_easy_setopt_closesocket_cb(easy, CurlCallbacks.onCloseSocket) == CURLE_OK,
            ccurl_easy_setopt_ptr(easy, CURLOPT_CLOSESOCKETDATA, me) == CURLE_OK
        else {
            curl_easy_cleanup(easy)
            return nil
        }
        return easy
    }

    /// Keeps up to a window's worth of easy handles for reuse, shared options set (every per-request option is set
    /// again by the next transfer, so no reset is needed). The options that point into the finished transfer (its
    /// error buffer, body and write target, freed with it) are cleared first, so an idle handle never holds a
    /// dangling pointer.
    private func recycle(_ easy: UnsafeMutableRawPointer, after transfer: CurlTransfer) {
        headerLists.release(transfer.headerList)
        transfer.headerList = nil
        _ = ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, nil)
        _ = ccurl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, nil)
        _ = ccurl_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, nil)
        _ = ccurl_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, 0)
        _ = ccurl_easy_setopt_ptr(easy, CURLOPT_POSTFIELDS, nil)
        _ = ccurl_easy_setopt_ptr(easy, CURLOPT_CUSTOMREQUEST, nil)
        if idleEasyHandles.count < configuration.maxInFlight {
            idleEasyHandles.append(easy)
        } else {
            curl_easy_cleanup(easy)
        }
    }

    /// Header lists by their lines, built once and shared by the transfers in flight.
    private var headerLists: CurlHeaderLists

    /// Finished transfers not yet handed to a completion queue. They go in batches — when 32 are waiting, or when
    /// the oldest has waited `completionWindowNanoseconds` — because each hand-off wakes a thread, and at thousands
    /// of responses a second one wake-up per response costs more CPU than the rest of the completion work.
    /// The window (`completionCoalescingMicroseconds`, 1 ms by default) is noise next to Apple's latency (100 ms
    /// and more).
    private var finished: [(CurlTransfer.Completion, Result<HTTPClientResponse, HTTPClientError>)] = []
    private var oldestUnflushedNanoseconds: UInt64?
    private static let completionBatchSize = 32
    private var completionWindowNanoseconds: UInt64 {
        UInt64(max(0, configuration.completionCoalescingMicroseconds)) * 1_000
    }

    private func finish(_ transfer: CurlTransfer, _ result: Result<HTTPClientResponse, HTTPClientError>) {
        finished.append((transfer.completion, result))
        if oldestUnflushedNanoseconds == nil { oldestUnflushedNanoseconds = DispatchTime.now().uptimeNanoseconds }
        if finished.count >= Self.completionBatchSize { flushFinished() }
    }

    private func flushFinishedIfDue() {
        guard let oldest = oldestUnflushedNanoseconds else { return }
        if DispatchTime.now().uptimeNanoseconds >= oldest + completionWindowNanoseconds { flushFinished() }
    }

    private func flushFinished() {
        oldestUnflushedNanoseconds = nil
        guard !finished.isEmpty else { return }
        let batch = finished
        finished.removeAll(keepingCapacity: true)
        let queue = completionQueues[nextCompletionQueue]
        nextCompletionQueue = (nextCompletionQueue + 1) % completionQueues.count
        queue.async {
            for (completion, result) in batch { completion(result) }
        }
    }

    private func shutDownOnLoopThread() {
        let shutdownError = HTTPClientError(kind: .shutdown, message: "the HTTP client was shut down")
        for (easy, transfer) in active {
            _ = curl_multi_remove_handle(multi, easy)
            transfer.easy = nil
            transfer.release()
            headerLists.release(transfer.headerList)
            transfer.headerList = nil
            curl_easy_cleanup(easy)
            finish(transfer, .failure(shutdownError))
        }
        active.removeAll()
        for easy in idleEasyHandles { curl_easy_cleanup(easy) }
        idleEasyHandles.removeAll()
        _ = curl_multi_cleanup(multi)
        multi = nil
        headerLists.freeAll()
        let queued = inbox.withLock { inbox -> [CurlTransfer] in
            let rest = inbox.pending.removeAll()
            inbox.stopped = true
            return rest
        }
        for transfer in queued { finish(transfer, .failure(shutdownError)) }
        flushFinished()
        inFlightGauge?.set(0)
        Glibc.close(epollDescriptor)
        Glibc.close(wakeDescriptor)
        stoppedSignal.signal()
    }

    // MARK: Called by libcurl (from curl_multi_socket_action / add_handle, on the loop thread)

    /// CURLMOPT_SOCKETFUNCTION: keeps the epoll set in step with what libcurl wants for each socket.
    func watch(socket: curl_socket_t, what: Int32) {
        sockets.watch(socket: socket, what: what)
    }

    /// CURLOPT_CLOSESOCKETFUNCTION: libcurl is done with `socket`; forget it, then close it.
    func closeSocket(_ socket: curl_socket_t) -> Int32 {
        sockets.closing(socket)
        return Glibc.close(socket)
    }

    func setTimer(milliseconds: Int) {
        if milliseconds < 0 {
            timerDeadlineNanoseconds = nil
        } else {
            timerDeadlineNanoseconds = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
        }
    }
}

/// `curl_global_init` must run once before any other libcurl call.
enum CurlGlobal {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    }()

    static func initializeOnce() { _ = initialized }
}
