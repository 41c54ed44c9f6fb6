import CMicroHTTPD
import Foundation
import ServiceSupport

/// The C callbacks given to libmicrohttpd. They run on libmicrohttpd's threads, so they are static members of a
/// nonisolated type (never actor-isolated closures) and reach the server through the `void *` context, which is an
/// unretained `ServerCore`.
enum MHDCallbacks {
    /// Called for the headers, for each piece of body, and when the request is complete (and again after a resume).
    static let accessHandler: MHD_AccessHandlerCallback = {
        cls, connection, url, method, _, uploadData, uploadDataSize, requestContext in
        guard let cls, let connection, let uploadDataSize, let requestContext else { return .NO }
        let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()

        guard let existing = requestContext.pointee else {
            let context = RequestContext(
                connection: connection, method: method.map { String(cString: $0) } ?? "",
                rawPath: url.map { String(cString: $0) } ?? "/")
            requestContext.pointee = Unmanaged.passRetained(context).toOpaque()
            // Retained by libmicrohttpd's socket context until the connection's "closed" notification, which comes
            // after this request's last callback.
            context.connectionState = cmhd_connection_socket_context(connection).map {
                Unmanaged<ConnectionState>.fromOpaque($0).takeUnretainedValue()
            }
            core.activeRequests.add(1, ordering: .relaxed)
            return headersReceived(core, connection, context)
        }
        let context = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()
        if uploadDataSize.pointee > 0 {
            return bodyReceived(core, context, uploadData, uploadDataSize)
        }
        return requestComplete(core, connection, context)
    }

    static let requestCompleted: MHD_RequestCompletedCallback = { cls, _, requestContext, _ in
        guard let cls, let requestContext, let raw = requestContext.pointee else { return }
        requestContext.pointee = nil
        let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
        context.markCompleted()
        // A kept-alive connection now waits for its next request head, at most the idle timeout (if it is closing,
        // its "closed" notification follows).
        context.connectionState?.enter(
            .awaitingHead, deadline: SystemTime.monotonicNanoseconds() &+ core.idleTimeoutNanoseconds)
        // A body cut off mid-upload (client gone, connection timed out) gives its reservation back here.
        core.releaseBodyBytes(of: context)
        context.body = []
        if context.countedAsAwaiting {
            context.countedAsAwaiting = false
            core.awaitingResponse.subtract(1, ordering: .relaxed)
        }
        core.activeRequests.subtract(1, ordering: .relaxed)
    }

    /// A connection accepted (its head deadline starts) or closed (before libmicrohttpd closes its socket).
    static let connectionNotification: MHD_NotifyConnectionCallback = { cls, connection, socketContext, code in
        guard let cls, let socketContext else { return }
        let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
        switch code {
        case .CONNECTION_NOTIFY_STARTED:
            var countedAddress: String?
            if core.configuration.perIPConnectionLimit > 0, let connection {
                var address = [CChar](repeating: 0, count: 64)
                countedAddress = cmhd_client_address(connection, &address, socklen_t(address.count)) == 0
                    ? cString(address) : ""
            }
            let state = ConnectionState(
                socket: connection.map { cmhd_connection_fd($0) } ?? -1,
                headDeadline: SystemTime.monotonicNanoseconds() &+ core.headTimeoutNanoseconds,
                countedAddress: countedAddress)
            socketContext.pointee = Unmanaged.passRetained(state).toOpaque()
            core.connections.opened(state)
        case .CONNECTION_NOTIFY_CLOSED:
            guard let raw = socketContext.pointee else { return }
            socketContext.pointee = nil
            let state = Unmanaged<ConnectionState>.fromOpaque(raw).takeRetainedValue()
            core.connectionCounts.closed(address: state.countedAddress)
            core.connections.closed(state)
        default:
            break
        }
    }

    static let headerIterator: MHD_KeyValueIterator = { cls, _, key, value in
        guard let cls, let key else { return .YES }
        let headers = cls.assumingMemoryBound(to: [String: String].self)
        let name = lowercasedHeaderName(key)
        let text = value.map { String(cString: $0) } ?? ""
        if let previous = headers.pointee[name] {
            headers.pointee[name] = previous + ", " + text
        } else {
            headers.pointee[name] = text
        }
        return .YES
    }

    static let queryIterator: MHD_KeyValueIterator = { cls, _, key, value in
        guard let cls, let key else { return .YES }
        let query = cls.assumingMemoryBound(to: [String: String].self)
        // Kept escaped by libmicrohttpd (`+` already a space): decoded here, as it used to decode them.
        query.pointee[PercentEncoding.decodeLeniently(String(cString: key))] =
            value.map { PercentEncoding.decodeLeniently(String(cString: $0)) } ?? ""
        return .YES
    }

    /// libmicrohttpd's unescape callback, for the path and the query arguments: leaves them as sent (the string's
    /// length, unchanged). Its own decoding wrote a decoded `%00` as a NUL that ended the C string (`/a%00b` read as
    /// `/a`) and made an encoded `/` a separator; the Swift side decodes instead (`PercentEncoding`).
    static let keepEscaped: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<CChar>?) -> Int = {
        _, _, text in
        guard let text else { return 0 }
        return strlen(text)
    }

    static let errorLogger: MHD_LogCallback = {
        cls, format, arguments in
        guard let cls, let format, let arguments else { return }
        let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
        var buffer = [CChar](repeating: 0, count: 512)
        _ = vsnprintf(&buffer, buffer.count, format, arguments)
        let message = cString(buffer).trimmingCharacters(in: .whitespacesAndNewlines)
        // libmicrohttpd reports a connection refused at its connection limits only here: counted, and logged as a
        // periodic summary by the connection sweeper.
        if message.hasPrefix("Server reached connection limit") {
            core.connections.refused.add(1, ordering: .relaxed)
            return
        }
        guard let dropped = core.logBudget.admit(now: SystemTime.monotonicNanoseconds()) else { return }
        core.logger.warning("libmicrohttpd: \(message)", ["dropped_lines": .int(dropped)])
    }

    /// A header name in lower case: ASCII lowered byte by byte in one copy (names are tokens, so ASCII), anything
    /// else through `String.lowercased()`.
    static func lowercasedHeaderName(_ name: UnsafePointer<CChar>) -> String {
        let length = strlen(name)
        return name.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
            let utf8 = UnsafeBufferPointer(start: bytes, count: length)
            guard utf8.allSatisfy({ $0 < 0x80 }) else { return String(cString: name).lowercased() }
            return String(unsafeUninitializedCapacity: length) { out in
                for (index, byte) in utf8.enumerated() {
                    out[index] = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
                }
                return length
            }
        }
    }

    /// Whether a response header's name is `Content-Length` in any case (libmicrohttpd sets that one itself).
    static func isContentLength(_ name: String) -> Bool {
        let expected = "content-length".utf8
        return name.utf8.count == expected.count
            && zip(name.utf8, expected).allSatisfy { byte, lower in
                ((0x41...0x5A).contains(byte) ? byte | 0x20 : byte) == lower
            }
    }

    /// The text before the first NUL of `buffer`.
    private static func cString(_ buffer: [CChar]) -> String {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: - Request phases (connection thread)

    private static func headersReceived(
        _ core: ServerCore, _ connection: OpaquePointer, _ context: RequestContext
    ) -> MHD_Result {
        if core.isStopping.load(ordering: .relaxed) {
            return respondFromHead(core, connection, context, ServerResponses.shuttingDown, origin: .shuttingDown)
        }
        let limit = core.configuration.maxHeaderBytes
        if cmhd_request_header_size(connection) > limit {
            return respondFromHead(
                core, connection, context, ServerResponses.headerTooLarge(limit: limit), origin: .headerTooLarge)
        }
        let head = makeHead(connection, context)
        context.head = head
        context.maxBodyBytes = core.configuration.maxBodyBytes
        let declared = head.headers["content-length"].flatMap { Int($0) }
        let announcesBody = (declared ?? 0) > 0 || head.headers["transfer-encoding"] != nil
        switch core.handler.admit(head) {
        case .accept:
            break
        case .acceptBody(let limit):
            context.maxBodyBytes = max(0, min(limit, context.maxBodyBytes))
        case .respond(var response):
            // Queued before the body is read: libmicrohttpd never delivers it, and the connection cannot be reused.
            if announcesBody { response.headers.append(("Connection", "close")) }
            return respondFromHead(core, connection, context, response, origin: .handler)
        }
        guard announcesBody else {
            context.connectionState?.enter(.handling, deadline: 0)
            return .YES
        }
        if let declared, declared > context.maxBodyBytes {
            // Queued before the body is read: libmicrohttpd skips the body (no 100 Continue) and closes afterwards.
            return respondFromHead(
                core, connection, context, ServerResponses.bodyTooLarge(limit: context.maxBodyBytes),
                origin: .bodyTooLarge)
        }
        // Bytes are reserved as they arrive (`bodyReceived`), so a client announcing a large body and trickling it
        // holds only what it sent; a body that cannot fit in what is free now is refused before it is sent.
        if let declared, !core.bodyBytesFit(declared) {
            core.busyRefusals.add(1, ordering: .relaxed)
            var response = core.configuration.busyResponse
            response.headers.append(("Connection", "close"))
            return respondFromHead(core, connection, context, response, origin: .serverBusy)
        }
        context.connectionState?.enter(
            .receivingBody, deadline: SystemTime.monotonicNanoseconds() &+ core.bodyTimeoutNanoseconds)
        return .YES
    }

    /// Queues `response` from the head (no body read); the connection's deadlines no longer apply to this request.
    private static func respondFromHead(
        _ core: ServerCore, _ connection: OpaquePointer, _ context: RequestContext, _ response: HTTPResponse,
        origin: HTTPResponseOrigin
    ) -> MHD_Result {
        context.connectionState?.enter(.handling, deadline: 0)
        return queue(core, connection, context, response, origin: origin)
    }

    /// Buffers body bytes up to the request's limit and under the server's buffered-bytes bound. libmicrohttpd
    /// cannot queue a response while body data is being delivered, so past either the rest is read and discarded
    /// and the 413 (or 503) goes out when the body ends; a client that keeps sending more than another limit's
    /// worth has its connection closed instead.
    private static func bodyReceived(
        _ core: ServerCore, _ context: RequestContext, _ data: UnsafePointer<CChar>?, _ size: UnsafeMutablePointer<Int>
    ) -> MHD_Result {
        let count = size.pointee
        size.pointee = 0
        let limit = context.maxBodyBytes
        if context.bodyTooLarge || context.bodyRefusedBusy {
            context.discardedBodyBytes += count
            return context.discardedBodyBytes > limit ? .NO : .YES
        }
        guard context.body.count + count <= limit else {
            context.bodyTooLarge = true
            discardBody(core, context)
            return .YES
        }
        let unreserved = context.body.count + count - context.reservedBodyBytes
        if unreserved > 0 {
            guard core.reserveBodyBytes(unreserved) else {
                core.busyRefusals.add(1, ordering: .relaxed)
                context.bodyRefusedBusy = true
                discardBody(core, context)
                return .YES
            }
            context.reservedBodyBytes += unreserved
        }
        guard let data else { return .NO }
        data.withMemoryRebound(to: UInt8.self, capacity: count) { bytes in
            context.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: count))
        }
        return .YES
    }

    /// Drops what was buffered of a refused body and its reservation; later bytes are only counted.
    private static func discardBody(_ core: ServerCore, _ context: RequestContext) {
        context.discardedBodyBytes = 0
        context.body = []
        core.releaseBodyBytes(of: context)
    }

    private static func requestComplete(
        _ core: ServerCore, _ connection: OpaquePointer, _ context: RequestContext
    ) -> MHD_Result {
        if context.responseQueued { return .YES }
        if context.bodyTooLarge {
            return respondFromHead(
                core, connection, context, ServerResponses.bodyTooLarge(limit: context.maxBodyBytes),
                origin: .bodyTooLarge)
        }
        if context.bodyRefusedBusy {
            return respondFromHead(core, connection, context, core.configuration.busyResponse, origin: .serverBusy)
        }
        if !context.handlerInvoked {
            // The body is complete: from here the handler's deadline applies. When the sweeper closed the connection
            // at its body deadline a moment ago, the request goes with it (the client sees the connection end, not
            // an answer, and must retry): the handler never sees it.
            if let state = context.connectionState, !state.enter(.handling, deadline: 0) {
                return .NO
            }
            context.handlerInvoked = true
            context.countedAsAwaiting = true
            core.awaitingResponse.add(1, ordering: .relaxed)
            let request = HTTPRequest(head: context.head ?? makeHead(connection, context), body: context.body)
            // The body now belongs to the request handed to the handler: no longer "being received".
            context.body = []
            core.releaseBodyBytes(of: context)
            core.sweeper.register(WeakRequestContext(context))
            if core.isStopping.load(ordering: .relaxed) {
                context.respond(ServerResponses.shuttingDown, origin: .shuttingDown)
            } else {
                core.handler.handle(request) { [context] response in
                    context.respond(response, origin: .handler)
                }
            }
        }
        if let (response, origin) = context.takeResponse() {
            context.countedAsAwaiting = false
            core.awaitingResponse.subtract(1, ordering: .relaxed)
            return queue(core, connection, context, response, origin: origin)
        }
        context.suspendUntilResponse()
        return .YES
    }

    private static func makeHead(_ connection: OpaquePointer, _ context: RequestContext) -> HTTPRequestHead {
        var headers: [String: String] = [:]
        var query: [String: String] = [:]
        withUnsafeMutablePointer(to: &headers) { pointer in
            _ = MHD_get_connection_values(connection, MHD_ValueKind.HEADER_KIND, headerIterator, pointer)
        }
        withUnsafeMutablePointer(to: &query) { pointer in
            _ = MHD_get_connection_values(connection, MHD_ValueKind.GET_ARGUMENT_KIND, queryIterator, pointer)
        }
        var address = [CChar](repeating: 0, count: 64)
        let remote = cmhd_client_address(connection, &address, socklen_t(address.count)) == 0
            ? cString(address) : nil
        return HTTPRequestHead(
            method: context.method, path: context.path, query: query, headers: headers, remoteAddress: remote,
            rawPath: context.rawPath)
    }

    /// Queues `response` on `connection` (connection thread only, inside the access handler).
    private static func queue(
        _ core: ServerCore, _ connection: OpaquePointer, _ context: RequestContext, _ response: HTTPResponse,
        origin: HTTPResponseOrigin
    ) -> MHD_Result {
        let mhdResponse = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                MHD_ResponseMemoryMode.RESPMEM_MUST_COPY)
        }
        guard let mhdResponse else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        for (name, value) in response.headers where !isContentLength(name) {
            _ = MHD_add_response_header(mhdResponse, name, value)
        }
        guard MHD_queue_response(connection, UInt32(clamping: response.status), mhdResponse) == .YES else {
            core.logger.error(
                "libmicrohttpd refused a response", ["status": .int(response.status), "path": .string(context.path)])
            return .NO
        }
        context.responseQueued = true
        core.record(context, status: response.status, origin: origin)
        return .YES
    }
}
