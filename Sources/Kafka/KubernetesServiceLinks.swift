import ServiceSupport

/// The environment variables Kubernetes injects into every pod for each Service of its namespace ("service links",
/// on unless the pod spec sets `enableServiceLinks: false`). A Service named `kafka` (Strimzi's and Bitnami's usual
/// names start so) yields variables with this module's `KAFKA_` prefix that are not librdkafka properties, and would
/// otherwise stop the process as unknown properties.
///
/// For a Service `<NAME>` (upper-cased, `-` as `_`) with a port `<PORT>`/`<PROTO>` named `<PORTNAME>`, Kubernetes sets
/// `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT`, `<NAME>_SERVICE_PORT_<PORTNAME>`, and the Docker-link forms
/// `<NAME>_PORT`, `<NAME>_PORT_<PORT>_<PROTO>` and `<NAME>_PORT_<PORT>_<PROTO>_PROTO` / `_PORT` / `_ADDR`. Exactly
/// those shapes are recognised here; no librdkafka 2.0.2 property ends in `.service.host`, `.service.port[.<x>]`,
/// `.port` or `.port.<n>.<proto>[.<part>]`, so a real property (or a typo of one) is never taken for a link.
public enum KubernetesServiceLinks {
    private static let protocols: Set<Substring> = ["TCP", "UDP", "SCTP"]
    private static let portParts: Set<Substring> = ["PROTO", "PORT", "ADDR"]

    /// Whether `variable` (with the `KAFKA_` prefix) has the shape of a Kubernetes service-link variable of a
    /// Service whose name starts with `kafka`.
    public static func isServiceLink(_ variable: String) -> Bool {
        let words = variable.split(separator: "_", omittingEmptySubsequences: false)
        guard words.count >= 2, words[0] == "KAFKA", words.allSatisfy(isNameWord) else { return false }
        // words[0..<start] is the Service's name (at least `KAFKA`); what follows it must be one of the shapes.
        for start in 1..<words.count where matchesSuffix(words[start...]) {
            return true
        }
        return false
    }

    /// `SERVICE_HOST`, `SERVICE_PORT`, `SERVICE_PORT_<PORTNAME>`, `PORT`, `PORT_<n>_<PROTO>`, `PORT_<n>_<PROTO>_<part>`.
    private static func matchesSuffix(_ suffix: ArraySlice<Substring>) -> Bool {
        let words = Array(suffix)
        switch words.first {
        case "SERVICE":
            guard words.count >= 2 else { return false }
            if words.count == 2 { return words[1] == "HOST" || words[1] == "PORT" }
            return words[1] == "PORT"  // SERVICE_PORT_<PORTNAME>: a port name may itself contain `-`, hence `_`
        case "PORT":
            if words.count == 1 { return true }
            guard words.count == 3 || words.count == 4, isPortNumber(words[1]), protocols.contains(words[2]) else {
                return false
            }
            return words.count == 3 || portParts.contains(words[3])
        default:
            return false
        }
    }

    private static func isNameWord(_ word: Substring) -> Bool {
        !word.isEmpty && word.utf8.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) }
    }

    private static func isPortNumber(_ word: Substring) -> Bool {
        guard word.count <= 5, word.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let port = Int(word) else {
            return false
        }
        return (1...65535).contains(port)
    }
}

extension KafkaConfiguration {
    /// Logs, once, the service-link variables `fromEnvironment` ignored (names only), with the way to stop them.
    /// Call it once per process, after reading the configuration.
    public func logIgnoredServiceLinks(_ logger: Logger) {
        guard !ignoredServiceLinkVariables.isEmpty else { return }
        logger.warning(
            "ignoring Kubernetes service-link variables, which are not librdkafka properties (a Service whose name "
                + "starts with 'kafka' is in the namespace); set enableServiceLinks: false in the pod spec to drop them",
            ["variables": .string(ignoredServiceLinkVariables.joined(separator: ","))])
    }
}
