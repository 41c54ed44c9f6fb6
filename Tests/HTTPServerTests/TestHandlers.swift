import Foundation
import HTTPServer
import ServiceSupport
import Synchronization

/// Answers at once with what it received, as JSON.
struct EchoHandler: HTTPHandler {
    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        let object: [String: Any] = [
            "method": request.method, "path": request.path, "raw_path": request.rawPath, "query": request.query,
            "headers": request.headers,
            "body_length": request.body.count, "body": String(decoding: request.body, as: UTF8.self),
            "remote": request.remoteAddress ?? "",
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        respond(HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(data)))
    }
}

/// Keeps every responder until the test releases it; `/fast` is answered at once.
final class HeldHandler: HTTPHandler {
    private let held = Locked<[HTTPResponder]>([])

    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        if request.path == "/fast" {
            respond(.text(200, "fast"))
            return
        }
        held.withLock { $0.append(respond) }
    }

    var heldCount: Int { held.withLock { $0.count } }

    /// Takes the held responders (the test answers them).
    func takeAll() -> [HTTPResponder] {
        held.withLock { held in
            defer { held = [] }
            return held
        }
    }
}

/// Collects the server's response events.
final class ResponseEvents: Sendable {
    private let events = Locked<[HTTPResponseEvent]>([])

    func record(_ event: HTTPResponseEvent) { events.withLock { $0.append(event) } }
    var all: [HTTPResponseEvent] { events.withLock { $0 } }
}

/// A logger that drops everything (tests assert on behaviour, not log lines).
struct DiscardingSink: LogSink {
    func write(line: String) {}
}

func quietLogger() -> Logger {
    Logger(label: "http-server-test", threshold: .error, sink: DiscardingSink())
}

/// A started server on an ephemeral loopback port.
func startServer(
    _ handler: any HTTPHandler, configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    events: ResponseEvents? = nil
) throws -> HTTPServer {
    var configuration = HTTPServerConfiguration(listen: ListenAddress(host: "127.0.0.1", port: 0))
    configuration.idleTimeoutSeconds = 10
    configure(&configuration)
    var onResponse: (@Sendable (HTTPResponseEvent) -> Void)?
    if let events {
        onResponse = { event in events.record(event) }
    }
    let server = HTTPServer(
        configuration: configuration, handler: handler, logger: quietLogger(), onResponse: onResponse)
    try server.start()
    return server
}
