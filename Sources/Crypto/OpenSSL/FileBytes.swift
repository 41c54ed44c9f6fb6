import Glibc

/// Whole-file reads for certificates and keys (small files; a limit keeps a wrong path from reading a huge file).
enum FileBytes {
    static let limit = 1 << 20

    static func read(path: String) throws(CryptoError) -> [UInt8] {
        guard let file = fopen(path, "rb") else {
            throw CryptoError(.unreadableFile, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count > 0 { bytes.append(contentsOf: chunk.prefix(count)) }
            if bytes.count > limit {
                throw CryptoError(.unreadableFile, "\(path) is larger than \(limit) bytes; not a certificate or key file")
            }
            if count < chunk.count {
                if ferror(file) != 0 { throw CryptoError(.unreadableFile, "cannot read \(path)") }
                return bytes
            }
        }
    }
}
