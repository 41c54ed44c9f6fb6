/// The `environment` of signed App Store data. Unknown values are kept as they are.
public struct SignedEnvironment: OpenStringEnum {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let sandbox = SignedEnvironment(rawValue: "Sandbox")
    public static let production = SignedEnvironment(rawValue: "Production")
    public static let xcode = SignedEnvironment(rawValue: "Xcode")
    public static let localTesting = SignedEnvironment(rawValue: "LocalTesting")
}
