import Testing

@testable import ServiceSupport

@Suite struct MetricsRegistryTests {
    @Test func countersWithLabelsRenderInPrometheusText() {
        let registry = MetricsRegistry()
        registry.counter("requests_total", help: "Requests.", labels: [("route", "/v1/receipts"), ("code", "202")])
            .increment(by: 3)
        registry.counter("requests_total", help: "Requests.", labels: [("route", "/healthz"), ("code", "200")])
            .increment()

        let text = registry.render()
        #expect(text.contains("# HELP requests_total Requests.\n# TYPE requests_total counter\n"))
        #expect(text.contains("requests_total{route=\"/v1/receipts\",code=\"202\"} 3\n"))
        #expect(text.contains("requests_total{route=\"/healthz\",code=\"200\"} 1\n"))
    }

    @Test func sameNameAndLabelsReturnTheSameInstrument() {
        let registry = MetricsRegistry()
        let first = registry.counter("x_total", help: "x", labels: [("a", "1")])
        let second = registry.counter("x_total", help: "x", labels: [("a", "1")])
        first.increment()
        second.increment()
        #expect(first === second)
        #expect(first.current == 2)
    }

    @Test func histogramBucketsAreCumulative() {
        let registry = MetricsRegistry()
        let histogram = registry.histogram("latency_seconds", help: "Latency.", buckets: [0.1, 1])
        histogram.observe(0.05)
        histogram.observe(0.5)
        histogram.observe(5)

        let text = registry.render()
        #expect(text.contains("latency_seconds_bucket{le=\"0.1\"} 1\n"))
        #expect(text.contains("latency_seconds_bucket{le=\"1\"} 2\n"))
        #expect(text.contains("latency_seconds_bucket{le=\"+Inf\"} 3\n"))
        #expect(text.contains("latency_seconds_sum 5.55\n"))
        #expect(text.contains("latency_seconds_count 3\n"))
    }

    @Test func collectedFamiliesAreComputedAtScrapeTime() {
        let registry = MetricsRegistry()
        let lag = Gauge()
        registry.collect("consumer_lag", help: "Lag.", kind: .gauge) { [(["partition": "0"].map { ($0, $1) }, lag.current)] }
        lag.set(42)
        #expect(registry.render().contains("consumer_lag{partition=\"0\"} 42\n"))
        lag.set(7)
        #expect(registry.render().contains("consumer_lag{partition=\"0\"} 7\n"))
    }

    @Test func labelValuesAreEscaped() {
        let registry = MetricsRegistry()
        registry.gauge("g", help: "g", labels: [("v", "a\"b\\c\nd")]).set(1)
        #expect(registry.render().contains("g{v=\"a\\\"b\\\\c\\nd\"} 1\n"))
    }
}

@Suite struct BuildInfoTests {
    @Test func buildInfoIsOneGaugeWithTheVersionLabels() {
        let registry = MetricsRegistry()
        BuildInfo.register(in: registry, prefix: "ingest", libraries: [("librdkafka_version", "2.0.2")])
        let text = registry.render()
        #expect(text.contains("# TYPE ingest_build_info gauge\n"))
        #expect(
            text.contains(
                "ingest_build_info{version=\"\(BuildInfo.version)\",revision=\"\(BuildInfo.revision)\","
                    + "swift_version=\"\(BuildInfo.swiftVersion)\",librdkafka_version=\"2.0.2\"} 1\n"))
        #expect(BuildInfo.swiftVersion.hasPrefix("6.") || BuildInfo.swiftVersion == "7.0+")
    }

    /// The build stamp the Dockerfile and `make build` write: `git describe` output and a commit id; a line without a
    /// value, or with spaces or control characters (a label value must stay one token), is left out.
    @Test func theBuildStampGivesVersionAndRevision() {
        #expect(
            BuildInfo.parseStamp("version=v1.4.0-12-g1a2b3c4-dirty\nrevision=1a2b3c4d5e6f\n")
                == ["version": "v1.4.0-12-g1a2b3c4-dirty", "revision": "1a2b3c4d5e6f"])
        #expect(BuildInfo.parseStamp("version=\nrevision=a b\nnoise\nrevision2=\u{7}x\n") == [:])
        #expect(!BuildInfo.version.isEmpty && !BuildInfo.revision.isEmpty)
    }
}
