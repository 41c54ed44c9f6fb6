import Crypto
import Glibc

/// Where the shipped Apple root certificates are, and loading root files named by settings.
///
/// The repository's `certificates/` folder holds Apple Root CA - G3 (App Store JWS) and Apple Inc. Root (legacy
/// receipts). A service looks for it, in order: next to its executable (`<bin>/certificates/`), in
/// `<bin>/../share/receipt-verification/certificates/` (an installed layout, what the Docker image copies), and in
/// the source checkout this module was built from (development and tests).
public enum AppleRootCertificates {
    /// Apple Root CA - G3, the trust anchor of App Store JWS.
    public static let signedDataRootFileName = "AppleRootCA-G3.cer"
    /// Apple Inc. Root, the trust anchor of legacy app receipts' PKCS#7 signatures.
    public static let receiptRootFileName = "AppleIncRootCertificate.cer"

    /// The shipped Apple Root CA - G3, if found.
    public static var defaultSignedDataRootsPath: String? {
        locate(signedDataRootFileName)
    }

    /// The shipped Apple Inc. Root, if found.
    public static var defaultReceiptRootsPath: String? {
        locate(receiptRootFileName)
    }

    /// Folders searched for the shipped certificates, in order.
    public static func searchDirectories(executablePath: String? = currentExecutablePath()) -> [String] {
        var directories: [String] = []
        if let executablePath, let slash = executablePath.lastIndex(of: "/") {
            let binary = String(executablePath[..<slash])
            directories.append(binary + "/certificates")
            directories.append(binary + "/../share/receipt-verification/certificates")
        }
        directories.append(sourceCheckoutDirectory + "/certificates")
        return directories
    }

    /// The first existing `<directory>/<fileName>` of `searchDirectories`.
    public static func locate(_ fileName: String, executablePath: String? = currentExecutablePath()) -> String? {
        for directory in searchDirectories(executablePath: executablePath) {
            let path = directory + "/" + fileName
            if access(path, R_OK) == 0 { return path }
        }
        return nil
    }

    /// Paths of a comma-separated setting (`APPLE_ROOT_CERTIFICATES=/etc/apple/g3.cer,/etc/apple/extra.pem`).
    public static func paths(fromSetting value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: " \t") }.filter { !$0.isEmpty }
    }

    /// Every certificate in the files at `paths` (DER or one or more PEM each).
    ///
    /// - Throws: `CryptoError` naming the file, or `.invalidArgument` when `paths` is empty.
    public static func load(paths: [String]) throws(CryptoError) -> [Certificate] {
        guard !paths.isEmpty else {
            throw CryptoError(.invalidArgument, "no root certificate files given; set the root certificates setting "
                              + "or ship certificates/ next to the executable")
        }
        var certificates: [Certificate] = []
        for path in paths { certificates += try Certificate.load(path: path) }
        return certificates
    }

    /// The running executable (`/proc/self/exe`), or nil where that is unavailable.
    public static func currentExecutablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The repository root this file was compiled from (`Sources/SignedData/` is two levels below it).
    private static let sourceCheckoutDirectory: String = {
        var components = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(3)
        return components.joined(separator: "/")
    }()
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        var slice = Substring(self)
        while let first = slice.first, characters.contains(first) { slice.removeFirst() }
        while let last = slice.last, characters.contains(last) { slice.removeLast() }
        return String(slice)
    }
}
