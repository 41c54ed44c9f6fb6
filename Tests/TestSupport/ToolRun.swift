import Foundation

/// One run of a command-line tool to its end, its stdout and stderr written to files (not pipes), so that once it has
/// exited everything it wrote is there to read: no race with pipe readers. Killed when it outlives `timeout`.
public struct ToolRun: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String

    public var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
    public var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }

    /// Runs `executable` (a path; see `TestBinaries.path`) with the test runner's environment plus `environment`.
    /// - Throws: when it cannot be started, or has not exited after `timeout` (it is killed then).
    public static func run(
        _ executable: String, arguments: [String], environment: [String: String] = [:],
        timeout: Duration = .seconds(60)
    ) async throws -> ToolRun {
        let directory = NSTemporaryDirectory() + "receipts-tests"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let name = URL(fileURLWithPath: executable).lastPathComponent + "-" + UUID().uuidString.prefix(8)
        let outPath = "\(directory)/\(name).out"
        let errPath = "\(directory)/\(name).err"
        defer {
            try? FileManager.default.removeItem(atPath: outPath)
            try? FileManager.default.removeItem(atPath: errPath)
        }
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        defer {
            try? out.close()
            try? err.close()
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw TestSupportError(
                    "\(name) did not exit within \(timeout); stderr:\n"
                        + ((try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""))
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        process.waitUntilExit()
        return ToolRun(
            status: process.terminationStatus,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    /// The last stdout line that is a JSON object, parsed; nil when there is none.
    public var lastJSONObject: [String: Any]? {
        stdoutLines.last { $0.hasPrefix("{") }
            .flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }
}
