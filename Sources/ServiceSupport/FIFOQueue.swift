/// A first-in-first-out queue with O(1) amortized append and removal at the front: an array with a moving head,
/// compacted when the removed prefix dominates (so its storage stays within about twice the live elements).
///
/// Inlinable so the hot paths that use it (the verifier's waiting messages, the HTTP client's queued transfers) get
/// it specialized for their element type.
public struct FIFOQueue<Element> {
    @usableFromInline var storage: [Element] = []
    @usableFromInline var head = 0

    /// The removed prefix is compacted away once it is at least this long and at least half the storage.
    @usableFromInline static var compactionThreshold: Int { 1024 }

    @inlinable
    public init() {}

    /// Elements queued and not yet removed.
    @inlinable
    public var count: Int { storage.count - head }

    @inlinable
    public var isEmpty: Bool { head == storage.count }

    /// The oldest element, nil when empty.
    @inlinable
    public var first: Element? { isEmpty ? nil : storage[head] }

    @inlinable
    public mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Removes and returns the oldest element, nil when empty.
    @inlinable
    @discardableResult
    public mutating func removeFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = storage[head]
        head += 1
        compactIfWorthIt()
        return element
    }

    /// Removes and returns the `maximum` oldest elements (fewer when fewer are queued), oldest first.
    @inlinable
    public mutating func removeFirst(upTo maximum: Int) -> [Element] {
        let taken = min(max(0, maximum), count)
        guard taken > 0 else { return [] }
        let slice = Array(storage[head..<(head + taken)])
        head += taken
        compactIfWorthIt()
        return slice
    }

    /// Removes and returns the oldest elements while `predicate` holds for them, oldest first.
    @inlinable
    public mutating func removeFirst(while predicate: (Element) throws -> Bool) rethrows -> [Element] {
        var removed: [Element] = []
        while head < storage.count, try predicate(storage[head]) {
            removed.append(storage[head])
            head += 1
        }
        compactIfWorthIt()
        return removed
    }

    /// Removes the elements for which `predicate` holds and returns them; both the removed and the kept ones keep
    /// their order (O(n)).
    @inlinable
    public mutating func removeAll(where predicate: (Element) throws -> Bool) rethrows -> [Element] {
        var kept: [Element] = []
        var removed: [Element] = []
        for element in storage[head...] {
            if try predicate(element) { removed.append(element) } else { kept.append(element) }
        }
        storage = kept
        head = 0
        return removed
    }

    /// Removes every element and returns them, oldest first.
    @inlinable
    public mutating func removeAll() -> [Element] {
        let all = Array(storage[head...])
        storage = []
        head = 0
        return all
    }

    @inlinable
    mutating func compactIfWorthIt() {
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= Self.compactionThreshold, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }
}

extension FIFOQueue: Sendable where Element: Sendable {}
