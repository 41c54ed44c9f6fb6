import AppStore
import Foundation
import HTTPClient
import TestSupport
import Testing

private let nghttpdPath = "/usr/sbin/nghttpd"

/// HTTP/2 over TLS against `nghttpd` (Debian package nghttp2-server): requests multiplex on one connection.
@Suite(
    .serialized,
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: nghttpdPath),
        "needs nghttpd (Debian package nghttp2-server, installed by scripts/install-deps.sh)"))
struct HTTP2Tests {
    static let nghttpd = nghttpdPath

    @Test func concurrentRequestsMultiplexOnOneConnection() async throws {
        let directory = try TLSTests.makeCertificate(subjectAltName: "IP:127.0.0.1")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/htdocs", withIntermediateDirectories: true)
        try TLSTests.validBody.write(toFile: directory + "/htdocs/verifyReceipt", atomically: true, encoding: .utf8)
        let port = try EndToEndTests.unusedPort()
        let server = try ManagedProcess(
            executable: Self.nghttpd,
            arguments: ["-d", directory + "/htdocs", String(port), directory + "/key.pem", directory + "/cert.pem"],
            name: "nghttpd")
        defer { server.send(signal: SIGKILL) }

        let client = try CurlHTTPClient(
            configuration: HTTPClientConfiguration(
                maxInFlight: 64, requestTimeoutMs: 5_000, caBundlePath: directory + "/cert.pem"))
        defer { client.close() }
        let url = "https://127.0.0.1:\(port)/verifyReceipt"
        let body = Array(#"{"receipt-data":"AAAA"}"#.utf8)
        // Wait until the server listens.
        let ready = await eventually {
            if case .success = await client.send(HTTPClientRequest(url: url, body: body)) { return true }
            return false
        }
        try #require(ready, "nghttpd did not start: \(server.stderrTail())")

        let fresh = try CurlHTTPClient(
            configuration: HTTPClientConfiguration(
                maxInFlight: 64, requestTimeoutMs: 5_000, caBundlePath: directory + "/cert.pem"))
        defer { fresh.close() }
        let responses = try await withThrowingTaskGroup(of: HTTPClientResponse.self) { group in
            for _ in 0..<20 {
                group.addTask { try await fresh.send(HTTPClientRequest(url: url, body: body)).get() }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.count == 20)
        #expect(responses.allSatisfy { $0.status == 200 && $0.httpVersion == "2" })
        #expect(responses.map(\.connectionsOpened).reduce(0, +) == 1, "20 requests, one TLS connection")
        #expect(try VerifyReceiptResponse.decode(responses[0].body).bundleId == "com.example.game")
    }
}
