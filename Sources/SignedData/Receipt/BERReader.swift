/// A defensive BER/DER reader for legacy receipts, which arrive from clients and so are hostile input.
///
/// Every length is checked against the bytes that remain before anything is read or allocated; length fields over
/// 4 octets and tag numbers over 28 bits are refused; indefinite lengths are followed to their end-of-contents
/// octets (an indefinite length without one is an error); nesting deeper than `maximumDepth` is an error. Nothing
/// here traps or allocates more than the input size: every failure is a `SignedDataError.Kind.malformedReceipt`.
struct BERReader {
    static let maximumDepth = 32

    let bytes: [UInt8]

    /// The element starting at `start`, which must end at or before `limit`.
    func element(at start: Int, limit: Int, depth: Int) throws(SignedDataError) -> BERElement {
        guard depth <= Self.maximumDepth else {
            throw malformed("nesting deeper than \(Self.maximumDepth) levels at offset \(start)")
        }
        var index = start
        guard index < limit else { throw malformed("an element is missing at offset \(start) (truncated)") }
        let identifier = bytes[index]
        index += 1
        let tagClass = identifier >> 6
        let isConstructed = identifier & 0x20 != 0
        var tagNumber = UInt32(identifier & 0x1f)
        if tagNumber == 0x1f {
            tagNumber = 0
            while true {
                guard index < limit else { throw malformed("a tag number is truncated at offset \(index)") }
                let byte = bytes[index]
                index += 1
                guard tagNumber < 1 << 21 else { throw malformed("a tag number over 28 bits at offset \(start)") }
                tagNumber = tagNumber << 7 | UInt32(byte & 0x7f)
                if byte & 0x80 == 0 { break }
            }
        }
        guard index < limit else { throw malformed("a length is missing at offset \(index) (truncated)") }
        let lengthByte = bytes[index]
        index += 1
        if lengthByte == 0x80 {
            guard isConstructed else { throw malformed("a primitive element with an indefinite length at offset \(start)") }
            var cursor = index
            while true {
                guard cursor + 2 <= limit else {
                    throw malformed("an indefinite length starting at offset \(start) has no end-of-contents")
                }
                if bytes[cursor] == 0 && bytes[cursor + 1] == 0 {
                    return BERElement(tagClass: tagClass, isConstructed: true, tagNumber: tagNumber,
                                      content: index..<cursor, end: cursor + 2, depth: depth)
                }
                cursor = try element(at: cursor, limit: limit, depth: depth + 1).end
            }
        }
        var length = 0
        if lengthByte < 0x80 {
            length = Int(lengthByte)
        } else {
            let count = Int(lengthByte & 0x7f)
            guard count <= 4 else { throw malformed("a \(count)-octet length field at offset \(start) (too large)") }
            guard index + count <= limit else { throw malformed("a length field is truncated at offset \(index)") }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
        }
        guard length <= limit - index else {
            throw malformed("an element at offset \(start) claims \(length) bytes but only \(limit - index) remain")
        }
        return BERElement(tagClass: tagClass, isConstructed: isConstructed, tagNumber: tagNumber,
                          content: index..<(index + length), end: index + length, depth: depth)
    }

    /// The elements inside a constructed element.
    func children(of parent: BERElement) throws(SignedDataError) -> [BERElement] {
        guard parent.isConstructed else { throw malformed("expected a constructed element at depth \(parent.depth)") }
        var result: [BERElement] = []
        var cursor = parent.content.lowerBound
        while cursor < parent.content.upperBound {
            let child = try element(at: cursor, limit: parent.content.upperBound, depth: parent.depth + 1)
            result.append(child)
            cursor = child.end
        }
        return result
    }

    /// The value of an OCTET STRING, primitive or constructed (segments concatenated, as BER allows).
    func octetString(_ element: BERElement) throws(SignedDataError) -> [UInt8] {
        guard element.isUniversal(BERElement.octetString) else {
            throw malformed("expected an OCTET STRING at depth \(element.depth)")
        }
        guard element.isConstructed else { return Array(bytes[element.content]) }
        var value: [UInt8] = []
        for segment in try children(of: element) { value += try octetString(segment) }
        return value
    }

    /// An INTEGER that fits 64 bits.
    func integer(_ element: BERElement) throws(SignedDataError) -> Int64 {
        guard element.isUniversal(BERElement.integer), !element.isConstructed, !element.content.isEmpty,
            element.content.count <= 8
        else { throw malformed("expected an INTEGER of 1 to 8 octets at depth \(element.depth)") }
        var value = Int64(Int8(bitPattern: bytes[element.content.lowerBound]))
        for index in element.content.dropFirst() { value = value << 8 | Int64(bytes[index]) }
        return value
    }

    /// The content of a primitive element as bytes.
    func contentBytes(_ element: BERElement) -> [UInt8] {
        Array(bytes[element.content])
    }

    func malformed(_ detail: String) -> SignedDataError {
        SignedDataError(.malformedReceipt, "the receipt is not valid BER: \(detail)")
    }
}
