import AppStore

/// The operator's rules for notifications (`ALLOWED_BUNDLE_IDS`, `SANDBOX_POLICY`, `APPLE_APP_APPLE_ID`), checked
/// after the signatures verified.
public struct NotificationPolicy: Sendable, Equatable {
    /// Bundle ids whose notifications become events; any other is `bundle_mismatch`.
    public var allowedBundleIds: Set<String>
    /// `reject`: a Sandbox notification is `sandbox_not_allowed`. Xcode and LocalTesting data never pass.
    public var sandboxPolicy: SandboxPolicy
    /// When set, a Production notification must carry this `appAppleId` (Apple's libraries check it for production
    /// only: sandbox and TestFlight builds may run under another app record).
    public var appAppleId: Int64?

    public init(allowedBundleIds: Set<String>, sandboxPolicy: SandboxPolicy = .accept, appAppleId: Int64? = nil) {
        self.allowedBundleIds = allowedBundleIds
        self.sandboxPolicy = sandboxPolicy
        self.appAppleId = appAppleId
    }
}
