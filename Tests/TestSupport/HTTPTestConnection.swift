import Foundation

/// A parsed HTTP/1.1 response read by `HTTPTestConnection`.
public struct HTTPTestResponse: Sendable {
    public let status: Int
    /// Header names lower-cased.
    public let headers: [String: String]
    public let body: [UInt8]

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object, or nil.
    public var jsonObject: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
}

/// Why an `HTTPTestConnection` operation failed.
public struct HTTPTestConnectionError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A blocking HTTP/1.1 client over one TCP connection, for tests that need control a URL session does not give:
/// several requests on one keep-alive connection, chunked bodies, headers without a body, observing the close.
/// Not thread-safe; use one per task.
public final class HTTPTestConnection {
    private let socket: Int32
    private var buffer: [UInt8] = []

    /// Connects to `host:port` (IPv4 literal); reads time out after `timeoutSeconds`.
    public init(host: String = "127.0.0.1", port: UInt16, timeoutSeconds: Int = 5) throws {
        let fd = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPTestConnectionError("socket() failed: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var noDelay: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            Foundation.close(fd)
            throw HTTPTestConnectionError("\(host) is not an IPv4 address (HTTPTestConnection speaks IPv4 only)")
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            Foundation.close(fd)
            throw HTTPTestConnectionError("connect to \(host):\(port) failed: errno \(code)")
        }
        socket = fd
    }

    deinit {
        Foundation.close(socket)
    }

    /// Closes the connection now (otherwise it is closed when released).
    public func close() {
        shutdown(socket, Int32(SHUT_RDWR))
    }

    /// Writes raw bytes.
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Foundation.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw HTTPTestConnectionError("send failed: errno \(errno)") }
            offset += written
        }
    }

    public func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    /// Sends a request with `Content-Length` (when there is a body) and reads its response.
    /// - Parameter bodyEndsAtClose: see `readResponse(forMethod:bodyEndsAtClose:)`; for requests sent with
    ///   `Connection: close`.
    public func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = [],
        bodyEndsAtClose: Bool = false
    ) throws -> HTTPTestResponse {
        try sendRequest(method, target, headers: headers, body: body)
        return try readResponse(forMethod: method, bodyEndsAtClose: bodyEndsAtClose)
    }

    /// Sends a request without reading the response.
    public func sendRequest(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8) + body)
    }

    /// Reads one final response (skipping `100 Continue`).
    /// - Parameters:
    ///   - method: the request's method: the answer to a `HEAD` has no body whatever its headers say.
    ///   - bodyEndsAtClose: a body with neither `Content-Length` nor chunked encoding is everything up to the peer's
    ///     close (RFC 9112 §6.3), as on a `Connection: close` request. When false such a body is read as empty, so a
    ///     test can look at a response on a connection the peer keeps open.
    /// - Throws: `HTTPTestConnectionError` when the peer closes early, sends a malformed head or a read times out.
    public func readResponse(
        forMethod method: String = "GET", bodyEndsAtClose: Bool = false
    ) throws -> HTTPTestResponse {
        while true {
            let headEnd = try readUntil([13, 10, 13, 10])
            let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
            buffer.removeFirst(headEnd + 4)
            var lines = head.components(separatedBy: "\r\n")
            let statusLine = lines.removeFirst().split(separator: " ")
            guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
                throw HTTPTestConnectionError("bad status line in \(head)")
            }
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                    .trimmingCharacters(in: .whitespaces)
            }
            if (100..<200).contains(status) { continue }
            let body: [UInt8]
            if method == "HEAD" || status == 204 || status == 304 {
                body = []
            } else if let length = headers["content-length"].flatMap(Int.init) {
                try fill(length)
                body = Array(buffer[..<length])
                buffer.removeFirst(length)
            } else if headers["transfer-encoding"]?.lowercased() == "chunked" {
                body = try readChunkedBody()
            } else if bodyEndsAtClose {
                while try readMore(endOfStreamAllowed: true) {}
                body = buffer
                buffer = []
            } else {
                body = []
            }
            return HTTPTestResponse(status: status, headers: headers, body: body)
        }
    }

    /// True when the peer has closed the connection (reads end of stream within the read timeout).
    public func peerClosed() -> Bool {
        var byte = [UInt8](repeating: 0, count: 1)
        let count = recv(socket, &byte, 1, 0)
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// True when the peer has closed the connection or reset it, checked without waiting (bytes the peer sent and
    /// that were not read yet are left in place).
    public func isClosedNow() -> Bool {
        var byte = [UInt8](repeating: 0, count: 1)
        let count = recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Sends `piece` every `interval` until the peer closes the connection (or a send fails), for at most `limit`;
    /// returns the seconds until then, or nil when the connection stayed open throughout.
    public func trickleUntilClosed(_ piece: [UInt8], every interval: Duration, limit: Duration) -> Double? {
        let started = ContinuousClock.now
        while ContinuousClock.now - started < limit {
            if isClosedNow() { return seconds(since: started) }
            do { try send(piece) } catch { return seconds(since: started) }
            let (whole, fraction) = interval.components
            usleep(UInt32(whole * 1_000_000 + fraction / 1_000_000_000_000))
        }
        return nil
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let (whole, fraction) = (ContinuousClock.now - start).components
        return Double(whole) + Double(fraction) / 1e18
    }

    private func readChunkedBody() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let lineEnd = try readUntil([13, 10])
            let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            buffer.removeFirst(lineEnd + 2)
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw HTTPTestConnectionError("bad chunk size")
            }
            if size == 0 {
                _ = try readUntil([13, 10])
                buffer.removeFirst(2)
                return body
            }
            try fill(size + 2)
            body += buffer[..<size]
            buffer.removeFirst(size + 2)
        }
    }

    private func readUntil(_ marker: [UInt8]) throws -> Int {
        var searchFrom = 0
        while true {
            if buffer.count >= marker.count {
                for index in searchFrom...(buffer.count - marker.count)
                where buffer[index..<(index + marker.count)].elementsEqual(marker) {
                    return index
                }
                searchFrom = buffer.count - marker.count + 1
            }
            try readMore()
        }
    }

    private func fill(_ count: Int) throws {
        while buffer.count < count { try readMore() }
    }

    /// Appends what the peer sends next to `buffer`; false at the end of the stream when `endOfStreamAllowed`.
    @discardableResult
    private func readMore(endOfStreamAllowed: Bool = false) throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let count = recv(socket, &chunk, chunk.count, 0)
        if count == 0 {
            if endOfStreamAllowed { return false }
            throw HTTPTestConnectionError("connection closed by peer")
        }
        if count < 0 { throw HTTPTestConnectionError("recv failed: errno \(errno)") }
        buffer += chunk[..<count]
        return true
    }
}
