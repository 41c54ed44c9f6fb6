/// A transaction's isolation level (a typo is a compile error, not a silent fallback).
public enum IsolationLevel: String, Sendable, CaseIterable {
    case readCommitted = "READ COMMITTED"
    case repeatableRead = "REPEATABLE READ"
    case serializable = "SERIALIZABLE"
}
