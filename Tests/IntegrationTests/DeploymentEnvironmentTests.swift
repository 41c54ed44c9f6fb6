import Foundation
import Kafka
import ServiceSupport
import Testing

import TestSupport

/// The services as Kubernetes starts them: next to a Service named `kafka` (service-link variables in the
/// environment), and exporting what they were built from on /metrics.
@Suite("deployment environment (processes)", .serialized)
struct DeploymentEnvironmentTests {
    /// What the kubelet sets for `Service kafka` (ClusterIP 10.0.0.11, port 9092 named tcp-clients).
    static let serviceLinks = [
        "KAFKA_SERVICE_HOST": "10.0.0.11", "KAFKA_SERVICE_PORT": "9092", "KAFKA_SERVICE_PORT_TCP_CLIENTS": "9092",
        "KAFKA_PORT": "tcp://10.0.0.11:9092", "KAFKA_PORT_9092_TCP": "tcp://10.0.0.11:9092",
        "KAFKA_PORT_9092_TCP_PROTO": "tcp", "KAFKA_PORT_9092_TCP_PORT": "9092", "KAFKA_PORT_9092_TCP_ADDR": "10.0.0.11",
    ]

    @Test("ingest and verifier start beside service-link variables, warn once, and export *_build_info")
    func serviceLinksAndBuildInfo() async throws {
        let kafka = try await EmbeddedKafkaProcess.start(
            topics: Pipeline.topics.values.sorted().map { ($0, 1) })
        let fake = try await FakeAppStoreProcess.start(arguments: ["--latency-ms", "5"])
        let base = kafka.environment.merging(Pipeline.topics) { $1 }.merging(Self.serviceLinks) { $1 }
        let ingest = try await ServiceProcess.start(.ingest, environment: base)
        let verifier = try await ServiceProcess.start(
            .verifier,
            environment: base.merging(fake.environment) { $1 }.merging([
                "ALLOWED_BUNDLE_IDS": "com.example.game", "KAFKA_SESSION_TIMEOUT_MS": "6000",
            ]) { $1 })
        let labels =
            "version=\"\(BuildInfo.version)\",revision=\"\(BuildInfo.revision)\","
            + "swift_version=\"\(BuildInfo.swiftVersion)\","
            + "librdkafka_version=\"\(KafkaLibrary.version)\"} 1"
        let ingestMetrics = try await TestHTTPClient.send("GET", ingest.url("/metrics"))
        #expect(String(decoding: ingestMetrics.body, as: UTF8.self).contains("ingest_build_info{\(labels)"))
        let verifierMetrics = try await TestHTTPClient.send("GET", verifier.url("/metrics"))
        #expect(String(decoding: verifierMetrics.body, as: UTF8.self).contains("verifier_build_info{\(labels)"))
        for process in [ingest.process, verifier.process] {
            let warnings = process.stderrLines.filter {
                $0.contains("ignoring Kubernetes service-link variables")
            }
            #expect(warnings.count == 1)
            #expect(warnings.first?.contains(Self.serviceLinks.keys.sorted().joined(separator: ",")) == true)
        }
        #expect(await ingest.stop() == 0)
        #expect(await verifier.stop() == 0)
    }
}
