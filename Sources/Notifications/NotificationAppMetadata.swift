import ServiceSupport
import SignedData

/// The app a verified notification is about: `environment`, `bundleId` and `appAppleId`, wherever the notification
/// type keeps them (`data` for in-app purchase events and TEST, `summary` for RENEWAL_EXTENSION / SUMMARY, `appData`
/// for RESCIND_CONSENT, `externalPurchaseToken` for EXTERNAL_PURCHASE_TOKEN), as Apple's own libraries read them.
struct NotificationAppMetadata: Sendable, Equatable {
    /// Apple's raw `environment` (`Production`, `Sandbox`, `Xcode`, `LocalTesting`, or something new).
    var environment: String?
    var bundleId: String?
    var appAppleId: Int64?

    init(environment: String?, bundleId: String?, appAppleId: Int64?) {
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
    }

    init(_ payload: NotificationPayload) {
        if let data = payload.data {
            self.init(environment: data.environment?.rawValue, bundleId: data.bundleId, appAppleId: data.appAppleId)
        } else if let summary = payload.summary, Self.isObject(summary) {
            self.init(
                environment: Self.string(summary["environment"]), bundleId: Self.string(summary["bundleId"]),
                appAppleId: Self.integer(summary["appAppleId"]))
        } else if let appData = payload.appData, Self.isObject(appData) {
            self.init(
                environment: Self.string(appData["environment"]), bundleId: Self.string(appData["bundleId"]),
                appAppleId: Self.integer(appData["appAppleId"]))
        } else if let token = payload.externalPurchaseToken, Self.isObject(token) {
            // An external purchase token names no environment: Apple's libraries take a token whose
            // externalPurchaseId starts with "SANDBOX" as Sandbox and any other as Production.
            let sandbox = Self.string(token["externalPurchaseId"])?.hasPrefix("SANDBOX") == true
            self.init(
                environment: sandbox ? SignedEnvironment.sandbox.rawValue : SignedEnvironment.production.rawValue,
                bundleId: Self.string(token["bundleId"]), appAppleId: Self.integer(token["appAppleId"]))
        } else {
            self.init(environment: nil, bundleId: nil, appAppleId: nil)
        }
    }

    private static func isObject(_ value: JSONValue) -> Bool {
        if case .object = value { return true }
        return false
    }

    private static func string(_ value: JSONValue?) -> String? {
        if case .string(let text) = value { return text }
        return nil
    }

    /// A whole JSON number (or a decimal string), as Apple writes `appAppleId`. `JSONValue` reads every whole number
    /// that fits 64 bits as `.integer`, exactly; a `.number` has a fraction or does not fit.
    private static func integer(_ value: JSONValue?) -> Int64? {
        switch value {
        case .integer(let number):
            return number
        case .string(let text):
            return Int64(text)
        default:
            return nil
        }
    }
}
