/// A first-in-first-out queue with O(1) amortized append and removal at the front (an array with a moving head,
/// compacted when the removed prefix dominates).
struct FIFOQueue<Element> {
    private var storage: [Element] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }
    var first: Element? { isEmpty ? nil : storage[head] }

    mutating func append(_ element: Element) {
        storage.append(element)
    }

    @discardableResult
    mutating func removeFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Keeps only the elements for which `isIncluded` holds, in order (O(n)).
    mutating func filter(_ isIncluded: (Element) -> Bool) {
        storage = storage[head...].filter(isIncluded)
        head = 0
    }
}

extension FIFOQueue: Sendable where Element: Sendable {}
