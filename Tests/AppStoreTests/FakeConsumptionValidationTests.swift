@testable import FakeAppStore
import ServiceSupport
import Testing

/// The fake App Store's Send Consumption Information check, as a table written from Apple's pages (not from the
/// ledger's rules): a body, the transaction's product type, and Apple's answer: accepted, or the error it names.
@Suite struct FakeConsumptionValidationTests {
    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let body: String
        var type = "Consumable"
        var familyShared = false
        /// nil: accepted (202).
        let errorCode: Int?
        var errorName = ""
        var testDescription: String { name }
    }

    static let consented = #""customerConsented": true, "sampleContentProvided": false"#

    static let rows: [Row] = [
        Row(name: "a consumable, delivered, its share, prorated",
            body: #"{\#(consented), "deliveryStatus": "DELIVERED", "consumptionPercentage": 25000, "refundPreference": "GRANT_PRORATED"}"#,
            errorCode: nil),
        Row(name: "the three required members alone",
            body: #"{\#(consented), "deliveryStatus": "UNDELIVERED_SERVER_OUTAGE"}"#, type: "Non-Consumable", errorCode: nil),
        Row(name: "an auto-renewable, prorated without a share",
            body: #"{\#(consented), "deliveryStatus": "DELIVERED", "refundPreference": "GRANT_PRORATED"}"#,
            type: "Auto-Renewable Subscription", errorCode: nil),
        Row(name: "a non-renewing subscription, undelivered at 0, in full",
            body: #"{\#(consented), "deliveryStatus": "UNDELIVERED_OTHER", "consumptionPercentage": 0, "refundPreference": "GRANT_FULL"}"#,
            type: "Non-Renewing Subscription", errorCode: nil),
        Row(name: "an auto-renewable with a share",
            body: #"{\#(consented), "deliveryStatus": "DELIVERED", "consumptionPercentage": 10000}"#,
            type: "Auto-Renewable Subscription", errorCode: 4_000_209),
        Row(name: "customer not consented",
            body: #"{"customerConsented": false, "sampleContentProvided": false, "deliveryStatus": "DELIVERED"}"#,
            errorCode: 4_000_035),
        Row(name: "customerConsented missing",
            body: #"{"sampleContentProvided": false, "deliveryStatus": "DELIVERED"}"#, errorCode: 4_000_035),
        Row(name: "sampleContentProvided missing",
            body: #"{"customerConsented": true, "deliveryStatus": "DELIVERED"}"#, errorCode: 4_000_041),
        Row(name: "a v1 delivery status",
            body: #"{\#(consented), "deliveryStatus": 0}"#, errorCode: 4_000_036),
        Row(name: "a v1 refund preference",
            body: #"{\#(consented), "deliveryStatus": "DELIVERED", "refundPreference": 1}"#, errorCode: 4_000_044),
        Row(name: "GRANT_PRORATED at 0 %",
            body: #"{\#(consented), "deliveryStatus": "DELIVERED", "consumptionPercentage": 0, "refundPreference": "GRANT_PRORATED"}"#,
            errorCode: 4_000_000, errorName: "ConsumptionPercentageOutOfRangeError"),
        Row(name: "GRANT_PRORATED at 100 %",
            body: #"{\#(consented), "deliveryStatus": "DELIVERED", "consumptionPercentage": 100000, "refundPreference": "GRANT_PRORATED"}"#,
            type: "Non-Consumable", errorCode: 4_000_000, errorName: "ConsumptionPercentageOutOfRangeError"),
        Row(name: "GRANT_PRORATED without a share for a consumable",
            body: #"{\#(consented), "deliveryStatus": "DELIVERED", "refundPreference": "GRANT_PRORATED"}"#,
            errorCode: 4_000_000, errorName: "ConsumptionPercentageOutOfRangeError"),
        Row(name: "a share above 100 %",
            body: #"{\#(consented), "deliveryStatus": "DELIVERED", "consumptionPercentage": 100001}"#,
            errorCode: 4_000_000, errorName: "ConsumptionPercentageOutOfRangeError"),
        Row(name: "undelivered with a share",
            body: #"{\#(consented), "deliveryStatus": "UNDELIVERED_QUALITY_ISSUE", "consumptionPercentage": 5000}"#,
            errorCode: 4_000_000, errorName: "UndeliveredConsumptionPercentageNonZeroError"),
        Row(name: "a family-shared transaction",
            body: #"{\#(consented), "deliveryStatus": "DELIVERED"}"#, familyShared: true, errorCode: 4_000_185),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) throws {
        guard case .object(let object) = try JSONParser.parse(Array(row.body.utf8)) else {
            Issue.record("not an object: \(row.body)")
            return
        }
        let transaction = FakeServerTransaction(id: "t", type: row.type, familyShared: row.familyShared)
        let refusal = FakeServerAPI.consumptionRefusal(object, transaction: transaction)
        #expect(refusal?.code == row.errorCode, "\(refusal?.message ?? "accepted")")
        if !row.errorName.isEmpty { #expect(refusal?.message.hasPrefix(row.errorName) == true) }
    }
}
