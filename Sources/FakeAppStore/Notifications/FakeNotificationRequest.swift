import Foundation

/// What to send, from the query of `POST /admin/notifications/send` or the flags of `fake-appstore
/// send-notification` (the same names, `transaction_id` / `--transaction-id`).
public struct FakeNotificationRequest: Sendable, Equatable {
    public var notification: FakeNotification
    /// Where to POST it; nil records it in the history without delivering (a missed delivery).
    public var url: String?
    /// Waits between attempts after failures; nil for the sender's configured schedule.
    public var retrySchedule: [Duration]?

    /// The parameter names understood (without the leading `--` of the command's flags).
    public static let parameterNames = [
        "url", "type", "subtype", "transaction_id", "original_transaction_id", "product_id", "product_type",
        "bundle_id", "environment", "app_apple_id", "notification_uuid", "ownership", "revocation_percentage",
        "revocation_type", "status", "retry_schedule_seconds", "deliver", "app_transaction_id",
        "consumption_request_reason",
    ]

    /// Parses `values` (names as in `parameterNames`).
    /// - Throws: `FakeNotificationRequestError` naming the parameter that is missing or invalid.
    public static func parse(_ values: [String: String]) throws(FakeNotificationRequestError)
        -> FakeNotificationRequest
    {
        if let unknown = values.keys.sorted().first(where: { !parameterNames.contains($0) }) {
            throw FakeNotificationRequestError(
                "unknown parameter \(unknown); known: \(parameterNames.joined(separator: ", "))")
        }
        guard let type = values["type"], !type.isEmpty else {
            throw FakeNotificationRequestError(
                "type is required: one of \(FakeNotificationTypes.subtypes.keys.sorted().joined(separator: ", ")) "
                    + "(or any other name, sent as it is)")
        }
        var options = FakeNotification.Options()
        options.transactionId = values["transaction_id"]
        options.originalTransactionId = values["original_transaction_id"]
        options.productId = values["product_id"]
        if let productType = values["product_type"] {
            let known = ["consumable", "non_consumable", "auto_renewable", "non_renewing"]
            guard known.contains(productType) else {
                throw FakeNotificationRequestError("product_type is one of \(known.joined(separator: ", "))")
            }
            options.productType = productType
        }
        if let bundleId = values["bundle_id"] { options.bundleId = bundleId }
        if let environment = values["environment"] { options.environment = environment }
        if let appAppleId = values["app_apple_id"] {
            if appAppleId == "none" {
                options.appAppleId = nil
            } else {
                guard let id = Int64(appAppleId) else {
                    throw FakeNotificationRequestError("app_apple_id is a number or none, not '\(appAppleId)'")
                }
                options.appAppleId = id
            }
        }
        options.notificationUUID = values["notification_uuid"]
        options.ownershipType = values["ownership"]
        options.revocationType = values["revocation_type"]
        options.revocationPercentage = try integer(values, "revocation_percentage", 0...100_000)
        options.status = try integer(values, "status", 1...5)
        options.appTransactionId = values["app_transaction_id"]
        options.consumptionRequestReason = values["consumption_request_reason"]
        let notification = FakeNotification.make(
            type: type, subtype: values["subtype"].flatMap { $0.isEmpty ? nil : $0 }, options: options)
        var schedule: [Duration]?
        if let text = values["retry_schedule_seconds"] {
            schedule = try retrySchedule(text)
        }
        let deliver = values["deliver"].map { ["1", "true", "yes", "on"].contains($0.lowercased()) } ?? true
        let url = deliver ? values["url"] : nil
        if deliver, url?.isEmpty != false {
            throw FakeNotificationRequestError("url is required (where to POST the notification), or deliver=0")
        }
        return FakeNotificationRequest(notification: notification, url: url, retrySchedule: schedule)
    }

    /// `"1,12,24"` (seconds, fractions allowed) or `apple` (1, 12, 24, 48, 72 hours) or `none`.
    public static func retrySchedule(_ text: String) throws(FakeNotificationRequestError) -> [Duration] {
        switch text {
        case "apple": return FakeNotificationSender.appleRetrySchedule
        case "none", "": return []
        default: break
        }
        var schedule: [Duration] = []
        for part in text.split(separator: ",") {
            guard let seconds = Double(part.trimmingCharacters(in: .whitespaces)), seconds >= 0, seconds < 1e7 else {
                throw FakeNotificationRequestError(
                    "retry_schedule_seconds is a comma-separated list of seconds, apple or none, not '\(text)'")
            }
            schedule.append(.milliseconds(Int64(seconds * 1000)))
        }
        return schedule
    }

    private static func integer(_ values: [String: String], _ name: String, _ range: ClosedRange<Int>)
        throws(FakeNotificationRequestError) -> Int?
    {
        guard let text = values[name] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw FakeNotificationRequestError("\(name) is a whole number in \(range), not '\(text)'")
        }
        return value
    }
}

/// A send request that cannot be understood; the message names the parameter.
public struct FakeNotificationRequestError: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
