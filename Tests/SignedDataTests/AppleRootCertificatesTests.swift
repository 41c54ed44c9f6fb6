@_spi(Testing) import Crypto
import Foundation
import SignedData
import Testing

@Suite("AppleRootCertificates")
struct AppleRootCertificatesTests {
    @Test("finds the shipped roots, whose fingerprints are Apple's published ones")
    func shippedRoots() throws {
        let g3 = try Certificate.load(path: try #require(AppleRootCertificates.defaultSignedDataRootsPath))
        #expect(g3.map(\.fingerprintText)
            == ["63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79"])
        let inc = try Certificate.load(path: try #require(AppleRootCertificates.defaultReceiptRootsPath))
        #expect(inc.map(\.fingerprintText)
            == ["B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24"])
    }

    @Test("looks next to the executable first, then in ../share/receipt-verification/certificates")
    func searchOrder() throws {
        let base = NSTemporaryDirectory() + "roots-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        let share = base + "/share/receipt-verification/certificates"
        try FileManager.default.createDirectory(atPath: share, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/bin", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: share + "/AppleRootCA-G3.cer", contents: Data([1])))
        let executable = base + "/bin/receipt-verifier"
        #expect(AppleRootCertificates.locate("AppleRootCA-G3.cer", executablePath: executable)
            == base + "/bin/../share/receipt-verification/certificates/AppleRootCA-G3.cer")
        try FileManager.default.createDirectory(atPath: base + "/bin/certificates", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: base + "/bin/certificates/AppleRootCA-G3.cer", contents: Data([1])))
        #expect(AppleRootCertificates.locate("AppleRootCA-G3.cer", executablePath: executable)
            == base + "/bin/certificates/AppleRootCA-G3.cer")
        #expect(AppleRootCertificates.locate("NoSuchRoot.cer", executablePath: executable) == nil)
    }

    @Test("splits a comma-separated setting and refuses an empty list or an unreadable file")
    func settings() throws {
        #expect(AppleRootCertificates.paths(fromSetting: " /a.cer, /b.pem ,,") == ["/a.cer", "/b.pem"])
        #expect(throws: CryptoError.self) { try AppleRootCertificates.load(paths: []) }
        let error = #expect(throws: CryptoError.self) { try AppleSignedDataVerifier(rootCertificatePaths: ["/nope.cer"]) }
        #expect(error?.message.contains("/nope.cer") == true)
    }
}
