import CMicroHTTPD
import Foundation
import ServiceSupport

/// A numeric IPv4 or IPv6 listen address as a `sockaddr` for `MHD_OPTION_SOCK_ADDR`.
struct SocketAddress {
    private var storage = sockaddr_storage()
    let isIPv6: Bool

    /// - Throws: `HTTPServerError` when the host is not an IP literal (`localhost` is accepted as `127.0.0.1`).
    init(_ listen: ListenAddress) throws {
        var host = listen.host
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { host = "127.0.0.1" }
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = listen.port.bigEndian
            withUnsafeMutableBytes(of: &storage) { target in
                withUnsafeBytes(of: v4) { target.copyMemory(from: $0) }
            }
            isIPv6 = false
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = listen.port.bigEndian
            withUnsafeMutableBytes(of: &storage) { target in
                withUnsafeBytes(of: v6) { target.copyMemory(from: $0) }
            }
            isIPv6 = true
        } else {
            throw HTTPServerError("listen address '\(listen)' is not an IPv4 or IPv6 address")
        }
    }

    /// Calls `body` with a pointer valid only during the call.
    mutating func withSockaddr<T>(_ body: (UnsafeMutableRawPointer) -> T) -> T {
        withUnsafeMutableBytes(of: &storage) { body($0.baseAddress!) }
    }
}
