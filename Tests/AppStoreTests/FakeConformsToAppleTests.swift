import AppStore
import AppStoreServerAPI
import FakeAppStore
import Foundation
import HTTPClient
import ReceiptModel
import ServiceSupport
@_spi(Testing) import SignedData
import TestPKI
import TestSupport
import Testing

/// Every answer the fake App Store sends, member by member and with its JSON type, against Apple's: the App Store
/// Server API and Server Notifications against the models of Apple's own library
/// (`Fixtures/apple-app-store-server-library/apple-models.json`, derived from apple/app-store-server-library-java),
/// verifyReceipt against Apple's documentation (`Fixtures/verify-receipt-members.json`). Signed members
/// (`signedTransactionInfo`, `signedRenewalInfo`, `signedAppTransactionInfo`, `signedTransactions`,
/// `signedPayload`) are opened and their payloads checked the same way, so a member the fake invents anywhere fails
/// here (issue 41 item 6: two invented members, the app transaction's `environment` and the test notification
/// status's `sendAttemptResults`, had let the decoders rely on them).
///
/// Missing members fail too, by one rule: Apple's models mark no member required (every member is optional in its
/// Java, Python, Swift and Node libraries), so a Server API answer must carry every member that each of Apple's
/// example answers of its model carries (`requiredMembers`, from `models/*.json`), down through the objects nested in
/// it. Signed payloads and notifications are exempt: Apple's examples of those fill every optional member at once,
/// while which ones Apple sends depends on the product and the notification type. (The fake's transaction history
/// answered without `appAppleId`, which every example of Apple's `HistoryResponse` has.)
@Suite(.serialized) struct FakeConformsToAppleTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// Apple's models: name -> member -> wire type (`"string"`, `"integer"`, `"boolean"`, `"object"`, a model name,
    /// or a one-element array of one of those).
    static let models: [String: [String: JSONValue]] = {
        guard
            let data = try? Data(
                contentsOf: fixtures.appendingPathComponent("apple-app-store-server-library/apple-models.json")),
            case .object(let root)? = try? JSONParser.parse(Array(data)),
            case .object(let models)? = root["models"]
        else { return [:] }
        var result: [String: [String: JSONValue]] = [:]
        for (name, value) in models {
            if case .object(let members) = value { result[name] = members }
        }
        return result
    }()

    /// Which of Apple's models a signed member's payload is.
    static let signedMembers = [
        "signedTransactionInfo": "JWSTransactionDecodedPayload", "signedTransactions": "JWSTransactionDecodedPayload",
        "signedRenewalInfo": "JWSRenewalInfoDecodedPayload", "signedAppTransactionInfo": "AppTransaction",
        "signedPayload": "ResponseBodyV2DecodedPayload",
    ]

    /// Apple's example answers of the Server API (`models/*.json`) and the model each is.
    static let exampleAnswers: [String: String] = [
        "transactionInfoResponse.json": "TransactionInfoResponse", "transactionHistoryResponse.json": "HistoryResponse",
        "getAllSubscriptionStatusesResponse.json": "StatusResponse", "lookupOrderIdResponse.json": "OrderLookupResponse",
        "getRefundHistoryResponse.json": "RefundHistoryResponse",
        "getNotificationHistoryResponse.json": "NotificationHistoryResponse",
        "getTestNotificationStatusResponse.json": "CheckTestNotificationResponse",
        "requestTestNotificationResponse.json": "SendTestNotificationResponse",
        "extendSubscriptionRenewalDateResponse.json": "ExtendRenewalDateResponse",
        "extendRenewalDateForAllActiveSubscribersResponse.json": "MassExtendRenewalDateResponse",
        "getStatusOfSubscriptionRenewalDateExtensionsResponse.json": "MassExtendRenewalDateStatusResponse",
        "appTransactionInfoResponse.json": "AppTransactionInfoResponse", "apiException.json": "ErrorPayload",
        "apiTooManyRequestsException.json": "ErrorPayload", "apiUnknownError.json": "ErrorPayload",
        "appTransactionDoesNotExistError.json": "ErrorPayload", "familyTransactionNotSupportedError.json": "ErrorPayload",
        "invalidAppAccountTokenUUIDError.json": "ErrorPayload", "invalidTransactionIdError.json": "ErrorPayload",
        "transactionIdNotFoundError.json": "ErrorPayload", "transactionIdNotOriginalTransactionId.json": "ErrorPayload",
    ]

    /// Model -> the members every example of it in Apple's example answers carries (non-null), the objects nested in
    /// them included (`StatusResponse.data[].lastTransactions[]`): what the fake's answers must carry too.
    static let requiredMembers: [String: Set<String>] = {
        var seen: [String: Set<String>] = [:]
        func collect(_ value: JSONValue, model: String) {
            guard case .object(let object) = value, let members = models[model] else { return }
            let carried = Set(object.filter { $0.value != .null }.keys)
            seen[model] = seen[model].map { $0.intersection(carried) } ?? carried
            for (key, member) in object {
                switch members[key] {
                case .string(let inner)? where models[inner] != nil: collect(member, model: inner)
                case .array(let elements)?:
                    guard case .string(let inner)? = elements.first, models[inner] != nil,
                        case .array(let items) = member
                    else { continue }
                    for item in items { collect(item, model: inner) }
                default: continue
                }
            }
        }
        let directory = fixtures.appendingPathComponent("apple-app-store-server-library/models")
        for (file, model) in exampleAnswers {
            guard let data = try? Data(contentsOf: directory.appendingPathComponent(file)),
                let example = try? JSONParser.parse(Array(data))
            else { continue }
            collect(example, model: model)
        }
        return seen
    }()

    /// What does not conform in `value` read as Apple's `model`, with paths (`$.data.signedTransactionInfo.price`):
    /// members Apple's model does not have, members of the wrong type, and members every example of Apple's carries
    /// that `value` lacks (`requiredMembers`).
    static func problems(_ value: JSONValue, model: String, path: String = "$") -> [String] {
        guard let members = models[model] else { return ["\(path): Apple has no model \(model)"] }
        guard case .object(let object) = value else { return ["\(path): not an object (\(model))"] }
        var problems: [String] = []
        for key in (requiredMembers[model] ?? []).sorted() where (object[key] ?? .null) == .null {
            problems.append("\(path).\(key): missing (every example of Apple's \(model) carries it)")
        }
        for key in object.keys.sorted() {
            guard let declared = members[key] else {
                problems.append("\(path).\(key): not a member of Apple's \(model)")
                continue
            }
            problems += check(object[key] ?? .null, declared: declared, key: key, path: "\(path).\(key)")
        }
        return problems
    }

    private static func check(_ value: JSONValue, declared: JSONValue, key: String, path: String) -> [String] {
        if value == .null { return [] }  // Apple's members are all optional
        switch declared {
        case .array(let elements):
            guard case .array(let items) = value, let inner = elements.first else { return ["\(path): not an array"] }
            return items.enumerated().flatMap { check($1, declared: inner, key: key, path: "\(path)[\($0)]") }
        case .string("string"):
            guard case .string(let text) = value else { return ["\(path): not a string"] }
            guard let signedModel = signedMembers[key] else { return [] }
            guard let payload = try? CompactJWS.unverifiedPayload(text), let decoded = try? JSONParser.parse(payload)
            else { return ["\(path): not a JWS with a JSON payload"] }
            return problems(decoded, model: signedModel, path: path)
        case .string("integer"):
            guard case .integer = value else { return ["\(path): not an integer"] }
            return []
        case .string("boolean"):
            guard case .bool = value else { return ["\(path): not a boolean"] }
            return []
        case .string("object"):
            guard case .object = value else { return ["\(path): not an object"] }
            return []
        case .string(let model):
            return problems(value, model: model, path: path)
        default:
            return ["\(path): unreadable declaration in apple-models.json"]
        }
    }

    // MARK: The fake over HTTP

    /// One request to the fake's Server API with a valid bearer token; the raw answer.
    static func call(
        _ harness: ServerAPIHarness, _ method: HTTPMethod, _ path: String, body: String = "", sandbox: Bool = false
    ) async throws -> HTTPClientResponse {
        let base = sandbox ? harness.fake.serverAPISandboxURL : harness.fake.serverAPIProductionURL
        let token = try harness.tokens.token(bundleId: ServerAPIHarness.bundleId)
        let request = HTTPClientRequest(
            method: method, url: base + path, body: Array(body.utf8),
            headers: ["Authorization: " + token.authorizationHeader, "Content-Type: application/json"], timeoutMs: 5_000)
        return try await harness.http.send(request).get()
    }

    /// The answer to `path` has HTTP `status` and conforms to Apple's `model`.
    static func expectConforms(
        _ harness: ServerAPIHarness, _ method: HTTPMethod, _ path: String, body: String = "", sandbox: Bool = false,
        status: Int = 200, model: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> JSONValue {
        let answer = try await call(harness, method, path, body: body, sandbox: sandbox)
        #expect(answer.status == status, "\(method.rawValue) \(path): HTTP \(answer.status)", sourceLocation: sourceLocation)
        let value = try JSONParser.parse(answer.body)
        #expect(problems(value, model: model) == [], "\(method.rawValue) \(path)", sourceLocation: sourceLocation)
        return value
    }

    @Test func theCheckerCatchesWhatTheFakeUsedToInvent() throws {
        #expect(!Self.models.isEmpty)
        // Every example answer was read, and the rule found the members Apple always sends.
        #expect(Set(Self.exampleAnswers.values).isSubset(of: Set(Self.requiredMembers.keys)))
        #expect(Self.requiredMembers["HistoryResponse"]
            == ["revision", "hasMore", "bundleId", "appAppleId", "environment", "signedTransactions"])
        #expect(Self.requiredMembers["LastTransactionsItem"]
            == ["status", "originalTransactionId", "signedTransactionInfo", "signedRenewalInfo"])
        // Before this check: the transaction history without `appAppleId`.
        let history = try JSONParser.parse(
            Array(#"{"revision":"r1","hasMore":false,"bundleId":"b","environment":"Sandbox","signedTransactions":[]}"#.utf8))
        #expect(Self.problems(history, model: "HistoryResponse")
            == ["$.appAppleId: missing (every example of Apple's HistoryResponse carries it)"])
        // Before issue 41: the test notification status' attempts under `sendAttemptResults`, and an app transaction
        // with `environment` and `signedDate`.
        let status = try JSONParser.parse(Array(#"{"signedPayload":null,"sendAttemptResults":[]}"#.utf8))
        #expect(Self.problems(status, model: "CheckTestNotificationResponse")
            == [
                "$.sendAttempts: missing (every example of Apple's CheckTestNotificationResponse carries it)",
                "$.signedPayload: missing (every example of Apple's CheckTestNotificationResponse carries it)",
                "$.sendAttemptResults: not a member of Apple's CheckTestNotificationResponse",
            ])
        let app = try JSONParser.parse(Array(#"{"receiptType":"Sandbox","environment":"Sandbox","signedDate":1}"#.utf8))
        #expect(Self.problems(app, model: "AppTransaction").count == 2)
        // Types count: a price as text is not Apple's.
        let priced = try JSONParser.parse(Array(#"{"price":"990","quantity":1,"isUpgraded":"false"}"#.utf8))
        #expect(Self.problems(priced, model: "JWSTransactionDecodedPayload")
            == ["$.isUpgraded: not a boolean", "$.price: not an integer"])
    }

    @Test func everyServerAPIAnswerIsApplesShape() async throws {
        let harness = try ServerAPIHarness()
        let nowMs = SystemTime.wallMilliseconds()
        let customer = "c-conformance"
        harness.fake.register(
            FakeServerTransaction(
                id: "1000000000009001", productId: "gems_100", appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
                customer: customer, offerType: 2, offerIdentifier: "spring-26", offerDiscountType: "PAY_AS_YOU_GO",
                priceMilliunits: 4_990, currency: "EUR", orderId: "ORDER9001", appTransactionId: "705000000000009"))
        harness.fake.register(
            FakeServerTransaction(
                id: "1000000000009002", type: "Non-Consumable", purchaseDateMs: nowMs - 86_400_000,
                revocationDateMs: nowMs - 3_600_000, revocationReason: 1, revocationType: "REFUND_PRORATED",
                revocationPercentage: 50_000, customer: customer, orderId: "ORDER9001"))
        harness.fake.register(
            FakeServerTransaction(
                id: "1000000000009003", productId: "one_month_subscription", type: "Auto-Renewable Subscription",
                purchaseDateMs: nowMs - 86_400_000, expiresDateMs: nowMs + 29 * 86_400_000,
                webOrderLineItemId: "3000000000009003", customer: customer))
        harness.fake.register(FakeAppTransaction(id: "705000000000009", transactionIds: ["1000000000009001"]))

        _ = try await Self.expectConforms(
            harness, .get, "/inApps/v1/transactions/1000000000009001", model: "TransactionInfoResponse")
        _ = try await Self.expectConforms(harness, .get, "/inApps/v2/history/1000000000009001", model: "HistoryResponse")
        _ = try await Self.expectConforms(
            harness, .get, "/inApps/v2/history/1000000000009001?sort=DESCENDING&productId=gems_100",
            model: "HistoryResponse")
        let refunds = try await Self.expectConforms(
            harness, .get, "/inApps/v2/refund/lookup/1000000000009001", model: "RefundHistoryResponse")
        #expect(refunds["signedTransactions"] != .array([]), "the refunded purchase is in the refund history")
        _ = try await Self.expectConforms(harness, .get, "/inApps/v1/lookup/ORDER9001", model: "OrderLookupResponse")
        _ = try await Self.expectConforms(harness, .get, "/inApps/v1/lookup/UNKNOWN1", model: "OrderLookupResponse")
        let statuses = try await Self.expectConforms(
            harness, .get, "/inApps/v1/subscriptions/1000000000009003", model: "StatusResponse")
        #expect(statuses["data"] != .array([]), "the subscription's status is there")
        _ = try await Self.expectConforms(
            harness, .put, "/inApps/v1/subscriptions/extend/1000000000009003",
            body: #"{"extendByDays":3,"extendReasonCode":1,"requestIdentifier":"conformance-1"}"#,
            model: "ExtendRenewalDateResponse")
        _ = try await Self.expectConforms(
            harness, .post, "/inApps/v1/subscriptions/extend/mass",
            body: #"{"extendByDays":3,"extendReasonCode":1,"requestIdentifier":"conformance-2","productId":"one_month_subscription"}"#,
            model: "MassExtendRenewalDateResponse")
        _ = try await Self.expectConforms(
            harness, .get, "/inApps/v1/subscriptions/extend/mass/one_month_subscription/conformance-2",
            model: "MassExtendRenewalDateStatusResponse")
        _ = try await Self.expectConforms(
            harness, .get, "/inApps/v1/transactions/appTransactions/705000000000009", model: "AppTransactionInfoResponse")
        _ = try await Self.expectConforms(
            harness, .get, "/inApps/v1/transactions/appTransactions/1000000000009001", model: "AppTransactionInfoResponse")

        // Apple's errors: every one is an ErrorPayload.
        _ = try await Self.expectConforms(
            harness, .get, "/inApps/v1/transactions/not-an-id", status: 400, model: "ErrorPayload")
        _ = try await Self.expectConforms(
            harness, .get, "/inApps/v1/transactions/1000000000009001", sandbox: true, status: 404, model: "ErrorPayload")
        _ = try await Self.expectConforms(
            harness, .get, "/inApps/v1/transactions/appTransactions/705000000000009", sandbox: true, status: 404,
            model: "ErrorPayload")
        _ = try await Self.expectConforms(
            harness, .get, "/inApps/v1/subscriptions/1000000000009003?status=9", status: 400, model: "ErrorPayload")
        _ = try await Self.expectConforms(
            harness, .put, "/inApps/v1/transactions/1000000000009001/appAccountToken", body: #"{"appAccountToken":"x"}"#,
            status: 400, model: "ErrorPayload")
        _ = try await Self.expectConforms(
            harness, .get, "/inApps/v1/notifications/test/never-given", status: 404, model: "ErrorPayload")

        // Apple answers these with no body.
        for (method, path, body, status) in [
            (HTTPMethod.put, "/inApps/v1/transactions/1000000000009001/appAccountToken",
             #"{"appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138"}"#, 200),
            (.put, "/inApps/v2/transactions/consumption/1000000000009001",
             #"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#, 202),
            (.post, "/inApps/v1/transactions/1000000000009001/finish", "", 200),
        ] {
            let answer = try await Self.call(harness, method, path, body: body)
            #expect(answer.status == status && answer.body.isEmpty, "\(method.rawValue) \(path): \(answer.status)")
        }

        // A test notification (to a URL that answers, whatever it says) and its status, then the notification history.
        harness.fake.notificationURL = harness.fake.baseURL + "/healthz"
        let requested = try await Self.expectConforms(
            harness, .post, "/inApps/v1/notifications/test", model: "SendTestNotificationResponse")
        guard case .string(let token)? = requested["testNotificationToken"] else {
            Issue.record("no testNotificationToken")
            return
        }
        var status = JSONValue.null
        _ = try await eventually {
            status = try await Self.expectConforms(
                harness, .get, "/inApps/v1/notifications/test/\(token)", model: "CheckTestNotificationResponse")
            guard case .array(let attempts)? = status["sendAttempts"] else { return false }
            return !attempts.isEmpty
        }
        guard case .array(let attempts)? = status["sendAttempts"], let attempt = attempts.first else {
            Issue.record("the test notification's status never listed an attempt: \(status)")
            return
        }
        #expect(attempt["attemptDate"] != nil && attempt["sendAttemptResult"] != nil)
        let history = try await Self.expectConforms(
            harness, .post, "/inApps/v1/notifications/history",
            body: #"{"startDate":\#(nowMs - 60_000),"endDate":\#(nowMs + 600_000)}"#,
            model: "NotificationHistoryResponse")
        #expect(history["notificationHistory"] != .array([]))
    }

    /// Every notification type the fake can send, with every optional part filled, checked down to the payloads of
    /// its signed transaction, renewal info and app transaction.
    @Test(arguments: FakeNotificationTypes.all.map { "\($0.type)/\($0.subtype ?? "")" })
    func everyNotificationIsApplesShape(_ kind: String) throws {
        let parts = kind.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let pki = try TestSigningPKI.mint()
        var notification = FakeNotification.make(type: parts[0], subtype: parts[1].isEmpty ? nil : parts[1])
        notification.transaction?.offerType = 5
        notification.transaction?.offerIdentifier = "retention-1"
        notification.transaction?.offerDiscountType = "PAY_AS_YOU_GO"
        notification.transaction?.offerPeriod = "P1M"
        notification.transaction?.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        notification.transaction?.appTransactionId = "705000000000001"
        notification.transaction?.isUpgraded = false
        notification.renewal?.offerType = 2
        notification.renewal?.offerIdentifier = "promo-1"
        notification.renewal?.renewalBillingPlanType = "MONTHLY"
        notification.renewal?.appTransactionId = "705000000000001"
        let signed = try notification.signedPayload(signer: pki.signer)
        let payload = try JSONParser.parse(try CompactJWS.unverifiedPayload(signed))
        #expect(Self.problems(payload, model: "ResponseBodyV2DecodedPayload") == [], "\(kind)")
        // What the fake POSTs: Apple's ResponseBodyV2.
        let body = try JSONParser.parse(Array(#"{"signedPayload":\#(JSONText.quoted(signed))}"#.utf8))
        #expect(Self.problems(body, model: "ResponseBodyV2") == [])
    }

    /// verifyReceipt's answers against the members Apple documents (and those its real answers carry), types
    /// included; the list itself checked against a real answer.
    @Test func verifyReceiptAnswersAreApplesShape() async throws {
        let data = try Data(contentsOf: Self.fixtures.appendingPathComponent("verify-receipt-members.json"))
        guard case .object(let root) = try JSONParser.parse(Array(data)),
            case .object(let documented)? = root["documented"], case .object(let wire)? = root["wire"]
        else {
            Issue.record("verify-receipt-members.json is unreadable")
            return
        }
        var objects: [String: [String: JSONValue]] = [:]
        for (name, members) in documented {
            guard case .object(var all) = members else { continue }
            if case .object(let extra)? = wire[name] {
                for (key, value) in extra { all[key] = value["type"] ?? .null }
            }
            objects[name] = all
        }
        func problems(_ value: JSONValue, _ object: String, _ path: String) -> [String] {
            guard case .object(let members) = value, let declared = objects[object] else { return ["\(path): not \(object)"] }
            var found: [String] = []
            for key in members.keys.sorted() {
                let member = members[key] ?? .null
                switch declared[key] {
                case nil: found.append("\(path).\(key): not a member Apple documents in \(object)")
                case .string("string")?: if case .string = member {} else { found.append("\(path).\(key): not a string") }
                case .string("integer")?: if case .integer = member {} else { found.append("\(path).\(key): not an integer") }
                case .string("boolean")?: if case .bool = member {} else { found.append("\(path).\(key): not a boolean") }
                case .string(let inner)?: found += problems(member, inner, "\(path).\(key)")
                case .array(let elements)?:
                    guard case .array(let items) = member, case .string(let inner)? = elements.first else {
                        found.append("\(path).\(key): not an array")
                        continue
                    }
                    for (index, item) in items.enumerated() { found += problems(item, inner, "\(path).\(key)[\(index)]") }
                default: found.append("\(path).\(key): unreadable declaration")
                }
            }
            return found
        }
        // The list covers a real answer of Apple's.
        let real = try Data(contentsOf: Self.fixtures.appendingPathComponent("verifyreceipt-subscription-42-transactions.json"))
        #expect(problems(try JSONParser.parse(Array(real)), "responseBody", "$") == [])

        let harness = try ServerAPIHarness()
        let receipts = [
            FakeReceipt.valid(
                transactions: [
                    FakeTransaction(id: "1000000000009101", product: "gems_100", quantity: 2),
                    FakeTransaction(id: "1000000000009102", product: "pro", refundedMs: 1_700_000_000_000, cancellationReason: "1"),
                    FakeTransaction(
                        id: "1000000000009103", product: "monthly", originalId: "1000000000009100",
                        purchaseMs: 1_700_000_000_000, expiresMs: 1_702_592_000_000),
                ], subscription: true),
            FakeReceipt.valid(environment: "Sandbox"),
            FakeReceipt.huge(count: 3),
            FakeReceipt.status(21_010, isRetryable: false, environment: "Production"),
            FakeReceipt.status(21_199, isRetryable: true, hyphenatedRetryFlag: true),
        ]
        for (index, receipt) in receipts.enumerated() {
            for url in [harness.fake.productionURL, harness.fake.sandboxURL] {
                let request = HTTPClientRequest(
                    method: .post, url: url, body: Array(#"{"receipt-data":"\#(receipt)"}"#.utf8), timeoutMs: 5_000)
                let answer = try await harness.http.send(request).get()
                #expect(answer.status == 200)
                #expect(problems(try JSONParser.parse(answer.body), "responseBody", "$") == [], "receipt \(index) at \(url)")
            }
        }
    }
}
