import Foundation

/// The body of `POST /v1/apple/notifications`: `{"signedPayload": "<JWS>"}` as Apple posts App Store Server
/// Notifications V2, checked for its shape only (nothing is verified here), with what routing needs read from the
/// unverified payload. The ingest reads Apple's posts with it, and `NotificationHistoryRecord` the payloads of Get
/// Notification History, so both are keyed alike.
public struct NotificationRequest: Sendable, Equatable {
    /// Why a body is not a notification (the ingest answers it 400 `invalid_notification`): `problem` says what
    /// Apple would have sent instead, never quoting the body.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let problem: String

        public init(_ problem: String) {
            self.problem = problem
        }

        public var description: String { problem }
    }

    /// Apple's `signedPayload`, unchanged.
    public var signedPayload: String
    /// `data.signedTransactionInfo`'s `originalTransactionId` (read from the unverified nested JWS), when present.
    public var originalTransactionId: String?
    /// The payload's `notificationUUID`, when readable (a short visible-ASCII string).
    public var notificationUUID: String?

    /// The Kafka key: the original transaction id (one subscription's notifications stay in order), else the
    /// notification UUID; nil (any partition) when the payload names neither.
    public var partitionKey: String? { originalTransactionId ?? notificationUUID }

    /// Parses and checks a request body.
    /// - Throws: `Invalid` when the body is not a JSON object with a `signedPayload` that is three base64url
    ///   segments with an ES256 header.
    public static func parse(_ body: [UInt8]) throws(Invalid) -> NotificationRequest {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(body), options: [])
        } catch {
            throw Invalid("the body is not valid JSON: Apple posts {\"signedPayload\": \"<JWS>\"}")
        }
        guard let object = parsed as? [String: Any] else {
            throw Invalid("the body must be a JSON object {\"signedPayload\": \"<JWS>\"}")
        }
        guard let signedPayload = object["signedPayload"] as? String, !signedPayload.isEmpty else {
            throw Invalid("signedPayload is missing or not a string")
        }
        do {
            try UnverifiedJWS.checkShape(signedPayload)
        } catch {
            switch error {
            case .notCompact:
                throw Invalid(
                    "signedPayload is not a compact JWS (three base64url segments joined by dots)")
            case .unreadableHeader:
                throw Invalid("signedPayload's header is not a base64url JSON object")
            case .unsupportedAlgorithm(let alg):
                throw Invalid(
                    "signedPayload's header names alg \(alg.map { "'\($0.prefix(20))'" } ?? "(none)"); "
                        + "Apple signs with ES256 only")
            }
        }
        let payload = UnverifiedJWS.payload(signedPayload)
        let data = payload?["data"] as? [String: Any]
        let transaction = (data?["signedTransactionInfo"] as? String).flatMap(UnverifiedJWS.payload)
        return NotificationRequest(
            signedPayload: signedPayload,
            originalTransactionId: keyText(transaction?["originalTransactionId"]),
            notificationUUID: keyText(payload?["notificationUUID"]))
    }

    /// A string (or an integer as its digits) of 1 to 128 visible ASCII characters; anything else is not used.
    private static func keyText(_ value: Any?) -> String? {
        let text: String
        switch value {
        case let string as String: text = string
        case let number as NSNumber where !JSONNumbers.isBoolean(number):
            guard let digits = JSONNumbers.integerText(number) else { return nil }
            text = digits
        default: return nil
        }
        guard !text.isEmpty, text.utf8.count <= 128, text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return nil
        }
        return text
    }
}
