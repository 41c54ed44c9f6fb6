import AppStore
import Foundation
import HTTPClient
import TestSupport
import Testing

/// TLS verification against a local HTTPS server (Python's ssl module) with a self-signed certificate made by
/// `openssl` for this run.
@Suite(.serialized) struct TLSTests {
    static let validBody =
        #"{"status":0,"environment":"Production","receipt":{"bundle_id":"com.example.game","in_app":["#
        + #"{"transaction_id":"7","product_id":"p","purchase_date_ms":"1","quantity":"1"}]}}"#

    static let serverScript = """
        import http.server, ssl, sys
        BODY = sys.argv[3].encode()
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                self.wfile.write(BODY)
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[1], sys.argv[2])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        print("PORT=%d" % server.server_address[1], flush=True)
        server.serve_forever()
        """

    /// A directory with `cert.pem`/`key.pem` for `subject`, and the server script.
    static func makeCertificate(subjectAltName: String) throws -> String {
        let directory = NSTemporaryDirectory() + "appstore-tls-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-days", "1", "-subj", "/CN=receipts-test", "-addext", "subjectAltName=\(subjectAltName)",
            "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem",
        ]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        guard openssl.terminationStatus == 0 else {
            throw TestSupportError("openssl failed: \(openssl.terminationStatus)")
        }
        try serverScript.write(toFile: directory + "/server.py", atomically: true, encoding: .utf8)
        return directory
    }

    static func startServer(_ directory: String) async throws -> (ManagedProcess, String) {
        let process = try ManagedProcess(
            executable: "/usr/bin/env",
            arguments: [
                "python3", directory + "/server.py", directory + "/cert.pem", directory + "/key.pem", validBody,
            ],
            name: "tls-server")
        let line = try await process.waitForStdoutLine { $0.hasPrefix("PORT=") }
        return (process, "https://127.0.0.1:\(line.dropFirst(5))/verifyReceipt")
    }

    static func post(_ url: String, caBundle: String?) async throws -> Result<HTTPClientResponse, HTTPClientError> {
        let client = try CurlHTTPClient(
            configuration: HTTPClientConfiguration(
                maxInFlight: 4, requestTimeoutMs: 5_000, caBundlePath: caBundle))
        defer { client.close() }
        return await client.send(HTTPClientRequest(url: url, body: Array(#"{"receipt-data":"AAAA"}"#.utf8)))
    }

    @Test func anUntrustedCertificateIsRefused() async throws {
        let directory = try Self.makeCertificate(subjectAltName: "IP:127.0.0.1")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (server, url) = try await Self.startServer(directory)
        defer { server.send(signal: SIGKILL) }

        let refused = try await Self.post(url, caBundle: nil)
        guard case .failure(let error) = refused else {
            Issue.record("an untrusted certificate was accepted")
            return
        }
        #expect(error.kind == .tls)

        // The same server is accepted once its certificate is trusted through the CA bundle setting.
        let trusted = try await Self.post(url, caBundle: directory + "/cert.pem")
        let response = try trusted.get()
        #expect(response.status == 200)
        #expect(try VerifyReceiptResponse.decode(response.body).bundleId == "com.example.game")
    }

    @Test func aTrustedCertificateForAnotherHostIsRefused() async throws {
        let directory = try Self.makeCertificate(subjectAltName: "DNS:elsewhere.example")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (server, url) = try await Self.startServer(directory)
        defer { server.send(signal: SIGKILL) }

        let result = try await Self.post(url, caBundle: directory + "/cert.pem")
        guard case .failure(let error) = result else {
            Issue.record("a certificate for another host was accepted")
            return
        }
        #expect(error.kind == .tls)
    }
}
