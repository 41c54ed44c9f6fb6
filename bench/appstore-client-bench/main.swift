import AppStore
import Dispatch
import FakeAppStore
import Foundation
import HTTPClient
import ServiceSupport
import Synchronization

// Drives N receipt verifications (HTTP through libcurl multi, decoding, verdict rules) through `ReceiptVerifier`
// against a running fake App Store, keeping `--in-flight` verifications outstanding, and prints the achieved rate,
// the ideal rate (in flight / latency) and the client's CPU time per verification (getrusage). Run by
// bench/appstore-client.sh, which starts the fake with 100 ms latency.

struct Options {
    var url = ""
    var count = 40_000
    var warmup = 2_048
    var inFlight = 512
    var latencyMs = 100
    var receiptBytes = 4_096
    var coalesceMicroseconds = 1_000

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var index = 0
        func value() -> String {
            guard index + 1 < arguments.count else { fail("\(arguments[index]) needs a value") }
            index += 1
            return arguments[index]
        }
        func number() -> Int {
            let text = value()
            guard let parsed = Int(text), parsed > 0 else { fail("'\(text)' is not a positive whole number") }
            return parsed
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--url": options.url = value()
            case "--count": options.count = number()
            case "--warmup": options.warmup = number()
            case "--in-flight": options.inFlight = number()
            case "--latency-ms": options.latencyMs = number()
            case "--receipt-bytes": options.receiptBytes = number()
            case "--coalesce-us": options.coalesceMicroseconds = Int(value()) ?? 1_000
            case "--help", "-h":
                print(
                    "usage: appstore-client-bench --url http://127.0.0.1:PORT [--count N] [--warmup N] "
                        + "[--in-flight N] [--latency-ms N (the fake's, for the ideal rate)] [--receipt-bytes N] "
                        + "[--coalesce-us N (completion batching window)]")
                exit(0)
            default: fail("unknown argument \(arguments[index])")
            }
            index += 1
        }
        if options.url.isEmpty { fail("--url is required (the fake App Store's base URL)") }
        return options
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("appstore-client-bench: \(message)\n".utf8))
    exit(2)
}

func cpuMicroseconds() -> Int64 {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    let user = Int64(usage.ru_utime.tv_sec) * 1_000_000 + Int64(usage.ru_utime.tv_usec)
    let system = Int64(usage.ru_stime.tv_sec) * 1_000_000 + Int64(usage.ru_stime.tv_usec)
    return user + system
}

/// Keeps `inFlight` verifications outstanding until `total` have completed.
final class Driver: Sendable {
    private struct State {
        var started = 0
        var completed = 0
        var verified = 0
        var other: [String: Int] = [:]
    }
    private let state = Locked(State())
    private let verifier: ReceiptVerifier
    private let receipt: String
    private let total: Int
    private let done = DispatchSemaphore(value: 0)

    init(verifier: ReceiptVerifier, receipt: String, total: Int) {
        self.verifier = verifier
        self.receipt = receipt
        self.total = total
    }

    func run(inFlight: Int) -> (verified: Int, other: [String: Int]) {
        for _ in 0..<min(inFlight, total) { startOne() }
        done.wait()
        return state.withLock { ($0.verified, $0.other) }
    }

    private func startOne() {
        let go = state.withLock { state -> Bool in
            guard state.started < total else { return false }
            state.started += 1
            return true
        }
        guard go else { return }
        verifier.verify(
            receiptData: receipt, expectations: VerificationExpectations(transactionId: "1000000000000001"),
            deadline: .now() + .seconds(120)
        ) { [self] outcome in
            let finished = state.withLock { state -> Bool in
                state.completed += 1
                if case .verdict(let verdict) = outcome, verdict.outcome == .verified {
                    state.verified += 1
                } else {
                    state.other[String(describing: outcome).prefix(120).description, default: 0] += 1
                }
                return state.completed == total
            }
            if finished { done.signal() } else { startOne() }
        }
    }
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
let logger = Logger(label: "appstore-client-bench", threshold: .warning)
let settings: AppStoreSettings
do {
    settings = try AppStoreSettings.fromEnvironment(
        Settings(environment: [
            "APPLE_VERIFY_RECEIPT_URL": options.url + "/verifyReceipt",
            "APPLE_SANDBOX_VERIFY_RECEIPT_URL": options.url + "/sandbox/verifyReceipt",
            "ALLOWED_BUNDLE_IDS": "com.example.game", "VERIFIER_MAX_IN_FLIGHT": String(options.inFlight),
            "APPLE_TIMEOUT_MS": "30000",
        ]))
} catch {
    fail("\(error)")
}
let verifier: ReceiptVerifier
do {
    var clientConfiguration = settings.httpClientConfiguration
    clientConfiguration.completionCoalescingMicroseconds = options.coalesceMicroseconds
    let client = try CurlHTTPClient(configuration: clientConfiguration)
    verifier = ReceiptVerifier(
        backend: VerifyReceiptBackend(
            client: client, endpoints: settings.endpoints, sharedSecret: settings.sharedSecret),
        policy: settings.verdictPolicy, retryPolicy: settings.retryPolicy, requestTimeoutMs: settings.timeoutMs,
        logger: logger)
} catch {
    fail("\(error)")
}

// A fake receipt padded to the size of a real one (a few KB of base64), so request bodies are realistic.
var scenario = FakeReceiptScenario(
    scenario: .valid, id: "bench", env: "Production", bundleId: "com.example.game",
    transactions: [FakeTransaction(id: "1000000000000001", product: "gems_100")])
var receipt = FakeReceipt.encode(scenario)
if receipt.utf8.count < options.receiptBytes {
    scenario.body = String(repeating: "x", count: (options.receiptBytes - receipt.utf8.count) * 3 / 4)
    receipt = FakeReceipt.encode(scenario)
}

// Warm-up: opens the keep-alive connections and pages in the code paths.
_ = Driver(verifier: verifier, receipt: receipt, total: options.warmup).run(inFlight: options.inFlight)

let cpuBefore = cpuMicroseconds()
let started = SystemTime.monotonicNanoseconds()
let (verified, other) = Driver(verifier: verifier, receipt: receipt, total: options.count).run(
    inFlight: options.inFlight)
let seconds = SystemTime.secondsSince(started)
let cpu = cpuMicroseconds() - cpuBefore

let rate = Double(options.count) / seconds
let ideal = Double(options.inFlight) * 1000 / Double(options.latencyMs)
let cpuPerVerification = Double(cpu) / Double(options.count)
print("verifications:            \(options.count) (\(verified) verified, \(options.count - verified) other)")
for (description, count) in other.sorted(by: { $0.value > $1.value }).prefix(5) {
    print("  other x\(count): \(description)")
}
print("in flight:                \(options.inFlight)")
print("completion batching:      \(options.coalesceMicroseconds) µs window")
print("receipt bytes:            \(receipt.utf8.count)")
print("elapsed:                  \(String(format: "%.2f", seconds)) s")
print("achieved rate:            \(String(format: "%.0f", rate)) verifications/s")
print(
    "ideal rate:               \(String(format: "%.0f", ideal)) verifications/s (in flight / \(options.latencyMs) ms)")
print("efficiency:               \(String(format: "%.1f", rate / ideal * 100)) % of ideal")
print(
    "client CPU:               \(String(format: "%.1f", cpuPerVerification)) µs per verification "
        + "(\(String(format: "%.2f", Double(cpu) / 1e6)) s user+sys)")
print(
    "RESULT {\"verifications\":\(options.count),\"verified\":\(verified),\"in_flight\":\(options.inFlight),"
        + "\"rate_per_s\":\(Int(rate)),\"ideal_per_s\":\(Int(ideal)),\"cpu_us_per_verification\":"
        + "\(String(format: "%.1f", cpuPerVerification))}")
exit(verified == options.count ? 0 : 1)
