/// OpenSSL's two DER calling conventions, written once. `i2d_*` is asked for the length with no output, then writes
/// through a cursor it advances; `d2i_*` reads through a cursor it advances, so what it consumed is known (callers
/// that must refuse trailing bytes compare it with the input's length).
package enum DERCoding {
    /// The DER `i2d` writes (called as `i2d(out)`, `out` nil to ask for the length), and how many bytes the second
    /// call said it wrote; nil when the length is 0 or less (OpenSSL cannot encode the object).
    package static func encode(
        _ i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32
    ) -> (der: [UInt8], written: Int32)? {
        let length = i2d(nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d(&cursor)
        }
        return (der, written)
    }

    /// What `d2i` reads from the start of `der` (called as `d2i(cursor, der.count)`), and how many bytes it consumed;
    /// nil when it reads nothing.
    package static func decode<Object>(
        _ der: [UInt8], _ d2i: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> Object?
    ) -> (object: Object, consumed: Int)? {
        var consumed = 0
        let parsed = der.withUnsafeBufferPointer { buffer -> Object? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let result = d2i(&cursor, buffer.count)
            if let cursor, let base = buffer.baseAddress { consumed = cursor - base }
            return result
        }
        return parsed.map { ($0, consumed) }
    }
}
