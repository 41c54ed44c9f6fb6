/// When waiting requests time out: a binary min-heap of (due time, submission id, waiter token), earliest first.
///
/// `ResultIndex` keeps one timer for the earliest entry instead of one per waiter. A waiter completed by its
/// verdict leaves its entry here (a few words, no closure) until that entry comes due and is found stale.
struct WaiterDeadlines {
    struct Deadline {
        let dueMs: Int64
        let id: String
        let token: UInt64
    }

    private var heap: [Deadline] = []

    var count: Int { heap.count }
    var earliestMs: Int64? { heap.first?.dueMs }

    mutating func insert(_ deadline: Deadline) {
        heap.append(deadline)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].dueMs < heap[parent].dueMs else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns every entry due at or before `nowMs`, earliest first.
    mutating func popDue(nowMs: Int64) -> [Deadline] {
        var due: [Deadline] = []
        while let first = heap.first, first.dueMs <= nowMs {
            due.append(first)
            let last = heap.removeLast()
            guard !heap.isEmpty else { break }
            heap[0] = last
            siftDown()
        }
        return due
    }

    mutating func removeAll() {
        heap.removeAll()
    }

    private mutating func siftDown() {
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].dueMs < heap[smallest].dueMs { smallest = left }
            if right < heap.count, heap[right].dueMs < heap[smallest].dueMs { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
