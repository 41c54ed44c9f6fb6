import Foundation
import Testing

/// The librdkafka C API stays inside the `RDKafka` target. SwiftPM makes a dependency's C module importable by
/// everything above it, so the `Kafka` target's independence from `CRdKafka` (dropped from its dependencies in
/// Package.swift) is checked here, on its sources.
@Suite("Kafka layering")
struct KafkaLayeringTests {
    static let kafkaSources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/Kafka")

    @Test("the consumer, follower and producer contain no C: no CRdKafka import, no rd_kafka_ call")
    func kafkaTargetHasNoC() throws {
        let files = try #require(FileManager.default.enumerator(atPath: Self.kafkaSources.path))
            .compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        #expect(files.count > 5)
        for file in files {
            let text = try String(contentsOf: Self.kafkaSources.appendingPathComponent(file), encoding: .utf8)
            let code = text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
            #expect(!code.contains { $0.contains("import CRdKafka") }, "\(file) imports CRdKafka")
            #expect(!code.contains { $0.contains("rd_kafka_") || $0.contains("RD_KAFKA_") }, "\(file) calls librdkafka")
        }
    }
}
