import CThreadName
import Foundation

extension Thread {
    /// Starts a thread running `body`, named `name` for the operating system too: in `top -H`, in
    /// `/proc/PID/task/*/comm`, and in the benchmarks' CPU by thread. Foundation's `Thread.name` does not reach the
    /// operating system on Linux, where the threads all showed the process's name. Linux keeps the first 15 bytes.
    @discardableResult
    public static func startNamed(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        let osName = Array(name.utf8.prefix(15)) + [0]
        let thread = Thread {
            _ = osName.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { cthread_name_current($0.baseAddress) }
            }
            body()
        }
        thread.name = name
        thread.start()
        return thread
    }
}
