import Foundation

/// What a running process was built from, exported as a constant `<prefix>_build_info` gauge (value 1) so dashboards
/// and alerts can tell versions apart during a rollout (`count by (version) (verifier_build_info)`).
public enum BuildInfo {
    /// This project's release version as the source states it; the image tag in docker/k8s/kustomization.yaml is
    /// the same (scripts/check-deployment.py checks it). What a binary reports is `version`.
    public static let releaseVersion = "1.0.0"

    /// The version this binary was built as: the build stamp's (`git describe` of the checkout, written by the
    /// Dockerfile and `make build`), else `releaseVersion`.
    public static let version: String = stamp["version"] ?? releaseVersion

    /// The git revision this binary was built from (the build stamp's), or "unknown" (a build outside git, or by
    /// `swift build` alone).
    public static let revision: String = stamp["revision"] ?? "unknown"

    /// The build stamp: `version=` and `revision=` lines in `build-info` beside the executable (`make build`) or in
    /// `<bin>/../share/receipt-verification/build-info` (the image). Written by the build, never by hand; missing or
    /// unreadable, the defaults above stand.
    static let stamp: [String: String] = {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        for candidate in ["build-info", "../share/receipt-verification/build-info"] {
            let path = executable.appendingPathComponent(candidate).standardizedFileURL.path
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            return parseStamp(text)
        }
        return [:]
    }()

    /// `key=value` lines; values that are empty or not printable ASCII are left out.
    static func parseStamp(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard !value.isEmpty, value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else { continue }
            fields[String(line[..<equals])] = value
        }
        return fields
    }

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

    /// Registers `<prefix>_build_info{version,revision,swift_version,<libraries>...} 1` in `registry`. `libraries` are
    /// label name -> version of the C libraries the process links (`librdkafka_version` -> "2.0.2"), read at run time
    /// from the libraries themselves.
    public static func register(in registry: MetricsRegistry, prefix: String, libraries: MetricLabels) {
        let labels: MetricLabels = [("version", version), ("revision", revision), ("swift_version", swiftVersion)]
            + libraries
        registry.gauge(
            "\(prefix)_build_info", help: "Always 1; the labels say what this process was built from.", labels: labels
        ).set(1)
    }
}
