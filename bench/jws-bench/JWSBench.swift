import Foundation
import Synchronization
import ServiceSupport

/// The measuring loop, outside `main.swift` so that its closures are not main-actor isolated (they run on
/// worker threads).
enum JWSBench {
    struct Result: Equatable {
        var count: Int
        var failures: Int
        var seconds: Double
        var threads: Int
    }

    /// Runs `body` on `threads` threads until `seconds` have passed.
    static func run(seconds: Double, threads: Int, _ body: @escaping @Sendable () throws -> Void) -> Result {
        let counts = Locked<(Int, Int)>((0, 0))
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + UInt64(seconds * 1e9)
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            var done = 0
            var failed = 0
            while true {
                for _ in 0..<64 {
                    do { try body() } catch { failed += 1 }
                    done += 1
                }
                if DispatchTime.now().uptimeNanoseconds >= deadline { break }
            }
            counts.withLock {
                $0.0 += done
                $0.1 += failed
            }
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let (count, failures) = counts.withLock { $0 }
        return Result(count: count, failures: failures, seconds: elapsed, threads: threads)
    }

    static func report(_ name: String, _ result: Result) {
        let perSecond = Double(result.count) / result.seconds
        let microseconds = result.seconds * Double(result.threads) * 1e6 / Double(result.count)
        let failures = result.failures == 0 ? "" : "  FAILURES: \(result.failures)"
        let label = name.count < 46 ? name + String(repeating: " ", count: 46 - name.count) : name
        print(label + String(format: " %10.0f /s  %8.1f µs each  (%d in %.1f s)", perSecond, microseconds,
                             result.count, result.seconds) + failures)
    }
}
