import Crypto
import Foundation
import Testing
import TestPKI

/// Test fixtures next to this file (see Fixtures/README.md) and a small minted PKI.
enum CryptoFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func path(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }

    static func certificate(_ name: String) throws -> Certificate {
        try #require(try Certificate.load(path: path(name)).first)
    }

    /// 2023-04-12T15:20:46Z, the validation time Apple's own tests use for its 2021 receipt-signing leaf.
    static let april2023: Int64 = 1_681_312_846
    static let day: Int64 = 86_400

    /// Root (P-384) → intermediate (P-256, marker 6.2.1) → leaf (P-256, marker 6.11.1), all valid for a year
    /// around `april2023` unless told otherwise.
    struct PKI {
        let root: CertificateAuthority
        let intermediate: CertificateAuthority
        let leaf: MintedCertificate

        init(leafNotBefore: Int64 = april2023 - 30 * day, leafNotAfter: Int64 = april2023 + 30 * day) throws {
            root = try CertificateAuthority.makeRoot(notBefore: april2023 - 365 * day, notAfter: april2023 + 365 * day)
            intermediate = try root.issueIntermediate(notBefore: april2023 - 200 * day, notAfter: april2023 + 200 * day)
            leaf = try intermediate.issueLeaf(notBefore: leafNotBefore, notAfter: leafNotAfter)
        }
    }
}
