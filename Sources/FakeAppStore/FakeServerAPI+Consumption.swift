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

    /// Apple's error answers of Send Consumption Information (v2), by the error objects its page lists. The codes
    /// are Apple's (its error pages and its server libraries' `APIError`), except two whose numbers neither
    /// publishes in what this project could read: `ConsumptionPercentageOutOfRangeError` and
    /// `UndeliveredConsumptionPercentageNonZeroError` answer `GeneralBadRequestError`'s 4000000 with the error's
    /// name in the message (Sources/FakeAppStore/README.md).
    enum ConsumptionError {
        static let invalidCustomerConsented = (
            code: 4_000_035,
            message: "Invalid request. The customer consented field is required and must indicate the customer consented."
        )
        static let invalidDeliveryStatus = (code: 4_000_036, message: "Invalid request. The delivery status field is invalid.")
        static let invalidSampleContentProvided = (
            code: 4_000_041, message: "Invalid request. The sample content provided field is invalid."
        )
        static let invalidRefundPreference = (code: 4_000_044, message: "Invalid request. The refund preference field is invalid.")
        static let familyTransactionNotSupported = (
            code: 4_000_185, message: "Invalid request. Family Sharing transactions aren't supported by this endpoint."
        )
        static let percentageAutoRenewable = (
            code: 4_000_209,
            message: "Invalid request. The consumption percentage field is not supported for auto-renewable "
                + "subscription transactions."
        )
        static let percentageOutOfRange = (
            code: 4_000_000, message: "ConsumptionPercentageOutOfRangeError: the consumption percentage is outside the valid range."
        )
        static let undeliveredPercentageNonZero = (
            code: 4_000_000,
            message: "UndeliveredConsumptionPercentageNonZeroError: the consumption percentage must be zero for the "
                + "provided delivery status."
        )
    }

    /// Send Consumption Information v2 (`PUT /inApps/v2/transactions/consumption/{transactionId}`), the body checked
    /// as Apple documents `ConsumptionRequest` (docs/CREDITING.md, "What Apple accepts"), for any product type:
    /// - not a JSON object, or a member `ConsumptionRequest` does not have: 400 without an error code (Apple's
    ///   "malformed"; stricter than Apple may be about extra members, so a misspelt field cannot pass);
    /// - `customerConsented` absent or not `true` (4000035), `sampleContentProvided` not a boolean (4000041),
    ///   `deliveryStatus` not one of five (4000036), `refundPreference` present and not one of three (4000044);
    /// - `consumptionPercentage` not an integer in 0...100000 (out of range); present for an auto-renewable
    ///   subscription (4000209); not 0 while `deliveryStatus` is not `DELIVERED`; with `GRANT_PRORATED` for any
    ///   other product type, absent or not above 0 and below 100000 (out of range);
    /// - a family-shared transaction (4000185).
    /// 202 with no body otherwise. A later answer for the same transaction replaces the earlier one at Apple; the fake
    /// keeps both to show it.
    func consumptionInformation(for transaction: FakeServerTransaction, body: [UInt8]) -> HTTPResponse {
        guard case .object(let object)? = try? JSONParser.parse(body),
            object.keys.allSatisfy({ Self.consumptionMembers.contains($0) })
        else {
            return HTTPResponse(status: 400, headers: [], body: [])
        }
        if let refusal = Self.consumptionRefusal(object, transaction: transaction) {
            return Self.error(400, refusal.code, refusal.message)
        }
        let answer = ConsumptionAnswer(body: String(decoding: body, as: UTF8.self), atMs: SystemTime.wallMilliseconds())
        consumptionAnswers.withLock { $0[transaction.id, default: []].append(answer) }
        return HTTPResponse(status: 202, headers: [], body: [])
    }

    /// Why Apple refuses this `ConsumptionRequest` for `transaction`, as Apple's pages put it; nil: accepted.
    static func consumptionRefusal(_ object: [String: JSONValue], transaction: FakeServerTransaction)
        -> (code: Int, message: String)?
    {
        typealias E = ConsumptionError
        guard case .bool(true)? = object["customerConsented"] else { return E.invalidCustomerConsented }
        guard case .bool? = object["sampleContentProvided"] else { return E.invalidSampleContentProvided }
        guard case .string(let delivery)? = object["deliveryStatus"], deliveryStatuses.contains(delivery) else {
            return E.invalidDeliveryStatus
        }
        var preference: String?
        if let value = object["refundPreference"] {
            guard case .string(let text) = value, refundPreferences.contains(text) else { return E.invalidRefundPreference }
            preference = text
        }
        if transaction.isFamilyShared { return E.familyTransactionNotSupported }
        var percentage: Int64?
        if let value = object["consumptionPercentage"] {
            guard case .integer(let number) = value, (0...100_000).contains(number) else { return E.percentageOutOfRange }
            percentage = number
        }
        if transaction.isAutoRenewable {
            // Apple computes an auto-renewable's consumption itself; GRANT_PRORATED goes without a percentage.
            return percentage == nil ? nil : E.percentageAutoRenewable
        }
        if delivery != "DELIVERED", let percentage, percentage != 0 { return E.undeliveredPercentageNonZero }
        if preference == "GRANT_PRORATED" {
            guard let percentage, percentage > 0, percentage < 100_000 else { return E.percentageOutOfRange }
        }
        return nil
    }

    /// The bodies received for `transactionId`, as JSON: `{"transaction", "answers": [{"body": {...}, "at_ms"}]}`.
    func consumptionAnswersJSON(transactionId: String) -> String {
        let answers = consumptionAnswers.withLock { $0[transactionId] ?? [] }
        let items = answers.map { "{\"body\":\($0.body),\"at_ms\":\($0.atMs)}" }.joined(separator: ",")
        return "{\"transaction\":\(JSONText.quoted(transactionId)),\"answers\":[\(items)]}"
    }
}
