import Dispatch
import Foundation
import HTTPServer
import ServiceSupport
import Synchronization
import Testing
import TestSupport

/// Refuses `/private` without `Authorization: Bearer ok` from the head; limits `/small` to 1 KiB; echoes the rest.
final class AdmittingHandler: HTTPHandler {
    private let handled = Atomic<Int>(0)
    private let admitted = Locked<[String]>([])

    var handleCalls: Int { handled.load(ordering: .relaxed) }
    var admittedPaths: [String] { admitted.withLock { $0 } }

    func admit(_ head: HTTPRequestHead) -> HTTPAdmission {
        admitted.withLock { $0.append(head.path) }
        if head.path == "/private", head.header("Authorization") != "Bearer ok" {
            return .respond(.json(401, #"{"error":{"code":"unauthorized","message":"no"}}"#))
        }
        if head.path == "/small" { return .acceptBody(maxBodyBytes: 1024) }
        return .accept
    }

    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        handled.add(1, ordering: .relaxed)
        EchoHandler().handle(request, respond: respond)
    }
}

@Suite("HTTPServer admission from the head and the buffered-body bound")
struct HTTPServerAdmissionTests {
    @Test("a request refused from its head is answered before its body is sent, and no body byte is buffered")
    func refusedBeforeBody() throws {
        let handler = AdmittingHandler()
        let server = try startServer(handler) { $0.maxBodyBytes = 4 << 20 }
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port, timeoutSeconds: 5)
        // A large body announced, none of it sent yet: the answer must not wait for it.
        try connection.send("POST /private HTTP/1.1\r\nHost: x\r\nContent-Length: \(2 << 20)\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 401)
        #expect(response.headers["connection"]?.lowercased() == "close")
        #expect(server.bufferedBodyBytes == 0)
        // A slow sender pushing its body anyway: nothing of it is kept (the gauge never moves) and it never reaches
        // the handler; the server closes the connection.
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 16 * 1024)
        var maximumSeen = 0
        for _ in 0..<16 {
            do { try connection.send(piece) } catch { break }
            maximumSeen = max(maximumSeen, server.bufferedBodyBytes)
            usleep(20_000)
        }
        #expect(maximumSeen == 0)
        #expect(handler.handleCalls == 0)
        #expect(handler.admittedPaths == ["/private"])

        // The same request with the key goes through, and while its body arrives what arrived is held (counted).
        let allowed = try HTTPTestConnection(port: server.port, timeoutSeconds: 5)
        let length = 256 * 1024
        try allowed.send(
            "POST /private HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ok\r\nContent-Length: \(length)\r\n\r\n")
        try allowed.send([UInt8](repeating: UInt8(ascii: "b"), count: length / 2))
        #expect(waitUntil { server.bufferedBodyBytes == length / 2 })
        try allowed.send([UInt8](repeating: UInt8(ascii: "b"), count: length / 2))
        let accepted = try allowed.readResponse()
        #expect(accepted.status == 200)
        #expect(accepted.jsonObject?["body_length"] as? Int == length)
        #expect(waitUntil { server.bufferedBodyBytes == 0 })
        #expect(handler.handleCalls == 1)
    }

    @Test("admit may lower one route's body limit below the server's")
    func perRequestLimit() throws {
        let events = ResponseEvents()
        let server = try startServer(AdmittingHandler(), configure: { $0.maxBodyBytes = 1 << 20 }, events: events)
        defer { server.close() }
        let over = try HTTPTestConnection(port: server.port).request(
            "POST", "/small", body: [UInt8](repeating: 65, count: 1025))
        #expect(over.status == 413)
        #expect(over.text.contains("1024 bytes"))
        let chunked = try HTTPTestConnection(port: server.port)
        try chunked.send(
            "POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "258\r\n\(String(repeating: "c", count: 600))\r\n"
                + "258\r\n\(String(repeating: "c", count: 600))\r\n0\r\n\r\n")
        #expect(try chunked.readResponse().status == 413)
        let within = try HTTPTestConnection(port: server.port).request(
            "POST", "/small", body: [UInt8](repeating: 65, count: 1024))
        #expect(within.status == 200)
        let elsewhere = try HTTPTestConnection(port: server.port).request(
            "POST", "/large", body: [UInt8](repeating: 65, count: 4096))
        #expect(elsewhere.status == 200)
        #expect(events.all.map(\.origin) == [.bodyTooLarge, .bodyTooLarge, .handler, .handler])
    }

    @Test("past maxBufferedBodyBytes new bodies get 503 server_busy with Retry-After, are not kept, and are counted")
    func bufferedBound() throws {
        let events = ResponseEvents()
        let server = try startServer(
            AdmittingHandler(),
            configure: {
                $0.maxBufferedBodyBytes = 100_000
                $0.busyResponse = .json(
                    503, #"{"error":{"code":"server_busy","message":"busy"}}"#, headers: [("Retry-After", "7")])
            }, events: events)
        defer { server.close() }
        // A slow sender holds the 80,000 bytes it sent of a 90,000-byte body.
        let slow = try HTTPTestConnection(port: server.port, timeoutSeconds: 5)
        try slow.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 90000\r\n\r\n")
        try slow.send([UInt8](repeating: 1, count: 80_000))
        #expect(waitUntil { server.bufferedBodyBytes == 80_000 })

        // Announced, and more than the 20,000 bytes free: refused from the head, before its body is sent.
        let announced = try HTTPTestConnection(port: server.port)
        try announced.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 30000\r\n\r\n")
        let busy = try announced.readResponse()
        #expect(busy.status == 503)
        #expect(busy.headers["retry-after"] == "7")
        #expect(busy.text.contains("server_busy"))
        #expect(busy.headers["connection"]?.lowercased() == "close")
        // Chunked: refused once it grows past the bound; what it sent is dropped.
        let streamed = try HTTPTestConnection(port: server.port)
        let chunk = String(repeating: "d", count: 15_000)
        try streamed.send(
            "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3a98\r\n\(chunk)\r\n3a98\r\n\(chunk)\r\n0\r\n\r\n")
        #expect(try streamed.readResponse().status == 503)
        #expect(server.bufferedBodyBytes == 80_000)
        #expect(server.busyRefusals == 2)

        // Once the slow body is complete, its bytes are given back and the next body fits.
        try slow.send([UInt8](repeating: 1, count: 10_000))
        #expect(try slow.readResponse().status == 200)
        #expect(waitUntil { server.bufferedBodyBytes == 0 })
        let retried = try HTTPTestConnection(port: server.port).request(
            "POST", "/upload", body: [UInt8](repeating: 2, count: 30_000))
        #expect(retried.status == 200)
        #expect(events.all.filter { $0.origin == .serverBusy }.count == 2)
    }

    @Test("a client that goes away mid-body gives its reservation back")
    func abandonedBody() throws {
        let server = try startServer(AdmittingHandler())
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        try connection.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\n\r\n")
        try connection.send([UInt8](repeating: 1, count: 100))
        #expect(waitUntil { server.bufferedBodyBytes == 100 })
        connection.close()
        #expect(waitUntil { server.bufferedBodyBytes == 0 })
    }
}
