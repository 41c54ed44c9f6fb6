import Glibc

/// libFuzzer's entry point for programs that bring their own `main` (SwiftPM renames an executable's `main`, so the
/// fuzzer's own `main` cannot be used): runs the fuzzing loop with `testOneInput` and the process's arguments.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// Runs a fuzz target. Each target defines `LLVMFuzzerTestOneInput` (libFuzzer's runtime references it) and calls
/// `FuzzDriver.run(thatFunction)` from its `main`.
public enum FuzzDriver {
    public static func run(_ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
    }

    /// The fuzzer's input as bytes.
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// Stops the run with a finding: libFuzzer reports the input that broke a property as a crash.
    public static func violated(_ property: String) -> Never {
        let line = Array("fuzz property violated: \(property)\n".utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        abort()
    }
}
