/// A string field of signed App Store data whose values Apple names and may add to (`notificationType`,
/// `subtype`, `type`, `environment`, `inAppOwnershipType`, `revocationType`, `transactionReason`): a struct of one
/// `rawValue` with Apple's spellings as constants, so that a value Apple adds later is kept as it is rather than
/// failing the payload. The seven such fields share this one definition: each decodes from a JSON string (the
/// standard library's decoding of a `RawRepresentable` whose raw value is a `String`), compares and hashes by its
/// raw value, and prints as it.
public protocol OpenStringEnum: RawRepresentable, Sendable, Hashable, Decodable, CustomStringConvertible
where RawValue == String {
    init(rawValue: String)
}

extension OpenStringEnum {
    public var description: String { rawValue }
}
