import Dispatch
import Foundation
import ReceiptModel

/// Get Refund History v2's answer: up to 20 signed transactions in ascending order of revocation.
public struct RefundHistoryResponse: Sendable, Equatable, Decodable {
    /// Pass it back for the next page.
    public var revision: String?
    public var hasMore: Bool
    public var signedTransactions: [String]

    public init(revision: String?, hasMore: Bool, signedTransactions: [String]) {
        self.revision = revision
        self.hasMore = hasMore
        self.signedTransactions = signedTransactions
    }
}

/// Send Consumption Information v2's body (App Store Server API 1.19): what the developer knows of a purchase whose
/// customer asked for a refund. `customerConsented` must be true (Apple refuses anything else), so a request is
/// only built for a customer who consented.
public struct ConsumptionInformationRequest: Sendable, Equatable, Encodable {
    public let customerConsented: Bool
    public var sampleContentProvided: Bool
    /// `DELIVERED`, `UNDELIVERED_QUALITY_ISSUE`, `UNDELIVERED_WRONG_ITEM`, `UNDELIVERED_SERVER_OUTAGE`,
    /// `UNDELIVERED_OTHER`.
    public var deliveryStatus: String
    /// Thousandths of a percent consumed, 0...100000; absent when unknown.
    public var consumptionPercentage: Int64?
    /// `DECLINE`, `GRANT_FULL`, `GRANT_PRORATED`; absent when the developer states no preference.
    public var refundPreference: String?

    public init(
        sampleContentProvided: Bool, deliveryStatus: String, consumptionPercentage: Int64?, refundPreference: String?
    ) {
        self.customerConsented = true
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }

    /// The JSON body, members in a fixed order (what the audit record stores is what was sent).
    public func jsonBody() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(self))
    }
}

extension AppStoreServerAPIClient {
    /// One page of Get Refund History v2: `GET /inApps/v2/refund/lookup/{transactionId}?revision=...`. Pass the
    /// previous page's `revision` (nil for the first page); stop when `hasMore` is false. The `signedTransactions`
    /// are NOT verified here.
    public func refundHistoryPage(
        transactionId: String, bundleId: String, environment: AppStoreEnvironment, revision: String?,
        deadline: DispatchTime
    ) async -> Answer<RefundHistoryResponse> {
        let path = "/inApps/v2/refund/lookup/" + URLComponent.encode(transactionId)
            + (revision.map { "?revision=" + URLComponent.encode($0) } ?? "")
        return await withCheckedContinuation { continuation in
            call(
                .refundHistory, environment: environment, method: .get, path: path, body: [], bundleId: bundleId,
                deadline: deadline
            ) { continuation.resume(returning: $0) }
        }
    }

    /// Send Consumption Information v2: `PUT /inApps/v2/transactions/consumption/{transactionId}` with `body`
    /// (`ConsumptionInformationRequest.jsonBody()`). Apple answers 202 with no body.
    public func sendConsumptionInformation(
        transactionId: String, body: [UInt8], bundleId: String, environment: AppStoreEnvironment,
        deadline: DispatchTime
    ) async -> Answer<ServerAPINoContent> {
        await withCheckedContinuation { continuation in
            call(
                .consumptionInformation, environment: environment, method: .put,
                path: "/inApps/v2/transactions/consumption/" + URLComponent.encode(transactionId), body: body,
                bundleId: bundleId, deadline: deadline
            ) { continuation.resume(returning: $0) }
        }
    }
}
