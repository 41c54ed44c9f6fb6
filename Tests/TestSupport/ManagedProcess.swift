import Foundation
import Synchronization
import ServiceSupport

/// A child process started by a test: its stdout and stderr are captured line by line (stderr also goes to a log
/// file under `$TMPDIR/receipts-tests/` for post-mortems), and it is killed when the value is released, so a failing
/// test leaves no orphans behind.
public final class ManagedProcess: Sendable {
    public let name: String
    public let logPath: String
    private let process: Process
    private let captured = Locked(Captured())
    private let logHandle: FileHandle?

    private struct Captured {
        var stdoutLines: [String] = []
        var stderrLines: [String] = []
        var stdoutPartial: [UInt8] = []
        var stderrPartial: [UInt8] = []
        /// Whether each stream's end of file was read: once both were, every byte the process wrote is captured.
        var stdoutEnded = false
        var stderrEnded = false
    }

    /// Starts `executable` (a path; see `TestBinaries.path`) with the test runner's environment plus `environment`.
    public init(
        executable: String, arguments: [String] = [], environment: [String: String] = [:], name: String? = nil
    ) throws {
        let name = name ?? URL(fileURLWithPath: executable).lastPathComponent
        self.name = name
        let logDirectory = NSTemporaryDirectory() + "receipts-tests"
        try? FileManager.default.createDirectory(atPath: logDirectory, withIntermediateDirectories: true)
        logPath = "\(logDirectory)/\(name)-\(UUID().uuidString.prefix(8)).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        logHandle = FileHandle(forWritingAtPath: logPath)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        self.process = process

        stdout.fileHandleForReading.readabilityHandler = { [weak self] handle in
            self?.read(handle, toStandardError: false)
        }
        stderr.fileHandleForReading.readabilityHandler = { [weak self] handle in
            self?.read(handle, toStandardError: true)
        }
        try process.run()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? logHandle?.close()
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var stdoutLines: [String] { captured.withLock { $0.stdoutLines } }
    public var stderrLines: [String] { captured.withLock { $0.stderrLines } }

    /// Captures what `handle` has; at its end of file (empty data) stops reading it and counts the stream ended.
    private func read(_ handle: FileHandle, toStandardError: Bool) {
        let data = handle.availableData
        guard !data.isEmpty else {
            handle.readabilityHandler = nil
            captured.withLock { captured in
                if toStandardError { captured.stderrEnded = true } else { captured.stdoutEnded = true }
            }
            return
        }
        append(data, toStandardError: toStandardError)
    }

    private func append(_ data: Data, toStandardError: Bool) {
        if toStandardError { logHandle?.write(data) }
        captured.withLock { captured in
            var partial = toStandardError ? captured.stderrPartial : captured.stdoutPartial
            partial.append(contentsOf: data)
            var lines: [String] = []
            while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: partial[..<newline], as: UTF8.self))
                partial.removeSubrange(...newline)
            }
            if toStandardError {
                captured.stderrPartial = partial
                captured.stderrLines.append(contentsOf: lines)
            } else {
                captured.stdoutPartial = partial
                captured.stdoutLines.append(contentsOf: lines)
            }
        }
    }

    /// Waits until a stdout line satisfies `predicate` and returns it.
    public func waitForStdoutLine(
        timeout: Duration = .seconds(20), where predicate: @Sendable (String) -> Bool
    ) async throws -> String {
        try await waitForLine(timeout: timeout, stream: "stdout", lines: { $0.stdoutLines }, predicate)
    }

    /// Waits until a stderr line (a JSON log line, usually) satisfies `predicate` and returns it.
    public func waitForStderrLine(
        timeout: Duration = .seconds(20), where predicate: @Sendable (String) -> Bool
    ) async throws -> String {
        try await waitForLine(timeout: timeout, stream: "stderr", lines: { $0.stderrLines }, predicate)
    }

    private func waitForLine(
        timeout: Duration, stream: String, lines: @Sendable (Captured) -> [String],
        _ predicate: @Sendable (String) -> Bool
    ) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = captured.withLock({ lines($0) }).first(where: predicate) { return line }
            if !process.isRunning {
                // One last look: the line may have been written just before exit.
                try await Task.sleep(for: .milliseconds(100))
                if let line = captured.withLock({ lines($0) }).first(where: predicate) { return line }
                throw TestSupportError(
                    "\(name) exited with status \(process.terminationStatus) before printing the expected \(stream) "
                        + "line; stderr tail:\n\(stderrTail())")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSupportError("\(name) printed no matching \(stream) line within \(timeout); stderr tail:\n\(stderrTail())")
    }

    /// The last lines of stderr, for failure messages.
    public func stderrTail(_ count: Int = 20) -> String {
        stderrLines.suffix(count).joined(separator: "\n")
    }

    /// Sends `signalNumber` (SIGTERM, SIGKILL, SIGSTOP, ...).
    public func send(signal signalNumber: Int32) {
        if process.isRunning { kill(process.processIdentifier, signalNumber) }
    }

    /// Waits for the process to exit; its exit status, or nil when it is still running at the deadline.
    public func waitForExit(timeout: Duration = .seconds(20)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        // `isRunning` turns false before Foundation has reaped the status on some paths; waitUntilExit settles it.
        process.waitUntilExit()
        // The exit can be seen before the readers have taken the last output: wait for both ends of file.
        while !captured.withLock({ $0.stdoutEnded && $0.stderrEnded }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return process.terminationStatus
    }

    /// SIGTERM, then SIGKILL if the process is still running after `grace`. Returns the exit status after SIGTERM,
    /// or nil when it had to be killed.
    @discardableResult
    public func terminate(grace: Duration = .seconds(15)) async -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        send(signal: SIGTERM)
        if let status = await waitForExit(timeout: grace) { return status }
        send(signal: SIGKILL)
        _ = await waitForExit(timeout: .seconds(5))
        return nil
    }
}
