import CCurl
import Dispatch

/// One request's state while libcurl works on it: the easy handle, the request body and header list libcurl reads
/// from, the response bytes it writes into, and the completion to call.
///
/// Invariant: after `CurlMultiLoop` took it from the pending queue, only the loop thread touches it, until the
/// completion is handed to a completion queue. The body buffer stays allocated until `release()`, which the loop
/// calls after the easy handle left the multi handle.
final class CurlTransfer: @unchecked Sendable {
    typealias Completion = @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void

    let request: HTTPClientRequest
    let completion: Completion
    var easy: UnsafeMutableRawPointer?
    /// The shared header list libcurl reads while the transfer runs (see `CurlHeaderLists`).
    var headerList: UnsafeMutablePointer<curl_slist>?
    var responseBody: [UInt8] = []
    var responseTooLarge = false
    let maxResponseBytes: Int
    private var bodyBuffer: UnsafeMutableRawBufferPointer?
    /// libcurl writes its detailed error text here (CURLOPT_ERRORBUFFER).
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    /// When `send` was called: the timeout counts from here, time spent queued for a window slot included.
    let submittedAtNanoseconds = DispatchTime.now().uptimeNanoseconds

    init(request: HTTPClientRequest, maxResponseBytes: Int, completion: @escaping Completion) {
        self.request = request
        self.maxResponseBytes = maxResponseBytes
        self.completion = completion
        errorBuffer.initialize(to: 0)
    }

    deinit {
        release()
        errorBuffer.deallocate()
    }

    /// Options every request shares; set once when the loop creates an easy handle (handles are reused without
    /// `curl_easy_reset`, so per-request options below are always set again).
    static func configureShared(
        easy: UnsafeMutableRawPointer, configuration: HTTPClientConfiguration, proxies: CurlProxyEnvironment
    ) -> CURLcode {
        var codes: [CURLcode] = [
            // Set, even to "", so libcurl takes the list from here instead of reading the environment per transfer.
            ccurl_easy_setopt_string(easy, CURLOPT_NOPROXY, proxies.noProxy),
            ccurl_easy_setopt_long(easy, CURLOPT_POST, 1),
            ccurl_easy_setopt_write_cb(easy, CurlCallbacks.onWrite),
            ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1),
            ccurl_easy_setopt_long(easy, CURLOPT_TCP_NODELAY, 1),
            ccurl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1),
            ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1),
            ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2),
            ccurl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS),
            ccurl_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"),
            ccurl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0),
            // The User-Agent and Accept-Encoding lines travel in the shared header lists (`CurlHeaderLists`), so
            // libcurl does not format them anew for each request; this option still makes it decode compressed
            // answers.
            ccurl_easy_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, ""),
        ]
        if proxies.configuresAnyProxy {
            // libcurl takes the User-Agent of a proxy's CONNECT from this option only (the header lists go to the
            // origin); it formats it per request then, the price of going through a proxy.
            codes.append(ccurl_easy_setopt_string(easy, CURLOPT_USERAGENT, configuration.userAgent))
        }
        if let caBundle = configuration.caBundlePath {
            codes.append(ccurl_easy_setopt_string(easy, CURLOPT_CAINFO, caBundle))
        }
        return codes.first(where: { $0 != CURLE_OK }) ?? CURLE_OK
    }

    /// Sets this request's own options on `easy`. `headers` is a header list the loop owns and keeps alive until
    /// this transfer left the multi handle.
    /// Returns an error for a request libcurl refuses.
    func configure(
        easy: UnsafeMutableRawPointer, headers: UnsafeMutablePointer<curl_slist>?,
        configuration: HTTPClientConfiguration, proxies: CurlProxyEnvironment
    ) -> HTTPClientError? {
        self.easy = easy
        let body = UnsafeMutableRawBufferPointer.allocate(byteCount: max(request.body.count, 1), alignment: 1)
        request.body.withUnsafeBytes { source in
            if let base = source.baseAddress { body.baseAddress!.copyMemory(from: base, byteCount: source.count) }
        }
        bodyBuffer = body
        let queuedMs = Int((DispatchTime.now().uptimeNanoseconds &- submittedAtNanoseconds) / 1_000_000)
        let timeout = min(request.timeoutMs ?? configuration.requestTimeoutMs, configuration.requestTimeoutMs) - queuedMs
        guard timeout > 0 else {
            return HTTPClientError(
                kind: .timeout, curlCode: Int32(CURLE_OPERATION_TIMEDOUT.rawValue),
                message: "timed out after \(queuedMs) ms waiting for a free slot in the in-flight window")
        }
        let isHTTPS = CurlProxyEnvironment.isHTTPS(request.url)
        // Handles are reused: a POST sets its body (which makes it a POST again), a PUT is a POST with its verb
        // replaced (libcurl copies the string), a GET says so explicitly; a recycled handle has no verb left over.
        let method: [CURLcode] =
            switch request.method {
            case .post, .put:
                [
                    ccurl_easy_setopt_ptr(easy, CURLOPT_POSTFIELDS, body.baseAddress),
                    ccurl_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)),
                    request.method == .put
                        ? ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, "PUT")
                        : ccurl_easy_setopt_ptr(easy, CURLOPT_CUSTOMREQUEST, nil),
                ]
            case .get:
                [
                    ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1),
                    ccurl_easy_setopt_ptr(easy, CURLOPT_CUSTOMREQUEST, nil),
                ]
            }
        let codes: [CURLcode] = method + [
            ccurl_easy_setopt_string(easy, CURLOPT_URL, request.url),
            // The environment's proxy for this URL's scheme, read once (`CurlProxyEnvironment`); "" for none.
            ccurl_easy_setopt_string(easy, CURLOPT_PROXY, proxies.proxy(forURL: request.url)),
            ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headers),
            ccurl_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, Unmanaged.passUnretained(self).toOpaque()),
            ccurl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, errorBuffer),
            ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeout),
            ccurl_easy_setopt_long(
                easy, CURLOPT_CONNECTTIMEOUT_MS, max(1, min(timeout, configuration.connectTimeoutMs))),
            // Over TLS, wait for an HTTP/2 connection being set up rather than opening a parallel one, so requests
            // multiplex.
            ccurl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, isHTTPS ? 1 : 0),
        ]
        if let failed = codes.first(where: { $0 != CURLE_OK }) {
            return HTTPClientError(
                kind: .other, curlCode: Int32(failed.rawValue), message: String(cString: curl_easy_strerror(failed)))
        }
        return nil
    }

    /// Appends received bytes; false when the response outgrew the limit (the transfer is then aborted).
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard responseBody.count + bytes.count <= maxResponseBytes else {
            responseTooLarge = true
            return false
        }
        if responseBody.isEmpty { responseBody.reserveCapacity(max(bytes.count, 4096)) }
        responseBody.append(contentsOf: bytes)
        return true
    }

    /// The outcome of a finished transfer, from libcurl's result code.
    func result(code: CURLcode) -> Result<HTTPClientResponse, HTTPClientError> {
        guard code == CURLE_OK else {
            if responseTooLarge {
                return .failure(
                    HTTPClientError(
                        kind: .responseTooLarge, curlCode: Int32(code.rawValue),
                        message: "response over \(maxResponseBytes) bytes"))
            }
            let detail = String(cString: errorBuffer)
            let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            return .failure(
                HTTPClientError(kind: Self.kind(of: code), curlCode: Int32(code.rawValue), message: message))
        }
        var status = 0
        var version = 0
        var connects = 0
        if let easy {
            _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            _ = ccurl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
            _ = ccurl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        }
        return .success(
            HTTPClientResponse(
                status: status, body: responseBody, httpVersion: Self.versionName(version), connectionsOpened: connects,
                headers: requestedHeaders()))
    }

    /// The response headers the request asked for, read from libcurl's header store (nothing is collected while
    /// the transfer runs).
    private func requestedHeaders() -> [String: String] {
        guard !request.responseHeaders.isEmpty, let easy else { return [:] }
        var headers: [String: String] = [:]
        for name in request.responseHeaders {
            if let value = ccurl_easy_header_value(easy, name) {
                headers[name.lowercased()] = String(cString: value)
            }
        }
        return headers
    }

    /// CURL_HTTP_VERSION_* as text.
    static func versionName(_ version: Int) -> String {
        switch version {
        case Int(CURL_HTTP_VERSION_1_0): "1.0"
        case Int(CURL_HTTP_VERSION_1_1): "1.1"
        case Int(CURL_HTTP_VERSION_2_0): "2"
        case Int(CURL_HTTP_VERSION_3): "3"
        default: ""
        }
    }

    static func kind(of code: CURLcode) -> HTTPClientError.Kind {
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            .timeout
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_GOT_NOTHING,
            CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            .connectionFailed
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
            CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE, CURLE_SSL_SHUTDOWN_FAILED:
            .tls
        default:
            .other
        }
    }

    /// Frees what libcurl read from; call only after the easy handle left the multi handle.
    func release() {
        bodyBuffer?.deallocate()
        bodyBuffer = nil
    }
}
