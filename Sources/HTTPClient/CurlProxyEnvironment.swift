import Foundation

/// The proxy settings libcurl reads from the environment, read once when a client starts instead of by libcurl for
/// every transfer (five `getenv` calls and the proxy detection per request, ~2,000 instructions each time).
///
/// The transfers set `CURLOPT_NOPROXY` and `CURLOPT_PROXY` from these values, which gives exactly libcurl's own
/// environment rules (7.88, `url.c`): `no_proxy` (else `NO_PROXY`) lists the hosts that go direct; otherwise the
/// proxy is `<scheme>_proxy` in lower case (`https_proxy`, `http_proxy`), then in upper case except `HTTP_PROXY`
/// (libcurl ignores it: a CGI program's `Proxy:` request header arrives as that variable), then `all_proxy`, then
/// `ALL_PROXY`. A variable set to the empty string counts as unset, as in libcurl. An empty proxy means none.
struct CurlProxyEnvironment: Sendable, Equatable {
    /// The `no_proxy` list ("" when unset).
    let noProxy: String
    /// The proxy for http:// and for https:// URLs ("" for none).
    let httpProxy: String
    let httpsProxy: String

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        func value(_ name: String) -> String? {
            guard let value = environment[name], !value.isEmpty else { return nil }
            return value
        }
        let all = value("all_proxy") ?? value("ALL_PROXY")
        noProxy = value("no_proxy") ?? value("NO_PROXY") ?? ""
        httpProxy = value("http_proxy") ?? all ?? ""
        httpsProxy = value("https_proxy") ?? value("HTTPS_PROXY") ?? all ?? ""
    }

    /// Some URL goes through a proxy.
    var configuresAnyProxy: Bool { !httpProxy.isEmpty || !httpsProxy.isEmpty }

    /// The proxy for `url` ("" for none): https:// URLs use the https rules, every other one the http rules (the
    /// client allows only these two schemes; libcurl takes a URL without one for http).
    func proxy(forURL url: String) -> String {
        Self.isHTTPS(url) ? httpsProxy : httpProxy
    }

    /// `url` starts with `https:` in any ASCII case.
    static func isHTTPS(_ url: String) -> Bool {
        url.utf8.count > 6 && url.utf8.prefix(6).elementsEqual("https:".utf8) { $0 | 0x20 == $1 }
    }
}
