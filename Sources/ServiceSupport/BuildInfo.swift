/// What a running process was built from, exported as a constant `<prefix>_build_info` gauge (value 1) so dashboards
/// and alerts can tell versions apart during a rollout (`count by (version) (verifier_build_info)`).
public enum BuildInfo {
    /// This project's release version; the image tag in docker/k8s/kustomization.yaml is the same
    /// (scripts/check-deployment.py checks it).
    public static let version = "1.0.0"

    /// The Swift compiler that built this binary (major.minor, from `#if compiler`: there is no run-time API).
    public static let swiftVersion: String = {
        #if compiler(>=7.0)
            return "7.0+"
        #elseif compiler(>=6.5)
            return "6.5"
        #elseif compiler(>=6.4)
            return "6.4"
        #elseif compiler(>=6.3)
            return "6.3"
        #elseif compiler(>=6.2)
            return "6.2"
        #elseif compiler(>=6.1)
            return "6.1"
        #else
            return "6.0"
        #endif
    }()

    /// Registers `<prefix>_build_info{version,swift_version,<libraries>...} 1` in `registry`. `libraries` are
    /// label name -> version of the C libraries the process links (`librdkafka_version` -> "2.0.2"), read at run time
    /// from the libraries themselves.
    public static func register(in registry: MetricsRegistry, prefix: String, libraries: MetricLabels) {
        let labels: MetricLabels = [("version", version), ("swift_version", swiftVersion)] + libraries
        registry.gauge(
            "\(prefix)_build_info", help: "Always 1; the labels say what this process was built from.", labels: labels
        ).set(1)
    }
}
