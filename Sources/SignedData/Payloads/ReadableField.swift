/// A payload field whose absence and unreadability must not be confused, because money rules depend on it
/// (`revocationDate`, `revocationPercentage`): a refund rule that met `.unreadable` must fail closed, not treat the
/// transaction as unrevoked.
public enum ReadableField<Value: Sendable & Equatable>: Sendable, Equatable {
    /// Not in the payload, or JSON null.
    case absent
    /// Present and readable.
    case value(Value)
    /// Present with a value of the wrong type or out of range.
    case unreadable

    /// The value when present and readable.
    public var value: Value? {
        if case .value(let value) = self { return value }
        return nil
    }

    /// True when the field is in the payload (readable or not).
    public var isPresent: Bool {
        if case .absent = self { return false }
        return true
    }
}
