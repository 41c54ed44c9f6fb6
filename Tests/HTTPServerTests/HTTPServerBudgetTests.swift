import Testing

@testable import HTTPServer

@Suite("HTTPServer budgets: open files, log lines, sweep interval")
struct HTTPServerBudgetTests {
    @Test("a soft open-file limit that fits the connections is left alone")
    func enoughDescriptors() {
        let plan = FileDescriptorBudget.plan(connectionLimit: 10_000, soft: 65_536, hard: 65_536)
        #expect(plan == FileDescriptorBudget.Plan(raiseSoftLimitTo: nil, connectionLimit: 10_000))
    }

    @Test("a low soft limit is raised to what the connections need when the hard limit allows")
    func raisedToNeed() {
        let plan = FileDescriptorBudget.plan(connectionLimit: 10_000, soft: 1024, hard: 1_048_576)
        #expect(plan.raiseSoftLimitTo == 10_000 + UInt64(FileDescriptorBudget.reserve))
        #expect(plan.connectionLimit == 10_000)
        let unlimited = FileDescriptorBudget.plan(connectionLimit: 10_000, soft: 1024, hard: UInt64.max)
        #expect(unlimited.raiseSoftLimitTo == 10_000 + UInt64(FileDescriptorBudget.reserve))
    }

    @Test("under a low hard limit the soft limit goes to it and fewer connections are accepted, keeping the reserve")
    func cappedByHardLimit() {
        let plan = FileDescriptorBudget.plan(connectionLimit: 10_000, soft: 1024, hard: 4096)
        #expect(plan.raiseSoftLimitTo == 4096)
        #expect(plan.connectionLimit == 4096 - FileDescriptorBudget.reserve)
        let stuck = FileDescriptorBudget.plan(connectionLimit: 10_000, soft: 1024, hard: 1024)
        #expect(stuck.raiseSoftLimitTo == nil)
        #expect(stuck.connectionLimit == 1024 - FileDescriptorBudget.reserve)
        #expect(FileDescriptorBudget.plan(connectionLimit: 100, soft: 64, hard: 64).connectionLimit == 1)
    }

    @Test("the log budget lets a second's lines through, drops the rest and reports how many it dropped")
    func logBudget() {
        let budget = LogBudget(linesPerSecond: 3)
        let start: UInt64 = 5_000_000_000
        #expect((0..<3).map { budget.admit(now: start + UInt64($0)) } == [0, 0, 0])
        #expect(budget.admit(now: start + 10) == nil)
        #expect(budget.admit(now: start + 20) == nil)
        #expect(budget.admit(now: start + 1_000_000_000) == 2)
        #expect(budget.admit(now: start + 1_000_000_001) == 0)
    }

    @Test("connections are swept at a tenth of the shortest deadline, between 50 ms and 1 s")
    func sweepInterval() {
        #expect(ConnectionSweeper.tick(for: [.seconds(10), .seconds(30)]) == .seconds(1))
        #expect(ConnectionSweeper.tick(for: [.seconds(2), .seconds(30)]) == .milliseconds(200))
        #expect(ConnectionSweeper.tick(for: [.milliseconds(100)]) == .milliseconds(50))
        #expect(ConnectionSweeper.tick(for: [.seconds(100)]) == .seconds(1))
    }
}
