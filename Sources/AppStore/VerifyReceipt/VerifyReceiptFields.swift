import ServiceSupport

/// The lenient reads a verifyReceipt object's fields take (`LenientDecoding`'s rules), over either tree: Foundation's
/// decoding container (`ContainerFields`, the reference reading) or an object of the lean parser (`LeanFields`). The
/// rules that map fields to a transaction are written once, over this protocol (`TransactionEntry.read`).
protocol VerifyReceiptFields {
    /// `Never` for Foundation's container; `LeanReadingDeferred` for a lean value whose reading could differ.
    associatedtype Failure: Error
    /// A string, or a number written as its decimal text.
    func string(_ name: String) throws(Failure) -> String?
    /// An integer, its decimal text, or a whole floating-point number.
    func int64(_ name: String) throws(Failure) -> Int64?
    /// `true`/`false`, `1`/`0`, or those as text (any case, `yes`/`no` too).
    func bool(_ name: String) throws(Failure) -> Bool?
    /// The member is there with a value other than JSON null.
    func isPresent(_ name: String) -> Bool
}

/// Fields of a Foundation decoding container: `LenientDecoding`'s reads.
struct ContainerFields: VerifyReceiptFields {
    let container: KeyedDecodingContainer<AnyCodingKey>

    func string(_ name: String) -> String? { container.lenientString(AnyCodingKey(name)) }
    func int64(_ name: String) -> Int64? { container.lenientInt64(AnyCodingKey(name)) }
    func bool(_ name: String) -> Bool? { container.lenientBool(AnyCodingKey(name)) }
    func isPresent(_ name: String) -> Bool { container.isPresent(AnyCodingKey(name)) }
}

/// The lean reading cannot promise Foundation's answer for a value (a number that is not an integer a `Double` holds
/// exactly, whose text the lean parser did not keep): the whole body is then decoded with Foundation.
struct LeanReadingDeferred: Error {}

/// Fields of an object from `JSONParser`, read as `ContainerFields` reads the same JSON. Strings read the same in both
/// trees; integers below 2^53 in magnitude too (every Foundation read of them, as Int64, UInt64 or Double, gives the
/// same value). Any other number defers to Foundation. Apple writes numbers as text or small integers, so a real
/// answer never defers.
struct LeanFields: VerifyReceiptFields {
    let members: [String: JSONValue]

    /// Integers below this magnitude read the same as Int64, UInt64 and Double.
    private static let exactMagnitude: UInt64 = 1 << 53

    private func exactInteger(_ value: Int64) throws(LeanReadingDeferred) -> Int64 {
        guard value.magnitude < Self.exactMagnitude else { throw LeanReadingDeferred() }
        return value
    }

    func string(_ name: String) throws(LeanReadingDeferred) -> String? {
        switch members[name] {
        case nil, .null: return nil
        case .string(let text): return text
        case .integer(let value): return String(try exactInteger(value))
        case .number: throw LeanReadingDeferred()
        case .bool, .array, .object: return nil
        }
    }

    func int64(_ name: String) throws(LeanReadingDeferred) -> Int64? {
        switch members[name] {
        case nil, .null: return nil
        case .string(let text): return LenientText.int64(text)
        case .integer(let value): return try exactInteger(value)
        case .number: throw LeanReadingDeferred()
        case .bool, .array, .object: return nil
        }
    }

    func bool(_ name: String) throws(LeanReadingDeferred) -> Bool? {
        switch members[name] {
        case nil, .null: return nil
        case .string(let text): return LenientText.bool(text)
        case .bool(let flag): return flag
        case .integer(let value):
            switch try exactInteger(value) {
            case 0: return false
            case 1: return true
            default: return nil
            }
        case .number: throw LeanReadingDeferred()
        case .array, .object: return nil
        }
    }

    func isPresent(_ name: String) -> Bool {
        switch members[name] {
        case nil, .null: false
        default: true
        }
    }
}
