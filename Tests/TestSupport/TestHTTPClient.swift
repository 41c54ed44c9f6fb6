import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A response as a test sees it.
public struct TestHTTPResponse: Sendable {
    public let status: Int
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

/// Minimal HTTP client for tests (URLSession, no caching, no cookies).
public enum TestHTTPClient {
    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        configuration.httpMaximumConnectionsPerHost = 64
        return URLSession(configuration: configuration)
    }()

    public static func send(
        _ method: String, _ url: String, headers: [String: String] = [:], body: Data? = nil,
        timeout: TimeInterval = 30
    ) async throws -> TestHTTPResponse {
        guard let target = URL(string: url) else { throw TestSupportError("bad URL \(url)") }
        var request = URLRequest(url: target, timeoutInterval: timeout)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw TestSupportError("not an HTTP response from \(url)") }
        var responseHeaders: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            responseHeaders[String(describing: name)] = String(describing: value)
        }
        return TestHTTPResponse(status: http.statusCode, headers: responseHeaders, body: data)
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
}
