import HTTPServer
import ReceiptModel
import ServiceSupport

extension FakeServerAPI {
    /// One Send Consumption Information body the fake accepted.
    struct ConsumptionAnswer: Sendable {
        let body: String
        let atMs: Int64
    }

    static let deliveryStatuses: Set<String> = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE",
        "UNDELIVERED_OTHER",
    ]
    static let refundPreferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]
    static let consumptionMembers: Set<String> = [
        "customerConsented", "sampleContentProvided", "deliveryStatus", "consumptionPercentage", "refundPreference",
    ]

    /// Send Consumption Information v2 (`PUT /inApps/v2/transactions/consumption/{transactionId}`): the body
    /// validated as Apple documents it (`customerConsented` true, `sampleContentProvided` a boolean,
    /// `deliveryStatus` one of five, `consumptionPercentage` 0...100000 when present, `refundPreference` one of
    /// three when present), only for consumables and auto-renewable subscriptions; 202 with no body. A later
    /// answer for the same transaction replaces the earlier one at Apple; the fake keeps both to show it.
    func consumptionInformation(for transaction: FakeServerTransaction, body: [UInt8]) -> HTTPResponse {
        guard case .object(let object)? = try? JSONParser.parse(body) else {
            return Self.error(400, 4_000_000, "Bad request.")
        }
        if object.keys.contains(where: { !Self.consumptionMembers.contains($0) }) {
            return Self.error(400, 4_000_000, "Bad request.")
        }
        guard case .bool(true)? = object["customerConsented"] else {
            return Self.error(400, 4_000_035, "Invalid customer consented.")
        }
        guard case .bool? = object["sampleContentProvided"] else {
            return Self.error(400, 4_000_041, "Invalid sample content provided.")
        }
        guard case .string(let delivery)? = object["deliveryStatus"], Self.deliveryStatuses.contains(delivery) else {
            return Self.error(400, 4_000_036, "Invalid delivery status.")
        }
        if let percentage = object["consumptionPercentage"] {
            guard case .integer(let value) = percentage, (0...100_000).contains(value) else {
                return Self.error(400, 4_000_000, "Invalid consumption percentage.")
            }
        }
        if let preference = object["refundPreference"] {
            guard case .string(let text) = preference, Self.refundPreferences.contains(text) else {
                return Self.error(400, 4_000_000, "Invalid refund preference.")
            }
        }
        let type = transaction.type ?? "Consumable"
        guard type == "Consumable" || type == "Auto-Renewable Subscription" else {
            return Self.error(400, 4_000_043, "Invalid request. The transaction is not a consumable or subscription.")
        }
        let answer = ConsumptionAnswer(body: String(decoding: body, as: UTF8.self), atMs: SystemTime.wallMilliseconds())
        consumptionAnswers.withLock { $0[transaction.id, default: []].append(answer) }
        return HTTPResponse(status: 202, headers: [], body: [])
    }

    /// The bodies received for `transactionId`, as JSON: `{"transaction", "answers": [{"body": {...}, "at_ms"}]}`.
    func consumptionAnswersJSON(transactionId: String) -> String {
        let answers = consumptionAnswers.withLock { $0[transactionId] ?? [] }
        let items = answers.map { "{\"body\":\($0.body),\"at_ms\":\($0.atMs)}" }.joined(separator: ",")
        return "{\"transaction\":\(JSONText.quoted(transactionId)),\"answers\":[\(items)]}"
    }
}
