import Dispatch
import Foundation
import HTTPServer
import ServiceSupport
import Testing
import TestSupport

@Suite("HTTPServer over libmicrohttpd")
struct HTTPServerTests {
    @Test("binds an ephemeral port and reports it")
    func ephemeralPort() throws {
        let first = try startServer(EchoHandler())
        let second = try startServer(EchoHandler())
        defer {
            first.close()
            second.close()
        }
        #expect(first.port != 0)
        #expect(second.port != 0)
        #expect(first.port != second.port)
    }

    @Test("a port in use is a readable start error")
    func portInUse() throws {
        let first = try startServer(EchoHandler())
        defer { first.close() }
        let second = HTTPServer(
            configuration: HTTPServerConfiguration(listen: ListenAddress(host: "127.0.0.1", port: first.port)),
            handler: EchoHandler(), logger: quietLogger())
        #expect(throws: HTTPServerError.self) { try second.start() }
    }

    @Test("a listen host that is not an IP address is refused")
    func badHost() {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(listen: ListenAddress(host: "not-an-ip", port: 0)),
            handler: EchoHandler(), logger: quietLogger())
        #expect(throws: HTTPServerError.self) { try server.start() }
    }

    @Test("method, path, decoded query, lower-cased headers and body reach the handler")
    func requestParts() throws {
        let server = try startServer(EchoHandler())
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        let response = try connection.request(
            "POST", "/v1/things/42?x=1&name=hello%20world&flag",
            headers: [("X-Custom-Header", "Value"), ("Content-Type", "application/json")],
            body: Array("{\"a\":1}".utf8))
        #expect(response.status == 200)
        let echo = try #require(response.jsonObject)
        #expect(echo["method"] as? String == "POST")
        #expect(echo["path"] as? String == "/v1/things/42")
        let query = try #require(echo["query"] as? [String: String])
        #expect(query["x"] == "1")
        #expect(query["name"] == "hello world")
        #expect(query["flag"] == "")
        let headers = try #require(echo["headers"] as? [String: String])
        #expect(headers["x-custom-header"] == "Value")
        #expect(headers["content-type"] == "application/json")
        #expect(echo["body"] as? String == "{\"a\":1}")
        #expect(echo["remote"] as? String == "127.0.0.1")
    }

    @Test("the path as sent and decoded: an encoded NUL or / is kept, never an end or a separator")
    func encodedPaths() throws {
        let server = try startServer(EchoHandler())
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        let cases: [(sent: String, path: String, query: [String: String])] = [
            ("/v1/purchases/key%00junk", "/v1/purchases/key\u{0}junk", [:]),
            ("/v1/users/a%2Fconsent", "/v1/users/a/consent", [:]),
            ("/v1/users/caf%C3%A9?q=a%2Bb+c&n%00=x%00y", "/v1/users/café", ["q": "a+b c", "n\u{0}": "x\u{0}y"]),
            ("/v1/users/50%", "/v1/users/50%", [:]),
            ("/v1/users/%zz", "/v1/users/%zz", [:]),
        ]
        for (sent, path, query) in cases {
            let response = try connection.request("GET", sent)
            let echo = try #require(response.jsonObject)
            #expect(echo["raw_path"] as? String == String(sent.split(separator: "?", maxSplits: 1)[0]), "\(sent)")
            #expect(echo["path"] as? String == path, "\(sent)")
            #expect(echo["query"] as? [String: String] == query, "\(sent)")
        }
    }

    @Test("percent-decoding: lenient keeps what is not an escape, strict refuses it and bytes that are not UTF-8")
    func percentDecoding() {
        #expect(PercentEncoding.decodeLeniently("a%2Fb%00c%zz%4") == "a/b\u{0}c%zz%4")
        #expect(PercentEncoding.decodeStrictly("a%2Fb%00c") == "a/b\u{0}c")
        #expect(PercentEncoding.decodeStrictly("a%zz") == nil)
        #expect(PercentEncoding.decodeStrictly("a%4") == nil)
        #expect(PercentEncoding.decodeStrictly("%FF") == nil)
        #expect(PercentEncoding.decodeLeniently("%FF") == "\u{FFFD}")
        #expect(PercentEncoding.decodeStrictly("plain") == "plain")
    }

    @Test("a body up to the limit is delivered whole, also when chunked")
    func largeBodies() throws {
        let server = try startServer(EchoHandler()) { $0.maxBodyBytes = 256 * 1024 }
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        let body = [UInt8](repeating: UInt8(ascii: "z"), count: 256 * 1024)
        let response = try connection.request("POST", "/upload", body: body)
        #expect(response.status == 200)
        #expect(response.jsonObject?["body_length"] as? Int == body.count)

        try connection.send(
            "POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        let chunked = try connection.readResponse()
        #expect(chunked.status == 200)
        #expect(chunked.jsonObject?["body"] as? String == "hello world")
    }

    @Test("keep-alive: several requests share one connection")
    func keepAlive() throws {
        let events = ResponseEvents()
        let server = try startServer(EchoHandler(), events: events)
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        for index in 0..<5 {
            let response = try connection.request("GET", "/ping/\(index)")
            #expect(response.status == 200)
            #expect(response.headers["connection"]?.lowercased() != "close")
            #expect(response.jsonObject?["path"] as? String == "/ping/\(index)")
        }
        // Pipelined: both requests written before either response is read.
        try connection.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try connection.readResponse().jsonObject?["path"] as? String == "/a")
        #expect(try connection.readResponse().jsonObject?["path"] as? String == "/b")
        #expect(events.all.count == 7)
        #expect(events.all.allSatisfy { $0.origin == .handler && $0.status == 200 && $0.method == "GET" })
    }

    @Test("a suspended request is answered later from another thread without holding a server thread")
    func suspendedResponse() throws {
        let handler = HeldHandler()
        let server = try startServer(handler) { $0.threadCount = 1 }
        defer { server.close() }

        let slowConnections = try (0..<4).map { _ in try HTTPTestConnection(port: server.port) }
        for (index, connection) in slowConnections.enumerated() {
            try connection.sendRequest("GET", "/slow/\(index)")
        }
        #expect(waitUntil { handler.heldCount == 4 })
        #expect(server.requestsAwaitingResponse == 4)

        // The only server thread is free although four requests wait: a new request is served at once.
        let fast = try HTTPTestConnection(port: server.port)
        #expect(try fast.request("GET", "/fast").text == "fast")

        let responders = handler.takeAll()
        DispatchQueue.global().async {
            for (index, respond) in responders.enumerated() {
                respond(.text(201, "answer \(index)"))
                respond(.text(500, "too late"))  // ignored: the first response wins
            }
        }
        var answers = Set<String>()
        for connection in slowConnections {
            let response = try connection.readResponse()
            #expect(response.status == 201)
            answers.insert(response.text)
        }
        #expect(answers == ["answer 0", "answer 1", "answer 2", "answer 3"])
        #expect(waitUntil { server.requestsAwaitingResponse == 0 })
        // The connections stay usable after a suspended exchange.
        #expect(try slowConnections[0].request("GET", "/fast").status == 200)
    }

    @Test("a handler that does not respond in time gets a 503, and its late response is dropped")
    func deadline() throws {
        let handler = HeldHandler()
        let events = ResponseEvents()
        let server = try startServer(handler, configure: { $0.responseDeadline = .milliseconds(200) }, events: events)
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        let started = SystemTime.monotonicNanoseconds()
        let response = try connection.request("POST", "/never", body: Array("{}".utf8))
        let elapsed = SystemTime.secondsSince(started)
        #expect(response.status == 503)
        #expect(response.headers["content-type"] == "application/json")
        let error = try #require(response.jsonObject?["error"] as? [String: Any])
        #expect(error["code"] as? String == "deadline_exceeded")
        #expect(response.headers["retry-after"] == "1")
        #expect(elapsed >= 0.2)

        for respond in handler.takeAll() { respond(.text(200, "late")) }
        // Same connection, next request: the late answer did not leak into it.
        #expect(try connection.request("GET", "/fast").text == "fast")
        #expect(events.all.map(\.origin) == [.deadline, .handler])
        #expect(server.requestsAwaitingResponse == 0)
    }

    @Test("the deadline answer is configurable")
    func customDeadlineResponse() throws {
        let server = try startServer(HeldHandler()) {
            $0.responseDeadline = .milliseconds(100)
            $0.deadlineResponse = .json(504, #"{"error":{"code":"upstream_slow","message":"m"}}"#)
        }
        defer { server.close() }
        let response = try HTTPTestConnection(port: server.port).request("GET", "/never")
        #expect(response.status == 504)
        #expect(response.text.contains("upstream_slow"))
    }

    @Test("an idle keep-alive connection is closed after the idle timeout")
    func idleTimeout() throws {
        let server = try startServer(EchoHandler()) { $0.idleTimeoutSeconds = 1 }
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port, timeoutSeconds: 4)
        #expect(try connection.request("GET", "/").status == 200)
        let started = SystemTime.monotonicNanoseconds()
        #expect(connection.peerClosed())
        let waited = SystemTime.secondsSince(started)
        #expect(waited >= 0.5 && waited < 3.5, "closed after \(waited) s")
    }

    @Test("connections over the connection limit are refused")
    func connectionLimit() throws {
        let server = try startServer(EchoHandler()) {
            $0.connectionLimit = 2
            $0.threadCount = 1
        }
        defer { server.close() }
        let first = try HTTPTestConnection(port: server.port)
        let second = try HTTPTestConnection(port: server.port)
        #expect(try first.request("GET", "/").status == 200)
        #expect(try second.request("GET", "/").status == 200)
        let third = try HTTPTestConnection(port: server.port, timeoutSeconds: 2)
        #expect(throws: HTTPTestConnectionError.self) { try third.request("GET", "/") }
        // The refused connection may still sit in the listen backlog: left open, it would take the freed slot.
        third.close()
        // Capacity comes back when a connection goes away.
        first.close()
        #expect(
            waitUntil {
                (try? HTTPTestConnection(port: server.port, timeoutSeconds: 2).request("GET", "/").status) == 200
            })
    }

    @Test("a Content-Length over the limit is answered 413 before the body is sent")
    func declaredBodyTooLarge() throws {
        let events = ResponseEvents()
        let server = try startServer(EchoHandler(), configure: { $0.maxBodyBytes = 1024 }, events: events)
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        // Headers only: the 413 must come without the client sending a byte of the body.
        try connection.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1025\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(response.jsonObject.flatMap { $0["error"] as? [String: Any] }?["code"] as? String == "body_too_large")
        #expect(connection.peerClosed())
        #expect(events.all.map(\.origin) == [.bodyTooLarge])

        let exact = try HTTPTestConnection(port: server.port)
        #expect(try exact.request("POST", "/upload", body: [UInt8](repeating: 65, count: 1024)).status == 200)
    }

    @Test("a chunked body growing past the limit is answered 413 and never reaches the handler")
    func streamedBodyTooLarge() throws {
        let events = ResponseEvents()
        let server = try startServer(EchoHandler(), configure: { $0.maxBodyBytes = 1024 }, events: events)
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        let chunk = String(repeating: "a", count: 600)
        try connection.send(
            "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(events.all.map(\.origin) == [.bodyTooLarge])
    }

    @Test("a client streaming far past the limit is disconnected")
    func endlessBody() throws {
        let server = try startServer(EchoHandler()) { $0.maxBodyBytes = 1024 }
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        try connection.send("POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        let chunk = "400\r\n" + String(repeating: "b", count: 1024) + "\r\n"
        var refused = false
        for _ in 0..<64 where !refused {
            do { try connection.send(chunk) } catch { refused = true }
        }
        #expect(refused || connection.peerClosed())
    }

    @Test("headers over the connection memory limit are refused by the server")
    func headersTooLarge() throws {
        let server = try startServer(EchoHandler()) { $0.connectionMemoryLimitBytes = 8 * 1024 }
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        let big = String(repeating: "h", count: 16 * 1024)
        let response = try connection.request("GET", "/", headers: [("X-Big", big)])
        #expect(response.status == 431 || response.status == 413)
    }

    @Test("a malformed request is answered 400 by libmicrohttpd itself, not JSON (as openapi.yaml says)")
    func malformedRequest() throws {
        let server = try startServer(EchoHandler())
        defer { server.close() }
        let connection = try HTTPTestConnection(port: server.port)
        try connection.send("GET / HTTP/1.1\r\nHost: x\r\nnot a header line\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 400)
        #expect(response.jsonObject == nil)
        #expect(response.headers["connection"]?.lowercased() == "close")
    }

    @Test("stop answers waiting requests that miss the grace period with 503, then refuses connections")
    func closeWithWaitingRequests() throws {
        let handler = HeldHandler()
        let server = try startServer(handler) { $0.stopGracePeriod = .milliseconds(200) }
        let port = server.port
        let connection = try HTTPTestConnection(port: port)
        try connection.sendRequest("GET", "/waiting")
        #expect(waitUntil { handler.heldCount == 1 })
        server.close()
        let response = try connection.readResponse()
        #expect(response.status == 503)
        #expect(response.headers["retry-after"] != nil)
        #expect(throws: HTTPTestConnectionError.self) { try HTTPTestConnection(port: port) }
        server.close()  // idempotent
    }

    @Test("while stop waits for its grace period, a request on a new connection is answered 503, connection closed")
    func newConnectionDuringStop() throws {
        let handler = HeldHandler()
        let server = try startServer(handler) { $0.stopGracePeriod = .seconds(5) }
        let port = server.port
        let waiting = try HTTPTestConnection(port: port)
        try waiting.sendRequest("GET", "/waiting")
        #expect(waitUntil { handler.heldCount == 1 })
        let closed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            server.close()
            closed.signal()
        }
        // `/fast` is answered 200 at once by the handler until the stop begins, then 503 by the server.
        #expect(waitUntil { (try? HTTPTestConnection(port: port).request("GET", "/fast").status) == 503 })
        let late = try HTTPTestConnection(port: port).request("GET", "/fast")
        #expect(late.status == 503)
        #expect(late.headers["retry-after"] != nil)
        #expect(late.headers["connection"]?.lowercased() == "close")
        #expect(handler.heldCount == 1)
        for respond in handler.takeAll() { respond(.text(200, "drained")) }
        #expect(try waiting.readResponse().status == 200)
        #expect(closed.wait(timeout: .now() + 10) == .success)
    }

    @Test("stop waits for requests answered within the grace period")
    func closeDrains() throws {
        let handler = HeldHandler()
        let server = try startServer(handler) { $0.stopGracePeriod = .seconds(5) }
        let connection = try HTTPTestConnection(port: server.port)
        try connection.sendRequest("GET", "/waiting")
        #expect(waitUntil { handler.heldCount == 1 })
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(150)) {
            for respond in handler.takeAll() { respond(.text(200, "drained")) }
        }
        server.close()
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "drained")
    }

    @Test("responses racing stop: every waiting client gets its answer or a 503, late ones are dropped")
    func responsesRacingStop() throws {
        let handler = HeldHandler()
        let server = try startServer(handler) {
            $0.stopGracePeriod = .milliseconds(20)
            $0.threadCount = 2
        }
        let connections = try (0..<12).map { _ in try HTTPTestConnection(port: server.port) }
        for connection in connections { try connection.sendRequest("GET", "/waiting") }
        #expect(waitUntil { handler.heldCount == connections.count })
        let responders = handler.takeAll()
        // Answered one by one from another thread while stop runs: some before the grace ends, some while stop
        // answers 503 and tears the connections down, some after.
        let answering = DispatchGroup()
        DispatchQueue.global().async(group: answering) {
            for respond in responders {
                respond(.text(200, "late"))
                usleep(3_000)
            }
        }
        server.close()
        answering.wait()
        for connection in connections {
            let response = try connection.readResponse()
            #expect(response.status == 200 || response.status == 503)
        }
    }

    @Test("per-IP connection limit refuses the connection over the limit")
    func perIPLimit() throws {
        let handler = HeldHandler()
        let server = try startServer(handler) { $0.perIPConnectionLimit = 2 }
        defer { server.close() }
        let first = try HTTPTestConnection(port: server.port)
        let second = try HTTPTestConnection(port: server.port)
        #expect(try first.request("GET", "/fast").status == 200)
        #expect(try second.request("GET", "/fast").status == 200)
        let third = try HTTPTestConnection(port: server.port, timeoutSeconds: 2)
        // Accepted by the kernel, then closed by libmicrohttpd without an answer.
        #expect(throws: HTTPTestConnectionError.self) { try third.request("GET", "/fast") }
        #expect(waitUntil { server.connectionStatistics.refused == 1 })
    }
}

