import Foundation
import HTTPServer
import ServiceSupport
import Testing
import TestSupport

/// The limits that keep slow and hostile clients from holding connections and memory (bench/hostile.sh measures them
/// under load). libmicrohttpd's idle timeout restarts with every byte, so every test here trickles bytes faster than
/// the idle timeout: without the server's own deadline, the connection would stay open.
@Suite("HTTPServer against slow and hostile clients")
struct HTTPServerHostileClientTests {
    @Test("a connection trickling header bytes is closed at the head deadline, though it is never idle")
    func slowloris() throws {
        let events = ResponseEvents()
        let server = try startServer(
            EchoHandler(),
            configure: {
                $0.requestHeadTimeout = .seconds(1)
                $0.idleTimeoutSeconds = 30
            }, events: events)
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        try connection.send("POST /upload HTTP/1.1\r\nHost: x\r\n")
        let closedAfter = connection.trickleUntilClosed(
            Array("X-Slow: y\r\n".utf8), every: .milliseconds(100), limit: .seconds(8))
        let seconds = try #require(closedAfter, "still open after 8 s of trickling (head deadline 1 s)")
        #expect(seconds >= 0.8 && seconds < 5, "closed after \(seconds) s")
        #expect(waitUntil { server.connectionStatistics.headTimeouts == 1 })
        #expect(events.all.isEmpty)
    }

    @Test("a new connection that sends nothing is closed at the head deadline, before the idle timeout")
    func silentConnection() throws {
        let server = try startServer(EchoHandler()) {
            $0.requestHeadTimeout = .seconds(1)
            $0.idleTimeoutSeconds = 30
        }
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port, timeoutSeconds: 8)
        let started = SystemTime.monotonicNanoseconds()
        #expect(connection.peerClosed())
        let waited = SystemTime.secondsSince(started)
        #expect(waited >= 0.8 && waited < 5, "closed after \(waited) s")
        #expect(waitUntil { server.connectionStatistics.headTimeouts == 1 })
    }

    @Test("a request head arriving in time is served, and the kept-alive connection serves the next one")
    func headInTime() throws {
        let server = try startServer(EchoHandler()) { $0.requestHeadTimeout = .seconds(1) }
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        for index in 0..<3 {
            // Each head takes 0.6 s to arrive: within the head deadline, and the next request's clock restarts.
            try connection.send("GET /slow/\(index) HTTP/1.1\r\n")
            usleep(300_000)
            try connection.send("Host: x\r\n")
            usleep(300_000)
            try connection.send("\r\n")
            #expect(try connection.readResponse().status == 200)
        }
        #expect(server.connectionStatistics.headTimeouts == 0)
    }

    @Test("a kept-alive connection trickling its next head is closed at the idle timeout after the previous answer")
    func keptAliveTrickle() throws {
        let server = try startServer(EchoHandler()) {
            $0.requestHeadTimeout = .seconds(30)
            $0.idleTimeoutSeconds = 1
        }
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        #expect(try connection.request("GET", "/first").status == 200)
        try connection.send("GET /second HTTP/1.1\r\n")
        let closedAfter = connection.trickleUntilClosed(
            Array("X-Slow: y\r\n".utf8), every: .milliseconds(100), limit: .seconds(8))
        let seconds = try #require(closedAfter, "still open after 8 s of trickling (idle timeout 1 s)")
        #expect(seconds >= 0.7 && seconds < 5, "closed after \(seconds) s")
        #expect(waitUntil { server.connectionStatistics.headTimeouts == 1 })
    }

    @Test("a body trickling in is dropped at the body deadline: the handler never sees it, its bytes are given back")
    func slowBody() throws {
        let handler = AdmittingHandler()
        let server = try startServer(handler) {
            $0.bodyTimeout = .seconds(1)
            $0.idleTimeoutSeconds = 30
        }
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        try connection.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
        let closedAfter = connection.trickleUntilClosed(
            Array("aaaaaaaaaa".utf8), every: .milliseconds(100), limit: .seconds(8))
        let seconds = try #require(closedAfter, "still open after 8 s of a trickled body (body deadline 1 s)")
        #expect(seconds >= 0.8 && seconds < 5, "closed after \(seconds) s")
        #expect(waitUntil { server.connectionStatistics.bodyTimeouts == 1 })
        #expect(waitUntil { server.bufferedBodyBytes == 0 })
        #expect(handler.handleCalls == 0)
        // A body sent in time on another connection is served as usual.
        let prompt = try HTTPTestConnection(port: server.port)
        #expect(try prompt.request("POST", "/upload", body: [UInt8](repeating: 1, count: 100_000)).status == 200)
    }

    @Test("announcing large bodies and trickling them holds only the bytes sent: other bodies still fit")
    func announcedBodiesHoldWhatArrived() throws {
        let server = try startServer(AdmittingHandler()) { $0.maxBufferedBodyBytes = 1_000_000 }
        defer { server.close() }
        // Twenty slow senders announce 2 MB between them, twice the bound, and send 10 bytes each.
        let slow = try (0..<20).map { _ in try HTTPTestConnection(port: server.port) }
        for connection in slow {
            try connection.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n0123456789")
        }
        #expect(waitUntil { server.bufferedBodyBytes == 200 })
        let response = try HTTPTestConnection(port: server.port).request(
            "POST", "/upload", body: [UInt8](repeating: 2, count: 500_000))
        #expect(response.status == 200)
        #expect(response.jsonObject?["body_length"] as? Int == 500_000)
        #expect(server.busyRefusals == 0)
    }

    @Test("a head up to maxHeaderBytes is served; one byte more is 431 header_too_large and the connection closes")
    func headerLimit() throws {
        let events = ResponseEvents()
        let server = try startServer(EchoHandler(), configure: { $0.maxHeaderBytes = 4096 }, events: events)
        defer { server.close() }
        let exact = try HTTPTestConnection(port: server.port)
        try exact.send(Self.head(bytes: 4096))
        #expect(try exact.readResponse().status == 200)

        let over = try HTTPTestConnection(port: server.port)
        try over.send(Self.head(bytes: 4097))
        let response = try over.readResponse()
        #expect(response.status == 431)
        #expect(response.headers["content-type"] == "application/json")
        #expect(response.jsonObject.flatMap { $0["error"] as? [String: Any] }?["code"] as? String == "header_too_large")
        #expect(response.headers["connection"]?.lowercased() == "close")
        #expect(over.peerClosed())
        #expect(events.all.map(\.origin) == [.handler, .headerTooLarge])
    }

    @Test("the connection memory follows maxHeaderBytes: a 30 KiB head passes a 32 KiB limit")
    func largeHeaderLimit() throws {
        let server = try startServer(EchoHandler()) {
            $0.maxHeaderBytes = 32 * 1024
            $0.connectionMemoryLimitBytes = 16 * 1024
        }
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        try connection.send(Self.head(bytes: 30 * 1024))
        #expect(try connection.readResponse().status == 200)
    }

    @Test("connections are counted: accepted, open, and refused at the per-IP limit")
    func connectionCounts() throws {
        let server = try startServer(EchoHandler()) { $0.perIPConnectionLimit = 2 }
        defer { server.close() }
        let first = try HTTPTestConnection(port: server.port)
        let second = try HTTPTestConnection(port: server.port)
        #expect(try first.request("GET", "/").status == 200)
        #expect(try second.request("GET", "/").status == 200)
        #expect(server.connectionStatistics.open == 2)
        let third = try HTTPTestConnection(port: server.port, timeoutSeconds: 2)
        #expect(throws: HTTPTestConnectionError.self) { try third.request("GET", "/") }
        #expect(waitUntil { server.connectionStatistics.refused == 1 })
        first.close()
        second.close()
        #expect(waitUntil { server.connectionStatistics.open == 0 })
        #expect(server.connectionStatistics.accepted == 2)
    }

    /// A GET request head of exactly `bytes` bytes (request line, headers, empty line).
    static func head(bytes: Int) -> String {
        let start = "GET /h HTTP/1.1\r\nHost: x\r\nX-Pad: "
        let end = "\r\n\r\n"
        return start + String(repeating: "p", count: bytes - start.utf8.count - end.utf8.count) + end
    }
}
