import Foundation

/// Where the package's built executables are, for tests that start them as separate processes.
///
/// `RECEIPTS_BIN_DIR` wins (the Makefile sets it from `swift build --show-bin-path`); otherwise the directory of the
/// running test bundle, which SwiftPM places next to the executables it built.
public enum TestBinaries {
    public static var directory: String {
        if let fromEnvironment = ProcessInfo.processInfo.environment["RECEIPTS_BIN_DIR"], !fromEnvironment.isEmpty {
            return fromEnvironment
        }
        let runningExecutable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: runningExecutable).deletingLastPathComponent()
        // The test runner may sit inside `<bin>/<Package>PackageTests.xctest/...`.
        while url.path != "/", url.pathExtension == "xctest" || url.lastPathComponent.hasSuffix(".xctest") {
            url.deleteLastPathComponent()
        }
        return url.path
    }

    /// The absolute path of executable `name`; fails the calling test with a readable message when it is not built.
    public static func path(_ name: String) throws -> String {
        let candidate = directory + "/" + name
        guard FileManager.default.isExecutableFile(atPath: candidate) else {
            throw TestSupportError("executable '\(name)' not found in \(directory): run `swift build` first")
        }
        return candidate
    }
}

/// A failure in test scaffolding (a process that did not start, a line that never came).
public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
