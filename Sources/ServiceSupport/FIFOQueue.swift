/// A first-in-first-out queue with O(1) amortized append and removal at the front: a ring buffer that doubles when
/// full.
///
/// A removed element leaves the queue at once (its slot is emptied, its ownership goes to the caller), and nothing is
/// ever moved or destroyed in bulk: the queues behind locks on hot paths (the HTTP server's and the ingest's deadline
/// queues, one entry per request and 11 to 42 s of them) never stall the threads waiting for their lock. (Before, an
/// array with a moving head kept removed elements until it compacted: then it released a whole turnover's worth,
/// ~165,000 answered requests at the ingest, under the lock every request took.)
///
/// Inlinable so the hot paths that use it (the verifier's waiting messages, the HTTP client's queued transfers) get
/// it specialized for their element type.
public struct FIFOQueue<Element> {
    /// Room for `capacity` elements; the live ones are `count` slots from `head` on, wrapping at the end.
    @usableFromInline var slots: ContiguousArray<Element?> = []
    /// The slot of the oldest element (0 when empty).
    @usableFromInline var head = 0
    @usableFromInline var storedCount = 0

    @inlinable
    public init() {}

    /// Elements queued and not yet removed.
    @inlinable
    public var count: Int { storedCount }

    @inlinable
    public var isEmpty: Bool { storedCount == 0 }

    /// The oldest element, nil when empty.
    @inlinable
    public var first: Element? { isEmpty ? nil : slots[head] }

    @inlinable
    public mutating func append(_ element: Element) {
        if storedCount == slots.count { grow() }
        slots[slot(storedCount)] = element
        storedCount += 1
    }

    /// Removes and returns the oldest element, nil when empty.
    @inlinable
    @discardableResult
    public mutating func removeFirst() -> Element? {
        guard storedCount > 0 else { return nil }
        let element = slots[head]
        slots[head] = nil
        storedCount -= 1
        head = storedCount == 0 ? 0 : slot(1)
        return element
    }

    /// Removes and returns the `maximum` oldest elements (fewer when fewer are queued), oldest first.
    @inlinable
    public mutating func removeFirst(upTo maximum: Int) -> [Element] {
        let taken = min(max(0, maximum), count)
        var removed: [Element] = []
        removed.reserveCapacity(taken)
        for _ in 0..<taken {
            if let element = removeFirst() { removed.append(element) }
        }
        return removed
    }

    /// Removes and returns the oldest elements while `predicate` holds for them, oldest first.
    @inlinable
    public mutating func removeFirst(while predicate: (Element) throws -> Bool) rethrows -> [Element] {
        var removed: [Element] = []
        while storedCount > 0, let element = slots[head], try predicate(element) {
            removed.append(element)
            removeFirst()
        }
        return removed
    }

    /// Removes the elements for which `predicate` holds and returns them; both the removed and the kept ones keep
    /// their order (O(n)).
    @inlinable
    public mutating func removeAll(where predicate: (Element) throws -> Bool) rethrows -> [Element] {
        var kept: [Element] = []
        var removed: [Element] = []
        for offset in 0..<storedCount {
            guard let element = slots[slot(offset)] else { continue }
            if try predicate(element) { removed.append(element) } else { kept.append(element) }
        }
        for offset in 0..<storedCount { slots[slot(offset)] = nil }
        head = 0
        storedCount = 0
        for element in kept { append(element) }
        return removed
    }

    /// Removes every element and returns them, oldest first.
    @inlinable
    public mutating func removeAll() -> [Element] {
        var all: [Element] = []
        all.reserveCapacity(storedCount)
        for offset in 0..<storedCount {
            if let element = slots[slot(offset)] { all.append(element) }
        }
        slots = []
        head = 0
        storedCount = 0
        return all
    }

    /// The slot `offset` places after the oldest element.
    @inlinable
    func slot(_ offset: Int) -> Int {
        let index = head + offset
        return index < slots.count ? index : index - slots.count
    }

    /// Twice the room (at least 16); called when full. The array's own growth moves the slots (no copies, no
    /// releases); a ring that had wrapped has its newest elements, the first `head` slots, moved to just past the
    /// old end, so the live elements run from `head` on without a wrap.
    @inlinable
    mutating func grow() {
        let oldCapacity = slots.count
        slots.append(contentsOf: repeatElement(nil, count: Swift.max(16, oldCapacity * 2) - oldCapacity))
        for index in 0..<head { slots.swapAt(index, oldCapacity + index) }
    }
}

extension FIFOQueue: Sendable where Element: Sendable {}
