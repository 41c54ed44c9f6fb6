import Foundation
import HTTPServer
import ReceiptModel
import ServiceSupport
import SignedData

extension FakeServerAPI {
    /// Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`): the transactions registered with that `order_id` in
    /// this environment and app, signed, with `status` 0; an order id it does not know is HTTP 200 with `status` 1
    /// and no transactions, as Apple answers.
    func orderLookup(_ orderId: String, bundleId: String, environment: String) -> HTTPResponse {
        countCall(orderId, sandbox: environment == "Sandbox")
        let matches = registeredTransactions.filter {
            $0.orderId == orderId && $0.resolvedEnvironment.caseInsensitiveCompare(environment) == .orderedSame
                && ($0.bundleId ?? defaultBundleId) == bundleId
        }.sorted { left, right in
            let (l, r) = (left.purchaseDateMs ?? FakeServerTransaction.defaultPurchaseDateMs,
                          right.purchaseDateMs ?? FakeServerTransaction.defaultPurchaseDateMs)
            return l != r ? l < r : left.id < right.id
        }
        guard !matches.isEmpty else { return .json(200, "{\"status\":1,\"signedTransactions\":[]}") }
        do {
            return .json(200, "{\"status\":0,\"signedTransactions\":\(try signedTransactionsJSON(matches))}")
        } catch {
            return Self.error(500, 5_000_000, "An unknown error occurred.")
        }
    }

    /// Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}[?status=N]`): the customer's
    /// auto-renewable subscriptions in this environment and app, the latest period of each original transaction
    /// (status 1 active, 2 expired, 5 revoked) with a signed renewal info, by subscription group. `status` outside
    /// 1...5 is 4000031 InvalidStatus.
    func subscriptionStatuses(
        of transaction: FakeServerTransaction, bundleId: String, environment: String, query: [String: String]
    ) throws -> HTTPResponse {
        var wanted: Int?
        if let raw = query["status"] {
            guard let value = Int(raw), (1...5).contains(value) else {
                return Self.error(400, 4_000_031, "Invalid status.")
            }
            wanted = value
        }
        let nowMs = SystemTime.wallMilliseconds()
        let periods = customerGroup(of: transaction, bundleId: bundleId, environment: environment)
            .filter(\.isAutoRenewable)
        var groups: [String: [String]] = [:]
        for originalId in Set(periods.map(\.resolvedOriginalId)).sorted() {
            guard let latest = Self.latestPeriod(periods.filter { $0.resolvedOriginalId == originalId }) else {
                continue
            }
            let status = Self.subscriptionStatus(latest, nowMs: nowMs)
            if let wanted, wanted != status { continue }
            var renewal = FakeRenewalInfo(
                originalTransactionId: originalId, productId: latest.productId ?? defaultProductId,
                environment: latest.resolvedEnvironment, signedDateMs: nowMs)
            renewal.renewalDateMs = latest.expiresDateMs
            renewal.autoRenewStatus = status == 1 ? 1 : 0
            let signedRenewal = try signing.signer.sign(payload: renewal.json)
            let signedTransaction = try signedAnswer(latest).jws
            let item = "{\"status\":\(status),\"originalTransactionId\":\(JSONText.quoted(originalId)),"
                + "\"signedTransactionInfo\":\"\(signedTransaction)\",\"signedRenewalInfo\":\"\(signedRenewal)\"}"
            groups[latest.subscriptionGroup ?? FakeServerTransaction.defaultSubscriptionGroup, default: []].append(item)
        }
        let data = groups.keys.sorted().map { group in
            "{\"subscriptionGroupIdentifier\":\(JSONText.quoted(group)),"
                + "\"lastTransactions\":[\(groups[group, default: []].joined(separator: ","))]}"
        }
        return .json(
            200,
            "{\"environment\":\(JSONText.quoted(environment)),\"bundleId\":\(JSONText.quoted(bundleId)),"
                + "\"appAppleId\":1234567890,\"data\":[\(data.joined(separator: ","))]}")
    }

    /// The period that renews last (the latest expiry, then the latest purchase).
    static func latestPeriod(_ periods: [FakeServerTransaction]) -> FakeServerTransaction? {
        periods.max { left, right in
            let l = left.expiresDateMs ?? left.purchaseDateMs ?? 0
            let r = right.expiresDateMs ?? right.purchaseDateMs ?? 0
            return l != r ? l < r : left.id < right.id
        }
    }

    /// 5 revoked, 1 active (expires in the future), 2 expired.
    static func subscriptionStatus(_ period: FakeServerTransaction, nowMs: Int64) -> Int {
        if period.revocationDateMs != nil { return 5 }
        return (period.expiresDateMs ?? 0) > nowMs ? 1 : 2
    }

    /// Set App Account Token (`PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`): the body
    /// must be `{"appAccountToken": "<UUID>"}` (else 4000183 InvalidAppAccountTokenUUID), the id an original
    /// transaction id (else 4000187), not a family-shared purchase (4000185). Every registered transaction of that
    /// original transaction carries the token from then on (signed anew); 200 with no body.
    func setAppAccountToken(_ transaction: FakeServerTransaction, id: String, body: [UInt8]) -> HTTPResponse {
        guard case .object(let object)? = try? JSONParser.parse(body),
            case .string(let token)? = object["appAccountToken"], let uuid = UUID(uuidString: token)
        else {
            return Self.error(400, 4_000_183, "Invalid app account token. The token must be a UUID.")
        }
        guard transaction.resolvedOriginalId == id else {
            return Self.error(400, 4_000_187, "The transaction id is not an original transaction id.")
        }
        if transaction.isFamilyShared {
            return Self.error(400, 4_000_185, "Family-shared transactions are not supported.")
        }
        let family = registeredTransactions.filter {
            $0.resolvedOriginalId == id && $0.resolvedEnvironment == transaction.resolvedEnvironment
                && $0.bundleId == transaction.bundleId
        }
        for var member in family.isEmpty ? [transaction] : family {
            member.appAccountToken = uuid.uuidString.lowercased()
            update(member)
        }
        return HTTPResponse(status: 200, headers: [], body: [])
    }
}
