@testable import HTTPClient
import Testing

/// The proxy settings read once from the environment give libcurl's own per-transfer rules (7.88 `url.c`).
@Suite struct CurlProxyEnvironmentTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let environment: [String: String]
        let url: String
        let proxy: String
        var testDescription: String { "\(environment) \(url) -> '\(proxy)'" }
    }

    static let cases: [Case] = [
        Case(environment: [:], url: "https://buy.itunes.apple.com/verifyReceipt", proxy: ""),
        Case(environment: ["https_proxy": "http://lower:1"], url: "https://a/", proxy: "http://lower:1"),
        Case(environment: ["HTTPS_PROXY": "http://upper:1"], url: "https://a/", proxy: "http://upper:1"),
        // Lower case first, as libcurl.
        Case(
            environment: ["https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:1"], url: "HTTPS://a/",
            proxy: "http://lower:1"),
        Case(environment: ["http_proxy": "http://p:1"], url: "http://127.0.0.1:9/", proxy: "http://p:1"),
        // libcurl ignores HTTP_PROXY (a CGI program's request header `Proxy:` arrives as that variable).
        Case(environment: ["HTTP_PROXY": "http://p:1"], url: "http://127.0.0.1:9/", proxy: ""),
        Case(environment: ["https_proxy": "http://p:1"], url: "http://127.0.0.1:9/", proxy: ""),
        Case(environment: ["all_proxy": "http://all:1"], url: "http://127.0.0.1:9/", proxy: "http://all:1"),
        Case(environment: ["ALL_PROXY": "http://all:2"], url: "https://a/", proxy: "http://all:2"),
        Case(
            environment: ["all_proxy": "http://all:1", "ALL_PROXY": "http://all:2"], url: "https://a/",
            proxy: "http://all:1"),
        Case(
            environment: ["https_proxy": "http://s:1", "all_proxy": "http://all:1"], url: "https://a/",
            proxy: "http://s:1"),
        // An empty variable counts as unset.
        Case(environment: ["https_proxy": "", "all_proxy": "http://all:1"], url: "https://a/", proxy: "http://all:1"),
    ]

    @Test(arguments: cases) func theProxyForAURLFollowsLibcurlsEnvironmentRules(_ testCase: Case) {
        #expect(CurlProxyEnvironment(environment: testCase.environment).proxy(forURL: testCase.url) == testCase.proxy)
    }

    @Test func noProxyIsReadLowerCaseFirstAndEmptyWhenUnset() {
        #expect(CurlProxyEnvironment(environment: [:]).noProxy == "")
        #expect(CurlProxyEnvironment(environment: ["NO_PROXY": "b"]).noProxy == "b")
        #expect(CurlProxyEnvironment(environment: ["no_proxy": "a", "NO_PROXY": "b"]).noProxy == "a")
        #expect(CurlProxyEnvironment(environment: ["no_proxy": "", "NO_PROXY": "b"]).noProxy == "b")
    }

    @Test func aProxyForEitherSchemeCountsAsConfigured() {
        #expect(!CurlProxyEnvironment(environment: [:]).configuresAnyProxy)
        let ignoredOnly = CurlProxyEnvironment(environment: ["no_proxy": "*", "HTTP_PROXY": "http://ignored:1"])
        #expect(!ignoredOnly.configuresAnyProxy)
        #expect(CurlProxyEnvironment(environment: ["https_proxy": "http://p:1"]).configuresAnyProxy)
        #expect(CurlProxyEnvironment(environment: ["all_proxy": "http://p:1"]).configuresAnyProxy)
    }
}
