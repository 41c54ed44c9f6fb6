import ServiceSupport
import Testing

@Suite struct CommandLineArgumentsTests {
    @Test func flagsAndTheirValuesAreReadInOrder() throws {
        var arguments = CommandLineArguments(
            ["--to", "retry", "--count", "7", "--dry-run", "--since", "2026-01-31T12:00:00Z"])
        #expect(try arguments.nextFlag() == "--to")
        #expect(try arguments.value(for: "--to") == "retry")
        #expect(try arguments.nextFlag() == "--count")
        #expect(try arguments.int(for: "--count", in: 1...10) == 7)
        #expect(try arguments.nextFlag() == "--dry-run")
        #expect(try arguments.nextFlag() == "--since")
        #expect(try arguments.epochMilliseconds(for: "--since") == 1_769_860_800_000)
        #expect(try arguments.nextFlag() == nil && arguments.isEmpty)
    }

    @Test func helpInFlagPositionIsAskedForButAsAValueItIsJustAValue() throws {
        var asFlag = CommandLineArguments(["--dry-run", "-h"])
        #expect(try asFlag.nextFlag() == "--dry-run")
        #expect(throws: CommandLineError.helpRequested) { try asFlag.nextFlag() }
        var asValue = CommandLineArguments(["--name", "--help"])
        #expect(try asValue.nextFlag() == "--name")
        #expect(try asValue.value(for: "--name") == "--help")
    }

    @Test func missingAndInvalidValuesNameTheFlag() {
        var empty = CommandLineArguments([])
        #expect(throws: CommandLineError.usage("--to needs a value")) { try empty.value(for: "--to") }
        var outOfRange = CommandLineArguments(["17"])
        #expect(throws: CommandLineError.usage("--brokers takes a whole number from 1 to 16")) {
            try outOfRange.int(for: "--brokers", in: 1...16)
        }
        var notATime = CommandLineArguments(["yesterday"])
        #expect(throws: CommandLineError.usage(
            "--since takes epoch milliseconds or an ISO 8601 time like 2026-01-31T12:00:00Z, not 'yesterday'")) {
            try notATime.epochMilliseconds(for: "--since")
        }
        #expect(CommandLineError.unknownArgument("--wat") == .usage("unknown argument '--wat'"))
    }
}

@Suite struct CommandLineToolTests {
    final class Streams: Sendable {
        let output = Locked("")
        let error = Locked("")

        func tool() -> CommandLineTool {
            CommandLineTool(
                name: "demo tool", usage: "Usage: demo [--loud]",
                standardOutput: { text in self.output.withLock { $0 += text } },
                standardError: { text in self.error.withLock { $0 += text } })
        }
    }

    static func parseLoud(_ arguments: inout CommandLineArguments) throws(CommandLineError) -> Bool {
        var loud = false
        while let flag = try arguments.nextFlag() {
            guard flag == "--loud" else { throw .unknownArgument(flag) }
            loud = true
        }
        return loud
    }

    @Test func goodUsageRunsWithTheOptionsAndWritesNothing() {
        let streams = Streams()
        guard case .run(let loud) = streams.tool().parse(["--loud"], with: Self.parseLoud) else {
            Issue.record("did not run")
            return
        }
        #expect(loud)
        #expect(streams.output.withLock { $0 }.isEmpty && streams.error.withLock { $0 }.isEmpty)
    }

    @Test func helpPrintsTheUsageOnStandardOutputAndExitsZero() {
        let streams = Streams()
        guard case .exit(let status) = streams.tool().parse(["--loud", "--help"], with: Self.parseLoud) else {
            Issue.record("ran")
            return
        }
        #expect(status == 0)
        #expect(streams.output.withLock { $0 } == "Usage: demo [--loud]\n")
        #expect(streams.error.withLock { $0 }.isEmpty)
    }

    @Test func badUsageNamesTheProblemThenTheUsageOnStandardErrorAndExitsTwo() {
        let streams = Streams()
        guard case .exit(let status) = streams.tool().parse(["--quiet"], with: Self.parseLoud) else {
            Issue.record("ran")
            return
        }
        #expect(status == 2)
        #expect(streams.error.withLock { $0 } == "demo tool: unknown argument '--quiet'\n\nUsage: demo [--loud]\n")
        #expect(streams.output.withLock { $0 }.isEmpty)
    }
}
