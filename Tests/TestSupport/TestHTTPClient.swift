import Foundation

/// A response as a test sees it.
public struct TestHTTPResponse: Sendable {
    public let status: Int
    /// Header names lower-cased (use `header(_:)`).
    public let headers: [String: String]
    public let body: Data

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object, or nil.
    public var jsonObject: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    }

    /// A header by case-insensitive name.
    public func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Minimal HTTP/1.1 client for tests: one `HTTPTestConnection` per request (`Connection: close`), its blocking I/O
/// on a thread of its own. Neither a cooperative thread nor a Dispatch worker: on 2 cores libdispatch's global pool
/// has 2 threads and adds more only slowly when they block, so requests waiting there would hold up what else runs
/// on it (such as the pipe readers of `ManagedProcess`).
///
/// Plain sockets rather than FoundationNetworking's URLSession: URLSession leaks libcurl's URL handles
/// (`_EasyHandle.set(url:)`) on every request, which LeakSanitizer reports in every test process that uses it
/// (`make test-sanitize`), and it would hide our own leaks behind a suppression.
public enum TestHTTPClient {
    /// Sends one request to `url` (`http://<IPv4 or localhost>:<port><path>[?query]`).
    /// - Parameter timeout: the longest wait for the connection to accept or deliver bytes.
    public static func send(
        _ method: String, _ url: String, headers: [String: String] = [:], body: Data? = nil,
        timeout: TimeInterval = 30
    ) async throws -> TestHTTPResponse {
        let target = try Target(url)
        let requestHeaders = headers.map { ($0.key, $0.value) } + [("Connection", "close")]
        let bytes = body.map { [UInt8]($0) } ?? []
        let timeoutSeconds = max(1, Int(timeout.rounded(.up)))
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        let connection = try HTTPTestConnection(
                            host: target.host, port: target.port, timeoutSeconds: timeoutSeconds)
                        let response = try connection.request(
                            method, target.requestTarget, headers: requestHeaders, body: bytes, bodyEndsAtClose: true)
                        return TestHTTPResponse(
                            status: response.status, headers: response.headers, body: Data(response.body))
                    })
            }
        }
    }

    /// POSTs `json` (an object encodable by JSONSerialization) with `Content-Type: application/json`.
    public static func postJSON(
        _ url: String, _ json: [String: Any], headers: [String: String] = [:], timeout: TimeInterval = 30
    ) async throws -> TestHTTPResponse {
        let body = try JSONSerialization.data(withJSONObject: json)
        var allHeaders = headers
        allHeaders["Content-Type"] = allHeaders["Content-Type"] ?? "application/json"
        return try await send("POST", url, headers: allHeaders, body: body, timeout: timeout)
    }

    /// Where a URL points: the address to connect to and the request target to send.
    private struct Target: Sendable {
        let host: String
        let port: UInt16
        let requestTarget: String

        init(_ url: String) throws {
            guard let components = URLComponents(string: url), components.scheme == "http",
                let host = components.host, let port = components.port, let port = UInt16(exactly: port)
            else { throw TestSupportError("not an http://host:port URL: \(url)") }
            self.host = host == "localhost" ? "127.0.0.1" : host
            self.port = port
            let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            requestTarget = path + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        }
    }
}
