/// librdkafka configuration properties, passed through as they are and validated when a client is created.
///
/// Any property librdkafka knows can be set (`security.protocol`, `sasl.mechanism`, `linger.ms`, ...). The clients
/// add their own defaults (for example idempotence for producers) only for properties not set here, so a value
/// given here always wins. An unknown property or an invalid value makes the client's initializer throw a
/// `KafkaError` (code `KafkaErrorCode.invalidArgument`) naming the property and, when it came from the environment,
/// the variable.
public struct KafkaConfiguration: Sendable, Equatable {
    /// Property name (`bootstrap.servers`) -> value.
    public var properties: [String: String]
    /// Property name -> the environment variable it was read from, for error messages.
    var sources: [String: String] = [:]
    /// `KAFKA_*` variables `fromEnvironment` skipped because Kubernetes injected them for a Service (sorted);
    /// see `KubernetesServiceLinks` and `logIgnoredServiceLinks(_:)`.
    public private(set) var ignoredServiceLinkVariables: [String] = []

    public init(_ properties: [String: String] = [:]) {
        self.properties = properties
    }

    /// The prefix of environment variables that carry librdkafka properties.
    public static let environmentPrefix = "KAFKA_"

    /// `KAFKA_<PROPERTY>` variables -> properties: the rest of the name lower-cased with `_` replaced by `.`
    /// (`KAFKA_BOOTSTRAP_SERVERS` -> `bootstrap.servers`, `KAFKA_SECURITY_PROTOCOL` -> `security.protocol`).
    /// Variables with other prefixes and empty values are ignored, and so are the variables Kubernetes injects for a
    /// Service named `kafka...` (`KAFKA_SERVICE_HOST`, `KAFKA_PORT_9092_TCP`, ...: `KubernetesServiceLinks`), which are
    /// listed in `ignoredServiceLinkVariables` instead. Any other `KAFKA_` variable is a property, so a typo still
    /// stops the client.
    public static func fromEnvironment(_ environment: [String: String]) -> KafkaConfiguration {
        var configuration = KafkaConfiguration()
        for (variable, value) in environment {
            guard let property = propertyName(forVariable: variable) else { continue }
            if KubernetesServiceLinks.isServiceLink(variable) {
                configuration.ignoredServiceLinkVariables.append(variable)
                continue
            }
            let trimmed = value.trimmingWhitespace()
            guard !trimmed.isEmpty else { continue }
            configuration.properties[property] = trimmed
            configuration.sources[property] = variable
        }
        configuration.ignoredServiceLinkVariables.sort()
        return configuration
    }

    /// The librdkafka property an environment variable names, or nil when it has no `KAFKA_` prefix.
    public static func propertyName(forVariable variable: String) -> String? {
        guard variable.hasPrefix(environmentPrefix), variable.count > environmentPrefix.count else { return nil }
        return String(variable.dropFirst(environmentPrefix.count)).lowercased().replacing("_", with: ".")
    }

    public subscript(property: String) -> String? {
        get { properties[property] }
        set { properties[property] = newValue }
    }

    /// `bootstrap.servers`.
    public var bootstrapServers: String? {
        get { properties["bootstrap.servers"] }
        set { properties["bootstrap.servers"] = newValue }
    }

    /// `defaults` overridden by this configuration's properties.
    func merged(withDefaults defaults: [String: String]) -> KafkaConfiguration {
        var result = self
        for (name, value) in defaults where result.properties[name] == nil {
            result.properties[name] = value
        }
        return result
    }

    /// How to refer to `property` in an error message: with its environment variable when it came from one.
    func origin(of property: String) -> String {
        if let variable = sources[property] { return "\(property) (from \(variable))" }
        return property
    }

    public static func == (lhs: KafkaConfiguration, rhs: KafkaConfiguration) -> Bool {
        lhs.properties == rhs.properties
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
