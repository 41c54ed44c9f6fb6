/// A Kafka record header. A nil `value` is a header without a value (distinct from an empty one).
public struct KafkaHeader: Sendable, Equatable {
    public var name: String
    public var value: [UInt8]?

    public init(name: String, value: [UInt8]?) {
        self.name = name
        self.value = value
    }

    /// A header whose value is `value`'s UTF-8 bytes.
    public init(name: String, string value: String) {
        self.init(name: name, value: Array(value.utf8))
    }

    /// The value decoded as UTF-8, when there is a value.
    public var stringValue: String? {
        value.map { String(decoding: $0, as: UTF8.self) }
    }
}

extension Array where Element == KafkaHeader {
    /// The value of the first header called `name`.
    public func value(named name: String) -> [UInt8]? {
        first(where: { $0.name == name })?.value
    }
}
