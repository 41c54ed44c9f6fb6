// verifier-bench: runs one receipt-verifier (a child process) against a Kafka cluster and a fake App Store, feeds
// it submissions and measures what comes out. Run by bench/verifier.sh, which starts embedded-kafka and the fake.
//
// 1. starts the verifier with fresh topics and group, waits until a warm-up batch has its results;
// 2. produces --count submissions (at --rate per second, 0 = as fast as Kafka accepts them) while a follower reads
//    the results topic;
// 3. prints results/s (from the first send to the last result), p50/p99/max submission-to-result latency, the
//    verifier's CPU µs per result (/proc/<pid>/stat), its peak RSS (/proc/<pid>/status VmHWM) and the outcomes;
// 4. stops the verifier with SIGTERM and reports its exit status.
// With --mode notifications it measures how fast the verifier drains a backlog of App Store Server Notifications
// instead (NotificationDrain.swift).

import Foundation
import Kafka
import ServiceSupport
import Synchronization

struct BenchOptions {
    var bootstrap = ""
    var fakeURL = ""
    var verifierBinary = ""
    var topicPrefix = "bench"
    var count = 100_000
    var warmup = 2_000
    var rate = 0
    var inFlight = 512
    var timeoutSeconds = 300
    var verifierLog = "/dev/null"
    var lingerMs = 5
    /// `submissions` (receipts through the fake App Store) or `notifications` (a preloaded notification backlog).
    var mode = "submissions"
    /// A file of signed transactions (one compact JWS per line): submissions carry them round robin as
    /// `signed_transaction` instead of a receipt.
    var signedTransactionsFile: String?

    static let usage = """
        Usage: verifier-bench --bootstrap HOST:PORT --fake-url URL --verifier PATH [--topic-prefix P]
                              [--count N] [--warmup N] [--rate PER_SECOND] [--in-flight N] [--timeout SECONDS]
                              [--verifier-log FILE] [--linger-ms N] [--signed-transactions FILE]
                              [--mode submissions|notifications|processor]

        Topics P.submitted, P.results, P.retry, P.dlq, P.notifications, P.events (created beforehand, or
        auto-created) and group P.group.
        --linger-ms: the submission producer's linger.ms (default 5; the ingest uses 2).
        --signed-transactions: submissions carry these StoreKit 2 signed transactions (one JWS per line, round robin)
        instead of a receipt; the verifier's APPLE_* settings (root, API key) come from this process's environment.
        --mode notifications: preload --count signed DID_RENEW notifications (three JWS each) into P.notifications,
        then start the verifier and measure how fast the events come out (--fake-url is not needed).
        --mode processor: no Kafka, no verifier process: the notification path (verify, map, encode the event) in
        this process on one thread, µs per notification (only --count is used, at most 5000 distinct).
        Prints one line of key=value results.
        """

    static func parse(_ arguments: [String]) -> BenchOptions? {
        var options = BenchOptions()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            guard let value = rest.popFirst() else { return nil }
            switch argument {
            case "--bootstrap": options.bootstrap = value
            case "--fake-url": options.fakeURL = value
            case "--verifier": options.verifierBinary = value
            case "--topic-prefix": options.topicPrefix = value
            case "--count": options.count = Int(value) ?? -1
            case "--warmup": options.warmup = Int(value) ?? -1
            case "--rate": options.rate = Int(value) ?? -1
            case "--in-flight": options.inFlight = Int(value) ?? -1
            case "--timeout": options.timeoutSeconds = Int(value) ?? -1
            case "--verifier-log": options.verifierLog = value
            case "--linger-ms": options.lingerMs = Int(value) ?? -1
            case "--mode": options.mode = value
            case "--signed-transactions": options.signedTransactionsFile = value
            default: return nil
            }
        }
        if options.mode == "processor" { return options.count > 0 ? options : nil }
        guard ["submissions", "notifications"].contains(options.mode),
            !options.bootstrap.isEmpty, !options.fakeURL.isEmpty || options.mode == "notifications",
            !options.verifierBinary.isEmpty,
            options.count > 0, options.warmup > 0, options.rate >= 0, options.inFlight > 0, options.timeoutSeconds > 0,
            options.lingerMs >= 0
        else { return nil }
        return options
    }
}

/// Send times and result arrivals by submission index (ids are `<prefix>-<index>`).
final class Ledger: Sendable {
    private struct State {
        var sentAt: [UInt64]
        var latencyMs: [Double?]
        var received = 0
        var duplicates = 0
        var outcomes: [String: Int] = [:]
        var lastResultAt: UInt64 = 0
    }
    private let state: Locked<State>
    let idPrefix: String

    init(total: Int, idPrefix: String) {
        self.idPrefix = idPrefix
        state = Locked(State(sentAt: Array(repeating: 0, count: total), latencyMs: Array(repeating: nil, count: total)))
    }

    func sent(_ index: Int, at time: UInt64) { state.withLock { $0.sentAt[index] = time } }

    func resultArrived(_ message: KafkaMessage) {
        let now = SystemTime.monotonicNanoseconds()
        guard let id = message.headers.value(named: "submission-id").map({ String(decoding: $0, as: UTF8.self) }),
            id.hasPrefix(idPrefix), let index = Int(id.dropFirst(idPrefix.count))
        else { return }
        let outcome = message.headers.value(named: "outcome").map { String(decoding: $0, as: UTF8.self) } ?? "?"
        state.withLock { state in
            guard index >= 0, index < state.latencyMs.count, state.sentAt[index] != 0 else { return }
            if state.latencyMs[index] != nil {
                state.duplicates += 1
                return
            }
            state.latencyMs[index] = Double(now &- state.sentAt[index]) / 1e6
            state.received += 1
            state.outcomes[outcome, default: 0] += 1
            state.lastResultAt = now
        }
    }

    var received: Int { state.withLock { $0.received } }

    /// Latencies (sorted) of the submissions in `range`, duplicates, outcomes of all results, the last arrival.
    func summary(_ range: Range<Int>) -> (
        latencies: [Double], duplicates: Int, outcomes: [String: Int], lastResultAt: UInt64
    ) {
        state.withLock {
            ($0.latencyMs[range].compactMap { $0 }.sorted(), $0.duplicates, $0.outcomes, $0.lastResultAt)
        }
    }
}

/// Deliveries that failed (should stay 0).
final class FailureCount: Sendable {
    let value = Atomic<Int>(0)
}

enum VerifierBench {
    /// A receipt the fake App Store answers 0 with one transaction of an allowed bundle.
    static let receipt = Data(#"{"scenario":"valid","transactions":[{"id":"2000000123","product":"gems_100"}]}"#.utf8)
        .base64EncodedString()

    /// A submission carrying the receipt, or the `index`th of `signedTransactions` (round robin) when there are any.
    static func submission(id: String, index: Int, signedTransactions: [String]) -> [UInt8] {
        let proof =
            signedTransactions.isEmpty
            ? #""receipt_data":"\#(receipt)""#
            : #""signed_transaction":"\#(signedTransactions[index % signedTransactions.count])""#
        let fields = [
            #""schema_version":1"#, #""submission_id":"\#(id)""#, proof,
            #""order_id":"order-\#(id)""#, #""user_id":"user-\#(index & 1023)""#,
            #""submitted_at_ms":\#(SystemTime.wallMilliseconds())"#,
        ]
        return Array(("{" + fields.joined(separator: ",") + "}").utf8)
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("verifier-bench: \(message)\n".utf8))
        exit(1)
    }

    /// utime + stime of `pid`, in clock ticks.
    static func cpuTicks(_ pid: Int32) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime field 14, stime field 15 (1-based over the whole line).
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
        return user + system
    }

    /// utime + stime of each of `pid`'s threads, in clock ticks, by thread id, with the thread's name.
    static func threadCPUTicks(_ pid: Int32) -> [String: (name: String, ticks: Int)] {
        var threads: [String: (name: String, ticks: Int)] = [:]
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { continue }  // ended while listing
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { continue }
            threads[task] = (String(stat[stat.index(after: open)..<close]), user + system)
        }
        return threads
    }

    /// CPU µs per item by thread name between two `threadCPUTicks` snapshots (digits dropped from names, so that
    /// `rdk:broker1` and `rdk:broker2` count together; a thread that ended in between is not counted), largest
    /// first: `name:µs,name:µs`.
    static func threadCPUPerItem(
        before: [String: (name: String, ticks: Int)], after: [String: (name: String, ticks: Int)], items: Int
    ) -> String {
        var groups: [String: Int] = [:]
        for (task, thread) in after {
            let group = String(thread.name.filter { !$0.isNumber }.map { $0 == " " ? "_" : $0 })
            groups[group, default: 0] += thread.ticks - (before[task]?.ticks ?? 0)
        }
        let microsecondsPerTick = 1e6 / Double(sysconf(Int32(_SC_CLK_TCK)))
        return groups.filter { $0.value > 0 }.sorted { $0.value > $1.value }.map {
            "\($0.key):" + String(format: "%.0f", Double($0.value) * microsecondsPerTick / Double(max(items, 1)))
        }.joined(separator: ",")
    }

    static func peakRSSKilobytes(_ pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }

    static func produce(
        _ producer: KafkaProducer, topic: String, ledger: Ledger, range: Range<Int>, rate: Int, failures: FailureCount,
        signedTransactions: [String]
    ) {
        let start = SystemTime.monotonicNanoseconds()
        for index in range {
            if rate > 0 {
                let due = start &+ UInt64(Double(index - range.lowerBound) / Double(rate) * 1e9)
                let now = SystemTime.monotonicNanoseconds()
                if due > now { usleep(UInt32((due - now) / 1000)) }
            }
            let id = "\(ledger.idPrefix)\(index)"
            let value = submission(id: id, index: index, signedTransactions: signedTransactions)
            while true {
                ledger.sent(index, at: SystemTime.monotonicNanoseconds())
                do throws(KafkaError) {
                    try producer.send(
                        topic: topic, key: Array("user-\(index & 1023)".utf8), value: value,
                        headers: [KafkaHeader(name: "submission-id", string: id)]
                    ) { result in
                        if case .failure = result { failures.value.add(1, ordering: .relaxed) }
                    }
                    break
                } catch  where error.isQueueFull {
                    usleep(1000)
                } catch {
                    fail("cannot produce: \(error.message)")
                }
            }
        }
    }

    static func waitFor(_ ledger: Ledger, count: Int, deadline: Date, child: Process) -> Bool {
        while ledger.received < count {
            if Date() > deadline || !child.isRunning { return false }
            usleep(5_000)
        }
        return true
    }

    /// Starts the verifier on the bench's topics (`extra` added to its environment), logging to --verifier-log.
    static func startVerifier(_ options: BenchOptions, extra: [String: String]) -> Process {
        let prefix = options.topicPrefix
        let child = Process()
        child.executableURL = URL(fileURLWithPath: options.verifierBinary)
        var environment = ProcessInfo.processInfo.environment
        let fakeURL = options.fakeURL.isEmpty ? "http://127.0.0.1:9" : options.fakeURL
        environment.merge([
            "KAFKA_BOOTSTRAP_SERVERS": options.bootstrap, "RECEIPTS_TOPIC": "\(prefix).submitted",
            "RESULTS_TOPIC": "\(prefix).results", "RETRY_TOPIC": "\(prefix).retry", "DLQ_TOPIC": "\(prefix).dlq",
            "NOTIFICATIONS_TOPIC": "\(prefix).notifications", "EVENTS_TOPIC": "\(prefix).events",
            "VERIFIER_GROUP_ID": "\(prefix).group", "VERIFIER_MAX_IN_FLIGHT": String(options.inFlight),
            "VERIFIER_METRICS_LISTEN": "127.0.0.1:0", "APPLE_VERIFY_RECEIPT_URL": "\(fakeURL)/verifyReceipt",
            "APPLE_SANDBOX_VERIFY_RECEIPT_URL": "\(fakeURL)/sandbox/verifyReceipt",
            "APPLE_SERVER_API_URL": fakeURL, "APPLE_SERVER_API_SANDBOX_URL": "\(fakeURL)/sandbox",
            "APPLE_OCSP_RESPONDER_URL": "\(fakeURL)/ocsp", "ALLOWED_BUNDLE_IDS": "com.example.game",
            "LOG_LEVEL": environment["LOG_LEVEL"] ?? "warning",
            "KAFKA_SESSION_TIMEOUT_MS": "6000",
        ]) { _, new in new }
        environment.merge(extra) { _, new in new }
        child.environment = environment
        _ = FileManager.default.createFile(atPath: options.verifierLog, contents: nil)
        child.standardError = FileHandle(forWritingAtPath: options.verifierLog)
        child.standardOutput = FileHandle.nullDevice
        do {
            try child.run()
        } catch {
            fail("cannot start \(options.verifierBinary): \(error)")
        }
        return child
    }

    /// SIGTERM (the verifier drains and exits 0), SIGKILL after 30 s; the exit status as text.
    static func stop(_ child: Process) -> String {
        child.terminate()
        let stopDeadline = Date() + 30
        while child.isRunning, Date() < stopDeadline { usleep(10_000) }
        let exitStatus = child.isRunning ? "still-running" : String(child.terminationStatus)
        if child.isRunning { kill(child.processIdentifier, SIGKILL) }
        return exitStatus
    }

    static func run() {
        guard let options = BenchOptions.parse(Array(CommandLine.arguments.dropFirst())) else {
            print(BenchOptions.usage)
            exit(2)
        }
        if options.mode == "notifications" { NotificationDrain.run(options) }
        if options.mode == "processor" { NotificationDrain.runProcessor(options) }
        var signedTransactions: [String] = []
        if let path = options.signedTransactionsFile {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { fail("cannot read \(path)") }
            signedTransactions = text.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
            if signedTransactions.isEmpty { fail("\(path) holds no signed transaction") }
        }
        let prefix = options.topicPrefix
        let topics = (submitted: "\(prefix).submitted", results: "\(prefix).results")
        var kafka = KafkaConfiguration()
        kafka.bootstrapServers = options.bootstrap
        // Results are picked up as soon as they are written (the latency measured is the verifier's, not a fetch wait).
        var followerKafka = kafka
        followerKafka["fetch.wait.max.ms"] = "5"
        let logger = Logger(label: "verifier-bench", threshold: .error)
        let total = options.warmup + options.count
        let ledger = Ledger(total: total, idPrefix: "\(prefix)-")

        let producer: KafkaProducer
        let follower: KafkaTopicFollower
        do {
            var producerKafka = kafka
            producerKafka["linger.ms"] = String(options.lingerMs)
            producer = try KafkaProducer(configuration: producerKafka, logger: logger)
            follower = try KafkaTopicFollower(
                configuration: followerKafka, topic: topics.results, startingAtTimestampMs: 0, logger: logger,
                refreshInterval: .seconds(1)
            ) { ledger.resultArrived($0) }
        } catch {
            fail("cannot create Kafka clients: \(error.message)")
        }
        follower.start()

        let child = startVerifier(options, extra: [:])
        let pid = child.processIdentifier
        let failures = FailureCount()

        // Warm-up: group join, connections, first allocations.
        produce(
            producer, topic: topics.submitted, ledger: ledger, range: 0..<options.warmup, rate: 0, failures: failures,
            signedTransactions: signedTransactions)
        guard waitFor(ledger, count: options.warmup, deadline: Date() + 60, child: child) else {
            child.terminate()
            fail("the warm-up did not complete (\(ledger.received)/\(options.warmup) results); see the verifier log")
        }

        let cpuBefore = cpuTicks(pid)
        let threadsBefore = threadCPUTicks(pid)
        let start = SystemTime.monotonicNanoseconds()
        produce(
            producer, topic: topics.submitted, ledger: ledger, range: options.warmup..<total, rate: options.rate,
            failures: failures, signedTransactions: signedTransactions)
        let produced = SystemTime.monotonicNanoseconds()
        let complete = waitFor(
            ledger, count: total, deadline: Date() + Double(options.timeoutSeconds), child: child)
        let cpuAfter = cpuTicks(pid)
        let threadsAfter = threadCPUTicks(pid)
        let peakKB = peakRSSKilobytes(pid)
        let summary = ledger.summary(options.warmup..<total)

        let exitStatus = stop(child)
        follower.close(timeout: .seconds(2))
        producer.close(timeout: .seconds(2))

        let measured = summary.latencies.count
        let seconds = Double(summary.lastResultAt &- start) / 1e9
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let cpuMicroseconds = Double(cpuAfter - cpuBefore) / ticksPerSecond * 1e6
        let all = summary.latencies
        func percentile(_ p: Double) -> String {
            guard !all.isEmpty else { return "n/a" }
            return String(format: "%.1f", all[min(all.count - 1, Int(Double(all.count) * p))])
        }
        let outcomes = summary.outcomes.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(
            separator: ",")
        print(
            "submissions=\(options.count) rate=\(options.rate == 0 ? "unpaced" : String(options.rate)) "
                + "results=\(measured) complete=\(complete) seconds=\(String(format: "%.2f", seconds)) "
                + "results_per_second=\(String(format: "%.0f", Double(max(measured, 0)) / max(seconds, 1e-9))) "
                + "produce_seconds=\(String(format: "%.2f", Double(produced &- start) / 1e9)) "
                + "latency_ms_p50=\(percentile(0.50)) latency_ms_p99=\(percentile(0.99)) "
                + "latency_ms_max=\(percentile(1.0)) "
                + "verifier_cpu_us_per_result=\(String(format: "%.0f", cpuMicroseconds / Double(max(measured, 1)))) "
                + "verifier_cpu_us_per_result_by_thread="
                + threadCPUPerItem(before: threadsBefore, after: threadsAfter, items: measured) + " "
                + "verifier_peak_rss_mb=\(String(format: "%.1f", Double(peakKB) / 1024)) "
                + "outcomes_incl_warmup=\(outcomes) duplicates=\(summary.duplicates) "
                + "produce_failures=\(failures.value.load(ordering: .relaxed)) "
                + "verifier_exit=\(exitStatus)")
        exit(complete ? 0 : 1)
    }
}

VerifierBench.run()
