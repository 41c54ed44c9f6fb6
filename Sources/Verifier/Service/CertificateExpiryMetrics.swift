import Crypto
import ServiceSupport

/// `verifier_certificate_expiry_timestamp_seconds{role,subject,serial}`: the `notAfter` of every trusted root
/// (`role="root"`) and of the leaves and intermediates of the signing chains in use (those the signed-data verifiers
/// have cached), computed when scraped. An alert fires weeks before one of them expires (deploy/monitoring): a root
/// or intermediate about to expire needs new roots configured, a leaf about to expire should be rotated by Apple.
enum CertificateExpiryMetrics {
    static let name = "verifier_certificate_expiry_timestamp_seconds"

    static func register(
        in metrics: MetricsRegistry, roots: [Certificate], chainsInUse: @escaping @Sendable () -> [CertificateChain]
    ) {
        metrics.collect(
            name, help: "notAfter (seconds since 1970) of the trusted roots and of the signing chains in use",
            kind: .gauge
        ) {
            series(roots: roots, chains: chainsInUse())
        }
    }

    /// One series per distinct certificate: roots first, then each chain's leaf and intermediate.
    static func series(roots: [Certificate], chains: [CertificateChain]) -> [(MetricLabels, Double)] {
        var seen: Set<Certificate> = []
        var series: [(MetricLabels, Double)] = []
        func add(_ certificate: Certificate, role: String) {
            guard seen.insert(certificate).inserted else { return }
            let labels: MetricLabels = [
                ("role", role), ("subject", commonName(certificate.subject)), ("serial", certificate.serialNumberHex),
            ]
            series.append((labels, Double(certificate.notAfter)))
        }
        for root in roots { add(root, role: "root") }
        for chain in chains {
            let path = chain.certificates
            if path.count > 0 { add(path[0], role: "leaf") }
            if path.count > 1 { add(path[1], role: "intermediate") }
            if path.count > 2 { add(path[2], role: "root") }
        }
        return series
    }

    /// The `CN=` of an RFC 2253 name (the whole name when it has none), short enough for a label.
    static func commonName(_ subject: String) -> String {
        for part in subject.split(separator: ",") where part.hasPrefix("CN=") {
            return String(part.dropFirst(3).prefix(96))
        }
        return String(subject.prefix(96))
    }
}
