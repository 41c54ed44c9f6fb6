import HTTPServer
import ReceiptModel
import ServiceSupport

/// What the fake remembers of renewal date extensions, per environment.
struct ExtensionState: Sendable {
    /// One request's answer, by `environment|originalTransactionId|requestIdentifier`: a request sent again (a
    /// retry) is answered the same and extends nothing more.
    var answers: [String: String] = [:]
    /// When each subscription (`environment|originalTransactionId`) was extended one at a time.
    var extendedAt: [String: [Int64]] = [:]
    /// Mass extensions by `environment|requestIdentifier`.
    var massRequests: [String: MassRequest] = [:]

    struct MassRequest: Sendable {
        var productId: String
        var completeDateMs: Int64
        var succeeded: Int
        var failed: Int
    }
}

extension FakeServerAPI {
    static let dayMs: Int64 = 86_400_000
    /// Apple: a subscription can be extended at most twice in 365 days.
    static let extensionsPerYear = 2

    /// The members of both extension bodies, checked as Apple checks them (4000009 InvalidExtendByDays,
    /// 4000010 InvalidExtendReasonCode, 4000011 InvalidRequestIdentifier).
    private struct Terms {
        let days: Int64
        let reason: Int64
        let requestIdentifier: String

        /// The body's object and its terms; a body that is no JSON object is 4000000 (Bad request).
        static func read(_ body: [UInt8]) -> Result<(object: [String: JSONValue], terms: Terms), HTTPResponseBox> {
            guard case .object(let object)? = try? JSONParser.parse(body) else {
                return .failure(HTTPResponseBox(FakeServerAPI.error(400, 4_000_000, "Bad request.")))
            }
            guard case .integer(let days)? = object["extendByDays"], (1...90).contains(days) else {
                return .failure(HTTPResponseBox(FakeServerAPI.error(400, 4_000_009, "Invalid extend by days value.")))
            }
            guard case .integer(let reason)? = object["extendReasonCode"], (0...3).contains(reason) else {
                return .failure(HTTPResponseBox(FakeServerAPI.error(400, 4_000_010, "Invalid extend reason code.")))
            }
            guard case .string(let identifier)? = object["requestIdentifier"], !identifier.isEmpty,
                identifier.count <= 128
            else {
                return .failure(HTTPResponseBox(FakeServerAPI.error(400, 4_000_011, "Invalid request identifier.")))
            }
            return .success((object, Terms(days: days, reason: reason, requestIdentifier: identifier)))
        }
    }

    /// Extend a Subscription Renewal Date (`PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`): the
    /// latest period of an active, individually purchased auto-renewable subscription renews `extendByDays` later.
    /// 4000008 when the id is not the original transaction's; 4030004 SubscriptionExtensionIneligible for anything
    /// but an active subscription (not one, expired, revoked); 4030007 for a family-shared one; 4030005
    /// SubscriptionMaxExtension after two extensions in 365 days.
    func extendRenewal(
        _ transaction: FakeServerTransaction, id: String, body: [UInt8], bundleId: String, environment: String
    ) -> HTTPResponse {
        let terms: Terms
        switch Terms.read(body) {
        case .failure(let box): return box.response
        case .success(let read): terms = read.terms
        }
        guard transaction.resolvedOriginalId == id else {
            return Self.error(400, 4_000_008, "Invalid original transaction id.")
        }
        let answerKey = "\(environment)|\(id)|\(terms.requestIdentifier)"
        if let answer = extensions.withLock({ $0.answers[answerKey] }) { return .json(200, answer) }
        let periods = customerGroup(of: transaction, bundleId: bundleId, environment: environment)
            .filter { $0.resolvedOriginalId == id }
        guard transaction.isAutoRenewable, var latest = Self.latestPeriod(periods) else {
            return Self.error(403, 4_030_004, "Subscription is not eligible for extension.")
        }
        if latest.isFamilyShared {
            return Self.error(403, 4_030_007, "Family-shared subscriptions are not eligible for extension.")
        }
        let nowMs = SystemTime.wallMilliseconds()
        guard Self.subscriptionStatus(latest, nowMs: nowMs) == 1 else {
            return Self.error(403, 4_030_004, "Subscription is not eligible for extension.")
        }
        let subscriptionKey = "\(environment)|\(id)"
        let recent = extensions.withLock { state in
            state.extendedAt[subscriptionKey, default: []].filter { nowMs - $0 < 365 * Self.dayMs }.count
        }
        guard recent < Self.extensionsPerYear else {
            return Self.error(403, 4_030_005, "Subscription has reached the maximum number of extensions.")
        }
        let effective = (latest.expiresDateMs ?? nowMs) + terms.days * Self.dayMs
        latest.expiresDateMs = effective
        update(latest)
        let answer = "{\"originalTransactionId\":\(JSONText.quoted(id)),"
            + "\"webOrderLineItemId\":\(latest.webOrderLineItemId.map(JSONText.quoted) ?? "null"),"
            + "\"success\":true,\"effectiveDate\":\(effective)}"
        extensions.withLock { state in
            state.extendedAt[subscriptionKey, default: []].append(nowMs)
            state.answers[answerKey] = answer
        }
        return .json(200, answer)
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers (`POST /inApps/v1/subscriptions/extend/mass`):
    /// every active auto-renewable subscription of `productId` in this environment and app whose storefront is
    /// listed (every storefront when `storefrontCountryCodes` is absent; the fake's transactions are all `USA`)
    /// renews later; family-shared ones count as failed. The status is complete at once. 4000023 InvalidProductId,
    /// 4000027 an empty storefront list, 4000028 a code that is not ISO 3166-1 alpha-3. A request identifier sent
    /// again is answered the same and extends nothing more.
    func massExtend(body: [UInt8], bundleId: String, environment: String) -> HTTPResponse {
        let (object, terms): ([String: JSONValue], Terms)
        switch Terms.read(body) {
        case .failure(let box): return box.response
        case .success(let read): (object, terms) = read
        }
        guard case .string(let productId)? = object["productId"], !productId.isEmpty else {
            return Self.error(400, 4_000_023, "Invalid product id.")
        }
        var storefronts: [String]?
        if let listed = object["storefrontCountryCodes"] {
            guard case .array(let codes) = listed else {
                return Self.error(400, 4_000_028, "Invalid storefront country code.")
            }
            guard !codes.isEmpty else {
                return Self.error(400, 4_000_027, "Invalid empty storefront country code list.")
            }
            var texts: [String] = []
            for code in codes {
                guard case .string(let text) = code, text.utf8.count == 3,
                    text.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") })
                else {
                    return Self.error(400, 4_000_028, "Invalid storefront country code.")
                }
                texts.append(text)
            }
            storefronts = texts
        }
        let answer = "{\"requestIdentifier\":\(JSONText.quoted(terms.requestIdentifier))}"
        let requestKey = "\(environment)|\(terms.requestIdentifier)"
        if extensions.withLock({ $0.massRequests[requestKey] != nil }) { return .json(200, answer) }
        let nowMs = SystemTime.wallMilliseconds()
        let subscriptions = registeredTransactions.filter {
            $0.isAutoRenewable && ($0.productId ?? defaultProductId) == productId
                && $0.resolvedEnvironment.caseInsensitiveCompare(environment) == .orderedSame
                && ($0.bundleId ?? defaultBundleId) == bundleId
        }
        var succeeded = 0
        var failed = 0
        // Every fake transaction is of the USA storefront (`payloadJSON`).
        if storefronts?.contains("USA") ?? true {
            for originalId in Set(subscriptions.map(\.resolvedOriginalId)).sorted() {
                guard var latest = Self.latestPeriod(subscriptions.filter { $0.resolvedOriginalId == originalId }),
                    Self.subscriptionStatus(latest, nowMs: nowMs) == 1
                else { continue }
                if latest.isFamilyShared {
                    failed += 1
                    continue
                }
                latest.expiresDateMs = (latest.expiresDateMs ?? nowMs) + terms.days * Self.dayMs
                update(latest)
                succeeded += 1
            }
        }
        extensions.withLock { state in
            state.massRequests[requestKey] = ExtensionState.MassRequest(
                productId: productId, completeDateMs: nowMs, succeeded: succeeded, failed: failed)
        }
        return .json(200, answer)
    }

    /// Get Status of Subscription Renewal Date Extensions
    /// (`GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`): 4040009 StatusRequestNotFound
    /// for a request this environment never took for that product.
    func massExtendStatus(productId: String, requestIdentifier: String, environment: String) -> HTTPResponse {
        guard let request = extensions.withLock({ $0.massRequests["\(environment)|\(requestIdentifier)"] }),
            request.productId == productId
        else {
            return Self.error(404, 4_040_009, "Status request not found.")
        }
        return .json(
            200,
            "{\"requestIdentifier\":\(JSONText.quoted(requestIdentifier)),\"complete\":true,"
                + "\"completeDate\":\(request.completeDateMs),\"succeededCount\":\(request.succeeded),"
                + "\"failedCount\":\(request.failed)}")
    }
}

/// An error answer carried through a `Result` (HTTPResponse is not an `Error`).
struct HTTPResponseBox: Error {
    let response: HTTPResponse

    init(_ response: HTTPResponse) {
        self.response = response
    }
}
