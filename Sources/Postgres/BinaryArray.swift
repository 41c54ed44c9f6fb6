/// Array parameters in PostgreSQL's binary format (`array_send`'s layout), for the array types a statement's
/// parameters were prepared as (`$1::text[]`, `$2::bigint[]`, ...): the server reads the elements as they are,
/// where the text format would have it parse every element of every array (`array_in` was a tenth of the ledger's
/// database work per batch). Pure Swift: the types come from the server's description of the prepared statement.
enum BinaryArray {
    /// The array types sent in binary, by their type OID, with their element type OID.
    enum ArrayType: UInt32 {
        case text = 1009
        case int8 = 1016
        case int4 = 1007
        case bool = 1000

        var elementType: UInt32 {
            switch self {
            case .text: 25
            case .int8: 20
            case .int4: 23
            case .bool: 16
            }
        }
    }

    /// `elements` as an array of `type` in binary format; nil when `type` is not one sent in binary, or an element
    /// is not a value of its element type (the text format then lets the server report it as it always did).
    static func encode<Elements: Collection<String?>>(_ elements: Elements, as type: UInt32) -> [UInt8]? {
        guard let arrayType = ArrayType(rawValue: type) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20 + elements.count * (arrayType == .text ? 32 : 12))
        let hasNulls = elements.contains { $0 == nil }
        append(Int32(elements.isEmpty ? 0 : 1), to: &bytes)  // dimensions (an empty array has none)
        append(Int32(hasNulls ? 1 : 0), to: &bytes)
        append(arrayType.elementType, to: &bytes)
        if !elements.isEmpty {
            append(Int32(elements.count), to: &bytes)
            append(Int32(1), to: &bytes)  // lower bound
        }
        for element in elements {
            guard let element else {
                append(Int32(-1), to: &bytes)
                continue
            }
            switch arrayType {
            case .text:
                let utf8 = element.utf8
                append(Int32(utf8.count), to: &bytes)
                bytes.append(contentsOf: utf8)
            case .int8:
                guard let value = Int64(element) else { return nil }
                append(Int32(8), to: &bytes)
                append(UInt64(bitPattern: value), to: &bytes)
            case .int4:
                guard let value = Int32(element) else { return nil }
                append(Int32(4), to: &bytes)
                append(UInt32(bitPattern: value), to: &bytes)
            case .bool:
                let value: UInt8
                switch element {
                case "t", "true": value = 1
                case "f", "false": value = 0
                default: return nil
                }
                append(Int32(1), to: &bytes)
                bytes.append(value)
            }
        }
        return bytes
    }

    private static func append(_ value: Int32, to bytes: inout [UInt8]) {
        append(UInt32(bitPattern: value), to: &bytes)
    }

    private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    private static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}
