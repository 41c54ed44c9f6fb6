// The notifications mode of verifier-bench: how fast one receipt-verifier turns a backlog of App Store Server
// Notifications into purchase events.
//
// 1. mints an App Store-shaped PKI and writes its root for the verifier (APPLE_ROOT_CERTIFICATES);
// 2. signs --count DID_RENEW notifications (each a signed payload holding a signed transaction and a signed renewal
//    info: three JWS to verify, all distinct) on every core, and preloads them into P.notifications;
// 3. starts the verifier and follows P.events; the drain rate is measured from the first event to the last (the
//    group join before it is excluded; the chain cache is warm after the first notification);
// 4. prints events/s, the verifier's CPU µs per event and peak RSS, and checks that every notification has exactly
//    one event.

import Dispatch
import FakeAppStore
import Foundation
import Kafka
import Notifications
import ReceiptModel
import ServiceSupport
import SignedData
import Synchronization
import TestPKI
import Verifier

/// Event arrivals by event id.
final class EventLedger: Sendable {
    private struct State {
        var seen: Set<String> = []
        var duplicates = 0
        var types: [String: Int] = [:]
        var first: UInt64 = 0
        var last: UInt64 = 0
    }
    private let state = Locked(State())

    func arrived(_ message: KafkaMessage) {
        let now = SystemTime.monotonicNanoseconds()
        guard let id = message.headers.value(named: MessageHeaders.eventId).map({ String(decoding: $0, as: UTF8.self) })
        else { return }
        let type = message.headers.value(named: MessageHeaders.eventType).map { String(decoding: $0, as: UTF8.self) }
        state.withLock { state in
            guard state.seen.insert(id).inserted else {
                state.duplicates += 1
                return
            }
            state.types[type ?? "?", default: 0] += 1
            if state.first == 0 { state.first = now }
            state.last = now
        }
    }

    var count: Int { state.withLock { $0.seen.count } }

    func summary() -> (count: Int, duplicates: Int, types: [String: Int], first: UInt64, last: UInt64) {
        state.withLock { ($0.seen.count, $0.duplicates, $0.types, $0.first, $0.last) }
    }
}

enum NotificationDrain {
    static func run(_ options: BenchOptions) -> Never {
        let prefix = options.topicPrefix
        let topics = (notifications: "\(prefix).notifications", events: "\(prefix).events")
        let directory = NSTemporaryDirectory() + "verifier-bench-\(getpid())"
        let pki: TestSigningPKI
        do {
            pki = try TestSigningPKI.mint()
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data(pki.rootCertificate.pem.utf8).write(to: URL(fileURLWithPath: directory + "/root.pem"))
        } catch {
            VerifierBench.fail("cannot mint the signing PKI: \(error)")
        }
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let signStart = SystemTime.monotonicNanoseconds()
        let records = sign(count: options.count, pki: pki)
        let signSeconds = Double(SystemTime.monotonicNanoseconds() &- signStart) / 1e9
        let bytes = records.reduce(0) { $0 + $1.value.count }

        var kafka = KafkaConfiguration()
        kafka.bootstrapServers = options.bootstrap
        var followerKafka = kafka
        followerKafka["fetch.wait.max.ms"] = "5"
        let logger = Logger(label: "verifier-bench", threshold: .error)
        let ledger = EventLedger()
        let producer: KafkaProducer
        let follower: KafkaTopicFollower
        do {
            var producerKafka = kafka
            producerKafka["linger.ms"] = String(options.lingerMs)
            producer = try KafkaProducer(configuration: producerKafka, logger: logger)
            follower = try KafkaTopicFollower(
                configuration: followerKafka, topic: topics.events, startingAtTimestampMs: 0, logger: logger,
                refreshInterval: .seconds(1)
            ) { ledger.arrived($0) }
        } catch {
            VerifierBench.fail("cannot create Kafka clients: \(error.message)")
        }
        follower.start()

        let failures = FailureCount()
        let produceStart = SystemTime.monotonicNanoseconds()
        for record in records {
            while true {
                do throws(KafkaError) {
                    try producer.send(topic: topics.notifications, key: record.key, value: record.value, headers: []) {
                        if case .failure = $0 { failures.value.add(1, ordering: .relaxed) }
                    }
                    break
                } catch where error.isQueueFull {
                    usleep(1000)
                } catch {
                    VerifierBench.fail("cannot produce: \(error.message)")
                }
            }
        }
        guard producer.flush(timeout: .seconds(120)) else { VerifierBench.fail("the preload was not acknowledged") }
        let preloadSeconds = Double(SystemTime.monotonicNanoseconds() &- produceStart) / 1e9
        let retained = retainedMessages(topic: topics.notifications, kafka: kafka, logger: logger)
        guard retained == records.count else {
            // librdkafka's mock cluster keeps only the last few MB of each partition.
            VerifierBench.fail(
                "the topic kept \(retained) of the \(records.count) notifications preloaded (the mock cluster keeps "
                    + "about 5 MB per partition): give \(topics.notifications) more partitions or preload fewer")
        }

        let child = VerifierBench.startVerifier(
            options,
            extra: [
                "NOTIFICATIONS_TOPIC": topics.notifications, "EVENTS_TOPIC": topics.events,
                "APPLE_ROOT_CERTIFICATES": directory + "/root.pem",
                // Its own PKI, which the fake's OCSP responder does not know.
                "APPLE_REVOCATION_CHECK": "off",
            ])
        let pid = child.processIdentifier
        let cpuBefore = VerifierBench.cpuTicks(pid)
        let deadline = Date() + Double(options.timeoutSeconds)
        while ledger.count < records.count, Date() < deadline, child.isRunning { usleep(5_000) }
        let cpuAfter = VerifierBench.cpuTicks(pid)
        let peakKB = VerifierBench.peakRSSKilobytes(pid)
        usleep(500_000)  // late duplicates would show now
        let summary = ledger.summary()
        let exitStatus = VerifierBench.stop(child)
        follower.close(timeout: .seconds(2))
        producer.close(timeout: .seconds(2))

        let complete = summary.count == records.count
        let drainSeconds = Double(summary.last &- summary.first) / 1e9
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let cpuMicroseconds = Double(cpuAfter - cpuBefore) / ticksPerSecond * 1e6
        let rate = Double(max(summary.count - 1, 0)) / max(drainSeconds, 1e-9)
        let cpuPerEvent = cpuMicroseconds / Double(max(summary.count, 1))
        let types = summary.types.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
        print(
            "notifications=\(records.count) jws_per_notification=3 "
                + "notification_bytes_avg=\(bytes / max(records.count, 1)) "
                + "sign_seconds=\(String(format: "%.2f", signSeconds)) "
                + "preload_seconds=\(String(format: "%.2f", preloadSeconds)) events=\(summary.count) "
                + "complete=\(complete) drain_seconds=\(String(format: "%.2f", drainSeconds)) "
                + "events_per_second=\(String(format: "%.0f", rate)) "
                + "verifier_cpu_us_per_event=\(String(format: "%.0f", cpuPerEvent)) "
                + "verifier_peak_rss_mb=\(String(format: "%.1f", Double(peakKB) / 1024)) types=\(types) "
                + "duplicates=\(summary.duplicates) produce_failures=\(failures.value.load(ordering: .relaxed)) "
                + "verifier_exit=\(exitStatus)")
        exit(complete ? 0 : 1)
    }

    /// `--mode processor`: the verifier's notification path alone, in this process, on one thread: verifying and
    /// mapping `--count` distinct notifications (three JWS each) and encoding their events, round after round for
    /// a few seconds. No Kafka: what one notification costs in CPU.
    static func runProcessor(_ options: BenchOptions) -> Never {
        let pki: TestSigningPKI
        do {
            pki = try TestSigningPKI.mint()
        } catch {
            VerifierBench.fail("cannot mint the signing PKI: \(error)")
        }
        let records = sign(count: min(options.count, 5_000), pki: pki)
        let processor = NotificationProcessor(
            verifier: pki.verifier(), policy: NotificationPolicy(allowedBundleIds: ["com.example.game"]))
        let factory = OutputFactory(topics: TopicNames())
        var processed = 0
        var failures = 0
        var encodedBytes = 0
        let cpuStart = threadCPUNanoseconds()
        let start = SystemTime.monotonicNanoseconds()
        let end = start + 5_000_000_000
        while SystemTime.monotonicNanoseconds() < end {
            for record in records {
                switch processor.process(record.value) {
                case .success(let notification): encodedBytes += factory.event(notification).value.count
                case .failure: failures += 1
                }
            }
            processed += records.count
        }
        let seconds = Double(SystemTime.monotonicNanoseconds() - start) / 1e9
        let cpuSeconds = Double(threadCPUNanoseconds() - cpuStart) / 1e9
        print(
            "notifications=\(processed) distinct=\(records.count) failures=\(failures) "
                + "per_second_one_thread=\(String(format: "%.0f", Double(processed) / seconds)) "
                + "us_per_notification=\(String(format: "%.1f", seconds * 1e6 / Double(max(processed, 1)))) "
                + "cpu_us_per_notification=\(String(format: "%.1f", cpuSeconds * 1e6 / Double(max(processed, 1)))) "
                + "event_bytes_avg=\(encodedBytes / max(processed, 1))")
        exit(failures == 0 ? 0 : 1)
    }

    /// CPU time of the calling thread (the wall time of a loaded machine says little).
    static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Messages `topic` holds (high minus low watermarks over its partitions).
    static func retainedMessages(topic: String, kafka: KafkaConfiguration, logger: Logger) -> Int {
        do {
            let follower = try KafkaTopicFollower(
                configuration: kafka, topic: topic, startingAtTimestampMs: SystemTime.wallMilliseconds() + 86_400_000,
                logger: logger, refreshInterval: .seconds(1)
            ) { _ in }
            follower.start()
            defer { follower.close(timeout: .seconds(2)) }
            let deadline = Date() + 10
            while follower.partitions.isEmpty, Date() < deadline { usleep(20_000) }
            return try follower.watermarks().values.reduce(0) { $0 + Int($1.high - $1.low) }
        } catch {
            VerifierBench.fail("cannot read the watermarks of \(topic): \(error.message)")
        }
    }

    /// `count` distinct signed DID_RENEW notification records, signed on every core.
    static func sign(count: Int, pki: TestSigningPKI) -> [(key: [UInt8], value: [UInt8])] {
        let slots = Locked([(key: [UInt8], value: [UInt8])?](repeating: nil, count: count))
        let failed = Atomic<Bool>(false)
        let receivedAtMs = SystemTime.wallMilliseconds()
        let chunks = ProcessInfo.processInfo.activeProcessorCount * 4
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            var local: [(Int, (key: [UInt8], value: [UInt8]))] = []
            for index in stride(from: chunk, to: count, by: chunks) {
                var options = FakeNotification.Options()
                options.signedDateMs = pki.signedDateMs
                options.transactionId = String(3_000_000_000_000_000 + index)
                options.originalTransactionId = "otx-\(index % 4_096)"
                let notification = FakeNotification.make(type: "DID_RENEW", options: options)
                do {
                    let signed = try notification.signedPayload(signer: pki.signer)
                    let value = try MessageCoding.encode(
                        NotificationRecord(signedPayload: signed, receivedAtMs: receivedAtMs))
                    local.append((index, (Array("otx-\(index % 4_096)".utf8), value)))
                } catch {
                    failed.store(true, ordering: .relaxed)
                }
            }
            slots.withLock { slots in for (index, record) in local { slots[index] = record } }
        }
        if failed.load(ordering: .relaxed) { VerifierBench.fail("signing a notification failed") }
        return slots.withLock { $0.compactMap { $0 } }
    }
}
