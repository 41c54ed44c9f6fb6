@testable import AppStoreServerAPI
import Crypto
import Foundation
@testable import HTTPClient
import ReceiptModel
import ServiceSupport
@_spi(Testing) import SignedData
import Testing

@testable import AppStore

/// Apple's own library test data as an oracle (issue 41 item 5): the files of
/// `apple/app-store-server-library-python`'s `tests/resources` (copied unchanged into
/// `Fixtures/apple-app-store-server-library/`, MIT, source and commit in its README) decoded by this project's
/// decoders, every field compared with the value Apple's own tests expect (the test each case names, in
/// `tests/test_decoded_payloads.py`, `test_payload_verification.py`, `test_xcode_signed_data.py`,
/// `test_api_client.py`).
///
/// How each kind of file is checked, honestly:
/// - `models/*.json` payloads are unsigned JSON: Apple's tests sign them with a throw-away key and decode them with a
///   `LocalTesting` verifier, which skips signature checks. They are decoded here with the same decoders the verifier
///   runs after its signature check (`SignedPayloadDecoder`), and every member of each file is either compared or
///   named as one this project does not read (Advanced Commerce), so a member Apple adds to its samples shows up.
/// - `mock_signed_data/*` are signed by Apple's test CA (`certs/testCA.der`): verified here with that root as the
///   only trusted root, at their `signedDate` (Apple's "online checks off").
/// - `xcode/*` are signed by Xcode's one-certificate StoreKit chain, which Apple's verifier does not check in the
///   Xcode environment either; ours refuses them (never accepted), so their payloads are decoded unverified.
/// - API answers (`models/*Response.json`, error bodies) go through the client's own answer reading
///   (`AppStoreServerAPIClient.interpret`), with the HTTP status Apple's tests give them.
@Suite("Apple's library test data decoded as Apple's tests expect")
struct AppleLibraryTestDataTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/apple-app-store-server-library")

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    static func text(_ name: String) throws -> String {
        String(decoding: try bytes(name), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ name: String) throws -> T {
        try SignedPayloadDecoder.decode(type, from: try bytes(name))
    }

    /// The top-level members of a fixture's JSON object.
    static func members(_ name: String) throws -> Set<String> {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(try bytes(name))) as? [String: Any])
        return Set(object.keys)
    }

    /// Every member of `name` was compared (`compared`) or is one this project deliberately does not read.
    static func expectCovered(
        _ name: String, compared: Set<String>, notRead: Set<String> = [], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let all = try members(name)
        #expect(all.subtracting(compared).subtracting(notRead).isEmpty,
                "\(name): members neither compared nor named as unread: \(all.subtracting(compared).subtracting(notRead).sorted())",
                sourceLocation: sourceLocation)
        #expect(compared.subtracting(all).isEmpty, "\(name): compared members it lacks: \(compared.subtracting(all))",
                sourceLocation: sourceLocation)
    }

    // MARK: Payloads (test_decoded_payloads.py)

    /// `test_app_transaction_decoding`: the environment is `receiptType`; there is no `environment` or `signedDate`
    /// member, and the signing date is `receiptCreationDate`.
    @Test func appTransaction() throws {
        let app = try Self.decode(JWSAppTransactionPayload.self, "models/appTransaction.json")
        #expect(app.receiptType == "LocalTesting")
        #expect(app.environment == .localTesting)
        #expect(app.appAppleId == 531_412)
        #expect(app.bundleId == "com.example")
        #expect(app.applicationVersion == "1.2.3")
        #expect(app.versionExternalIdentifier == 512)
        #expect(app.receiptCreationDate == 1_698_148_900_000)
        #expect(app.originalPurchaseDate == 1_698_148_800_000)
        #expect(app.originalApplicationVersion == "1.1.2")
        #expect(app.deviceVerification == "device_verification_value")
        #expect(app.deviceVerificationNonce == "48ccfa42-7431-4f22-9908-7e88983e105a")
        #expect(app.preorderDate == 1_698_148_700_000)
        #expect(app.appTransactionId == "71134")
        #expect(app.originalPlatform == "iOS")
        #expect(app.signedDate == 1_698_148_900_000 && app.validationDateMs == 1_698_148_900_000)
        try Self.expectCovered(
            "models/appTransaction.json",
            compared: [
                "receiptType", "appAppleId", "bundleId", "applicationVersion", "versionExternalIdentifier",
                "receiptCreationDate", "originalPurchaseDate", "originalApplicationVersion", "deviceVerification",
                "deviceVerificationNonce", "preorderDate", "appTransactionId", "originalPlatform",
            ])
        // The result's `app_transaction`, mapped from it (the environment a `Production` receipt type would give).
        let mapped = AppTransactionMapping.appTransaction(app, environment: .production)
        #expect(mapped.receiptType == "LocalTesting" && mapped.signedDateMs == 1_698_148_900_000)
        #expect(mapped.receiptCreationDateMs == 1_698_148_900_000 && mapped.preorderDateMs == 1_698_148_700_000)
    }

    /// `test_transaction_decoding` and `test_transaction_with_revocation_decoding`, and what the verdict rules make of
    /// them (the transaction a result or event carries).
    @Test(arguments: ["models/signedTransaction.json", "models/signedTransactionWithRevocation.json"])
    func transaction(_ name: String) throws {
        let transaction = try Self.decode(JWSTransactionPayload.self, name)
        let revocationFields = name.hasSuffix("WithRevocation.json")
        #expect(transaction.originalTransactionId == "12345")
        #expect(transaction.transactionId == "23456")
        #expect(transaction.webOrderLineItemId == "34343")
        #expect(transaction.bundleId == "com.example")
        #expect(transaction.productId == "com.example.product")
        #expect(transaction.subscriptionGroupIdentifier == "55555")
        #expect(transaction.originalPurchaseDate == 1_698_148_800_000)
        #expect(transaction.purchaseDate == 1_698_148_900_000)
        #expect(transaction.revocationDate == .value(1_698_148_950_000))
        #expect(transaction.expiresDate == 1_698_149_000_000)
        #expect(transaction.quantity == .value(1))
        #expect(transaction.type == .autoRenewableSubscription)
        #expect(transaction.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(transaction.inAppOwnershipType == .purchased)
        #expect(transaction.signedDate == 1_698_148_900_000)
        #expect(transaction.revocationReason == 1)  // REFUNDED_DUE_TO_ISSUE
        #expect(transaction.offerIdentifier == "abc.123")
        #expect(transaction.isUpgraded == .value(true))
        #expect(transaction.offerType == 1)  // INTRODUCTORY_OFFER
        #expect(transaction.storefront == "USA")
        #expect(transaction.storefrontId == "143441")
        #expect(transaction.transactionReason == .purchase)
        #expect(transaction.environment == .localTesting)
        #expect(transaction.price == 10_990)
        #expect(transaction.currency == "USD")
        #expect(transaction.offerDiscountType == "PAY_AS_YOU_GO")
        #expect(transaction.appTransactionId == "71134")
        #expect(transaction.offerPeriod == "P1Y")
        var compared: Set<String> = [
            "transactionId", "originalTransactionId", "webOrderLineItemId", "bundleId", "productId",
            "subscriptionGroupIdentifier", "purchaseDate", "originalPurchaseDate", "expiresDate", "quantity", "type",
            "appAccountToken", "inAppOwnershipType", "signedDate", "revocationReason", "revocationDate", "isUpgraded",
            "offerType", "offerIdentifier", "environment", "transactionReason", "storefront", "storefrontId", "price",
            "currency", "offerDiscountType", "appTransactionId", "offerPeriod",
        ]
        var notRead: Set<String> = []
        if revocationFields {
            #expect(transaction.revocationType == .refundProrated)
            #expect(transaction.revocationPercentage == .value(50_000))
            compared.formUnion(["revocationType", "revocationPercentage"])
        } else {
            #expect(transaction.revocationType == nil && transaction.revocationPercentage == .absent)
            // Apple's test: billingPlanType MONTHLY and commitmentInfo 3 of 12 periods at 119880, kept unchanged.
            #expect(transaction.billingPlanType == "MONTHLY")
            #expect(transaction.commitmentInfo == .object([
                "billingPeriodNumber": .integer(3), "commitmentExpiresDate": .integer(1_698_150_000_000),
                "commitmentPrice": .integer(119_880), "totalBillingPeriods": .integer(12),
            ]))
            compared.formUnion(["billingPlanType", "commitmentInfo"])
            // The Advanced Commerce API's sale details: this project sells no Advanced Commerce products.
            notRead.insert("advancedCommerceInfo")
        }
        try Self.expectCovered(name, compared: compared, notRead: notRead)

        // The result's (and event's) transaction: Apple's values carried, the refund making it not creditable.
        let carried = VerdictRules.normalize(try SignedTransactionMapping.transaction(transaction), .production, catalog: nil)
        #expect(carried.transactionId == "23456" && carried.originalTransactionId == "12345")
        #expect(carried.creditKey == "apple:production:period:34343")
        #expect(carried.cancellationDateMs == 1_698_148_950_000 && carried.cancellationReason == "1")
        #expect(!carried.creditable && carried.notCreditableReason == .refunded)
        #expect(carried.isUpgraded && carried.productType == .autoRenewable)
        #expect(carried.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(carried.offerType == 1 && carried.offerIdentifier == "abc.123")
        #expect(carried.storefront == "USA" && carried.storefrontId == "143441")
        #expect(carried.price == 10_990 && carried.currency == "USD" && carried.transactionReason == "PURCHASE")
        #expect(carried.offerDiscountType == "PAY_AS_YOU_GO" && carried.offerPeriod == "P1Y")
        #expect(carried.appTransactionId == "71134")
        #expect(carried.revocationPercentage == (revocationFields ? 50_000 : nil))
    }

    /// `test_renewal_info_decoding`.
    @Test func renewalInfo() throws {
        let renewal = try Self.decode(JWSRenewalInfoPayload.self, "models/signedRenewalInfo.json")
        #expect(renewal.expirationIntent == 1)  // CUSTOMER_CANCELLED
        #expect(renewal.originalTransactionId == "12345")
        #expect(renewal.autoRenewProductId == "com.example.product.2")
        #expect(renewal.productId == "com.example.product")
        #expect(renewal.autoRenewStatus == 1)  // ON
        #expect(renewal.isInBillingRetryPeriod == true)
        #expect(renewal.priceIncreaseStatus == 0)  // CUSTOMER_HAS_NOT_RESPONDED
        #expect(renewal.gracePeriodExpiresDate == 1_698_148_900_000)
        #expect(renewal.offerType == 2)  // PROMOTIONAL_OFFER
        #expect(renewal.offerIdentifier == "abc.123")
        #expect(renewal.signedDate == 1_698_148_800_000)
        #expect(renewal.environment == .localTesting)
        #expect(renewal.recentSubscriptionStartDate == 1_698_148_800_000)
        #expect(renewal.renewalDate == 1_698_148_850_000)
        #expect(renewal.renewalPrice == 9_990)
        #expect(renewal.currency == "USD")
        #expect(renewal.offerDiscountType == "PAY_AS_YOU_GO")
        #expect(renewal.eligibleWinBackOfferIds == ["eligible1", "eligible2"])
        #expect(renewal.appTransactionId == "71134")
        #expect(renewal.offerPeriod == "P1Y")
        #expect(renewal.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(renewal.renewalBillingPlanType == "MONTHLY")
        try Self.expectCovered(
            "models/signedRenewalInfo.json",
            compared: [
                "expirationIntent", "originalTransactionId", "autoRenewProductId", "productId", "autoRenewStatus",
                "isInBillingRetryPeriod", "priceIncreaseStatus", "gracePeriodExpiresDate", "offerType",
                "offerIdentifier", "signedDate", "environment", "recentSubscriptionStartDate", "renewalDate",
                "renewalPrice", "currency", "offerDiscountType", "eligibleWinBackOfferIds", "appTransactionId",
                "offerPeriod", "appAccountToken", "renewalBillingPlanType",
            ],
            // Advanced Commerce, and the next commitment plan's details (the event carries renewal_billing_plan_type).
            notRead: ["advancedCommerceInfo", "commitmentInfo"])
    }

    /// `test_notification_decoding` and `test_consumption_request_notification_decoding`.
    @Test(arguments: ["models/signedNotification.json", "models/signedConsumptionRequestNotification.json"])
    func notificationWithData(_ name: String) throws {
        let consumption = name.contains("Consumption")
        let notification = try Self.decode(NotificationPayload.self, name)
        #expect(notification.notificationType == (consumption ? .consumptionRequest : .subscribed))
        #expect(notification.subtype == (consumption ? nil : .initialBuy))
        #expect(notification.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(notification.version == "2.0")
        #expect(notification.signedDate == 1_698_148_900_000)
        #expect(notification.summary == nil && notification.externalPurchaseToken == nil && notification.appData == nil)
        let data = try #require(notification.data)
        #expect(data.environment == .localTesting)
        #expect(data.appAppleId == 41_234)
        #expect(data.bundleId == "com.example")
        #expect(data.bundleVersion == "1.2.3")
        #expect(data.signedTransactionInfo == "signed_transaction_info_value")
        #expect(data.signedRenewalInfo == "signed_renewal_info_value")
        #expect(data.status == 1)  // ACTIVE
        #expect(data.consumptionRequestReason == (consumption ? "UNINTENDED_PURCHASE" : nil))
        try Self.expectCovered(
            name,
            compared: Set(["notificationType", "notificationUUID", "data", "version", "signedDate"])
                .union(consumption ? [] : ["subtype"]))
    }

    /// `test_summary_notification_decoding`: the summary is kept as Apple's object.
    @Test func summaryNotification() throws {
        let notification = try Self.decode(NotificationPayload.self, "models/signedSummaryNotification.json")
        #expect(notification.notificationType == .renewalExtension && notification.subtype == .summary)
        #expect(notification.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(notification.version == "2.0" && notification.signedDate == 1_698_148_900_000)
        #expect(notification.data == nil && notification.externalPurchaseToken == nil)
        let summary = try #require(notification.summary)
        #expect(summary["environment"] == .string("LocalTesting"))
        #expect(summary["appAppleId"] == .integer(41_234))
        #expect(summary["bundleId"] == .string("com.example"))
        #expect(summary["productId"] == .string("com.example.product"))
        #expect(summary["requestIdentifier"] == .string("efb27071-45a4-4aca-9854-2a1e9146f265"))
        #expect(summary["storefrontCountryCodes"] == .array([.string("CAN"), .string("USA"), .string("MEX")]))
        #expect(summary["succeededCount"] == .integer(5) && summary["failedCount"] == .integer(2))
    }

    /// `test_external_purchase_token_notification_decoding` (and its sandbox twin): no environment member; Apple's
    /// libraries take a `SANDBOX` prefix of the id as the sandbox.
    @Test(arguments: [
        ("models/signedExternalPurchaseTokenNotification.json", "b2158121-7af9-49d4-9561-1f588205523e"),
        ("models/signedExternalPurchaseTokenSandboxNotification.json", "SANDBOX_b2158121-7af9-49d4-9561-1f588205523e"),
    ])
    func externalPurchaseTokenNotification(_ name: String, id: String) throws {
        let notification = try Self.decode(NotificationPayload.self, name)
        #expect(notification.notificationType == .externalPurchaseToken && notification.subtype == .unreported)
        #expect(notification.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(notification.version == "2.0" && notification.signedDate == 1_698_148_900_000)
        #expect(notification.data == nil && notification.summary == nil)
        let token = try #require(notification.externalPurchaseToken)
        #expect(token["externalPurchaseId"] == .string(id))
        #expect(token["tokenCreationDate"] == .integer(1_698_148_950_000))
        #expect(token["appAppleId"] == .integer(55_555))
        #expect(token["bundleId"] == .string("com.example"))
    }

    /// `test_rescind_consent_notification_decoding`: `appData` with its own environment and the app transaction.
    @Test func rescindConsentNotification() throws {
        let notification = try Self.decode(NotificationPayload.self, "models/signedRescindConsentNotification.json")
        #expect(notification.notificationType == .rescindConsent && notification.subtype == nil)
        #expect(notification.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(notification.version == "2.0" && notification.signedDate == 1_698_148_900_000)
        #expect(notification.data == nil && notification.summary == nil && notification.externalPurchaseToken == nil)
        let appData = try #require(notification.appData)
        #expect(appData["environment"] == .string("LocalTesting"))
        #expect(appData["appAppleId"] == .integer(41_234))
        #expect(appData["bundleId"] == .string("com.example"))
        #expect(appData["signedAppTransactionInfo"] == .string("signed_app_transaction_info_value"))
        try Self.expectCovered(
            "models/signedRescindConsentNotification.json",
            compared: ["notificationType", "notificationUUID", "appData", "version", "signedDate"])
    }

    // MARK: Signed by Apple's test CA (test_payload_verification.py)

    /// `test_transaction_info_decoding`, `test_renewal_info_decoding`, `test_app_store_server_notification_decoding`:
    /// verified with Apple's test root as the only trusted root, at their `signedDate`.
    @Test func signedByApplesTestCertificateAuthority() throws {
        let root = try Certificate.load(path: Self.directory.appendingPathComponent("certs/testCA.der").path)
        let verifier = AppleSignedDataVerifier(trustedRoots: root)
        let transaction = try verifier.verify(
            try Self.text("mock_signed_data/transactionInfo"), as: JWSTransactionPayload.self) { $0.signedDate }
        #expect(transaction.payload.environment == .sandbox && transaction.payload.bundleId == "com.example")
        #expect(transaction.payload.signedDate == 1_672_956_154_000)
        let renewal = try verifier.verify(
            try Self.text("mock_signed_data/renewalInfo"), as: JWSRenewalInfoPayload.self) { $0.signedDate }
        #expect(renewal.payload.environment == .sandbox && renewal.payload.signedDate == 1_672_956_154_000)
        let notification = try verifier.verify(
            try Self.text("mock_signed_data/testNotification"), as: NotificationPayload.self) { $0.signedDate }
        #expect(notification.payload.notificationType == .test)
        #expect(notification.payload.notificationUUID == "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        #expect(notification.payload.data?.environment == .sandbox && notification.payload.data?.appAppleId == 1_234)
        #expect(notification.payload.data?.bundleId == "com.example")
        // `test_wrong_bundle_id_for_server_notification`: Apple's verifier checks its chain at the current time and
        // then refuses the bundle (`com.example.wrong`); it carries no `signedDate`, so ours refuses it sooner: there
        // is no time to validate the chain at.
        let undated = #expect(throws: SignedDataError.self) {
            try verifier.verify(try Self.text("mock_signed_data/wrongBundleId"))
        }
        #expect(undated?.kind == .missingSignedDate)
        let wrong = try SignedPayloadDecoder.decode(
            NotificationPayload.self, from: try CompactJWS.unverifiedPayload(try Self.text("mock_signed_data/wrongBundleId")))
        #expect(wrong.data?.bundleId == "com.example.wrong")
        // `test_missing_x5c_header`: no x5c, no verification.
        #expect(throws: SignedDataError.self) {
            try verifier.verify(try Self.text("mock_signed_data/missingX5CHeaderClaim"))
        }
        // The same data under the real Apple root: refused (it is Apple's test chain, not the App Store's).
        let real = try AppleSignedDataVerifier(
            rootCertificatePaths: [try #require(AppleRootCertificates.defaultSignedDataRootsPath)])
        let untrusted = #expect(throws: SignedDataError.self) {
            try real.verify(try Self.text("mock_signed_data/transactionInfo"))
        }
        #expect(untrusted?.kind == .untrustedChain)
    }

    // MARK: Signed by Xcode (test_xcode_signed_data.py)

    /// `test_xcode_signed_app_transaction`, `test_xcode_signed_transaction`, `test_xcode_signed_renewal_info`.
    @Test func signedByXcode() throws {
        func payload<T: Decodable>(_ type: T.Type, _ name: String) throws -> T {
            try SignedPayloadDecoder.decode(type, from: try CompactJWS.unverifiedPayload(try Self.text(name)))
        }
        let bundleId = "com.example.naturelab.backyardbirds.example"
        let app = try payload(JWSAppTransactionPayload.self, "xcode/xcode-signed-app-transaction")
        #expect(app.appAppleId == nil && app.bundleId == bundleId && app.applicationVersion == "1")
        #expect(app.versionExternalIdentifier == nil)
        #expect(app.originalPurchaseDate == -62_135_769_600_000)
        #expect(app.originalApplicationVersion == "1")
        #expect(app.deviceVerification == "cYUsXc53EbYc0pOeXG5d6/31LGHeVGf84sqSN0OrJi5u/j2H89WWKgS8N0hMsMlf")
        #expect(app.deviceVerificationNonce == "48c8b92d-ce0d-4229-bedf-e61b4f9cfc92")
        #expect(app.preorderDate == nil)
        #expect(app.receiptType == "Xcode" && app.environment == .xcode)
        // Xcode writes fractional milliseconds; the fraction is dropped.
        #expect(app.receiptCreationDate == 1_697_680_122_257)

        let transaction = try payload(JWSTransactionPayload.self, "xcode/xcode-signed-transaction")
        #expect(transaction.originalTransactionId == "0" && transaction.transactionId == "0")
        #expect(transaction.webOrderLineItemId == "0" && transaction.bundleId == bundleId)
        #expect(transaction.productId == "pass.premium" && transaction.subscriptionGroupIdentifier == "6F3A93AB")
        #expect(transaction.purchaseDate == 1_697_679_936_049 && transaction.originalPurchaseDate == 1_697_679_936_049)
        #expect(transaction.expiresDate == 1_700_358_336_049 && transaction.quantity == .value(1))
        #expect(transaction.type == .autoRenewableSubscription && transaction.appAccountToken == nil)
        #expect(transaction.inAppOwnershipType == .purchased && transaction.signedDate == 1_697_679_936_056)
        #expect(transaction.revocationReason == nil && transaction.revocationDate == .absent)
        #expect(transaction.isUpgraded == .value(false))
        #expect(transaction.offerType == 1 && transaction.offerIdentifier == nil)
        #expect(transaction.environment == .xcode)
        #expect(transaction.storefront == "USA" && transaction.storefrontId == "143441")
        #expect(transaction.transactionReason == .purchase)

        let renewal = try payload(JWSRenewalInfoPayload.self, "xcode/xcode-signed-renewal-info")
        #expect(renewal.expirationIntent == nil && renewal.originalTransactionId == "0")
        #expect(renewal.autoRenewProductId == "pass.premium" && renewal.productId == "pass.premium")
        #expect(renewal.autoRenewStatus == 1 && renewal.isInBillingRetryPeriod == nil)
        #expect(renewal.priceIncreaseStatus == nil && renewal.gracePeriodExpiresDate == nil)
        #expect(renewal.offerType == nil && renewal.offerIdentifier == nil)
        #expect(renewal.signedDate == 1_697_679_936_711 && renewal.environment == .xcode)
        #expect(renewal.recentSubscriptionStartDate == 1_697_679_936_049 && renewal.renewalDate == 1_700_358_336_049)

        // Apple's verifier skips the checks for Xcode data; ours never accepts it (its chain is one self-signed
        // certificate, no App Store root).
        let verifier = try AppleSignedDataVerifier(
            rootCertificatePaths: [try #require(AppleRootCertificates.defaultSignedDataRootsPath)])
        for name in ["xcode/xcode-signed-app-transaction", "xcode/xcode-signed-transaction", "xcode/xcode-signed-renewal-info"] {
            #expect(throws: SignedDataError.self, "\(name)") { try verifier.verify(try Self.text(name)) }
        }
    }

    // MARK: API answers (test_api_client.py)

    static func answer<Value: Decodable>(
        _ type: Value.Type, _ name: String, status: Int = 200, endpoint: ServerAPIEndpoint = .transactionInfo
    ) throws -> Result<Value, ServerAPIError> {
        AppStoreServerAPIClient.interpret(
            HTTPClientResponse(status: status, body: try bytes(name)), key: ServerAPIPacing.Key(endpoint, .production),
            nowWallMs: 1_767_225_600_000)
    }

    @Test func apiAnswersDecodeAsApplesTestsExpect() throws {
        let info = try Self.answer(TransactionInfoResponse.self, "models/transactionInfoResponse.json").get()
        #expect(info.signedTransactionInfo == "signed_transaction_info_value")

        let history = try Self.answer(HistoryResponse.self, "models/transactionHistoryResponse.json").get()
        #expect(history.revision == "revision_output" && history.hasMore)
        #expect(history.bundleId == "com.example" && history.appAppleId == 323_232)
        #expect(history.environment == "LocalTesting")
        #expect(history.signedTransactions == ["signed_transaction_value", "signed_transaction_value2"])
        // `test_get_transaction_history_with_unknown_environment`: an environment Apple adds later is kept as it is.
        let unknown = try Self.answer(HistoryResponse.self, "models/transactionHistoryResponseWithMalformedEnvironment.json")
            .get()
        #expect(unknown.environment == "LocalTestingxxx")
        // `..._with_malformed_app_apple_id`: Apple's client raises; ours calls the answer unreadable (retried), never
        // an empty history.
        let malformed = Self.answerError(
            HistoryResponse.self, "models/transactionHistoryResponseWithMalformedAppAppleId.json")
        #expect(malformed?.kind == .retryable)

        let statuses = try Self.answer(
            SubscriptionStatusesResponse.self, "models/getAllSubscriptionStatusesResponse.json").get()
        #expect(statuses.environment == "LocalTesting" && statuses.bundleId == "com.example")
        #expect(statuses.data.map(\.subscriptionGroupIdentifier) == ["sub_group_one", "sub_group_two"])
        let groupOne = try #require(statuses.data.first).lastTransactions
        #expect(groupOne.map(\.status) == [1, 5])
        #expect(groupOne.map(\.originalTransactionId) == ["3749183", "5314314134"])
        #expect(groupOne.map(\.signedTransactionInfo) == ["signed_transaction_one", "signed_transaction_two"])
        #expect(groupOne.map(\.signedRenewalInfo) == ["signed_renewal_one", "signed_renewal_two"])
        let groupTwo = try #require(statuses.data.last).lastTransactions
        #expect(groupTwo.map(\.status) == [2] && groupTwo.map(\.originalTransactionId) == ["3413453"])
        #expect(groupTwo.map(\.signedTransactionInfo) == ["signed_transaction_three"])
        #expect(groupTwo.map(\.signedRenewalInfo) == ["signed_renewal_three"])

        let refunds = try Self.answer(RefundHistoryResponse.self, "models/getRefundHistoryResponse.json").get()
        #expect(refunds.signedTransactions == ["signed_transaction_one", "signed_transaction_two"])
        #expect(refunds.revision == "revision_output" && refunds.hasMore)

        let order = try Self.answer(OrderLookupResponse.self, "models/lookupOrderIdResponse.json").get()
        #expect(order.status == 1)  // INVALID
        #expect(order.signedTransactions == ["signed_transaction_one", "signed_transaction_two"])

        let app = try Self.answer(AppTransactionInfoResponse.self, "models/appTransactionInfoResponse.json").get()
        #expect(app.signedAppTransactionInfo == "signed_app_transaction_info_value")

        let requested = try Self.answer(
            SendTestNotificationResponse.self, "models/requestTestNotificationResponse.json").get()
        #expect(requested.testNotificationToken == "ce3af791-365e-4c60-841b-1674b43c1609")

        // `test_get_test_notification_status`: the attempts are `sendAttempts` (issue 41 item 6).
        let test = try Self.answer(
            CheckTestNotificationResponse.self, "models/getTestNotificationStatusResponse.json").get()
        #expect(test.signedPayload == "signed_payload")
        #expect(test.sendAttempts == [
            SendAttempt(attemptDate: 1_698_148_900_000, sendAttemptResult: "NO_RESPONSE"),
            SendAttempt(attemptDate: 1_698_148_950_000, sendAttemptResult: "SUCCESS"),
        ])

        // `test_get_notification_history`: each entry's attempts are `sendAttempts` too.
        let notifications = try Self.answer(
            NotificationHistoryResponse.self, "models/getNotificationHistoryResponse.json").get()
        #expect(notifications.paginationToken == "57715481-805a-4283-8499-1c19b5d6b20a" && notifications.hasMore)
        #expect(notifications.notificationHistory == [
            NotificationHistoryItem(
                signedPayload: "signed_payload_one",
                sendAttempts: [
                    SendAttempt(attemptDate: 1_698_148_900_000, sendAttemptResult: "NO_RESPONSE"),
                    SendAttempt(attemptDate: 1_698_148_950_000, sendAttemptResult: "SUCCESS"),
                ]),
            NotificationHistoryItem(
                signedPayload: "signed_payload_two",
                sendAttempts: [SendAttempt(attemptDate: 1_698_148_800_000, sendAttemptResult: "CIRCULAR_REDIRECT")]),
        ])

        let extended = try Self.answer(
            ExtendRenewalDateResponse.self, "models/extendSubscriptionRenewalDateResponse.json").get()
        #expect(extended.originalTransactionId == "2312412" && extended.webOrderLineItemId == "9993")
        #expect(extended.success == true && extended.effectiveDate == 1_698_148_900_000)
        let mass = try Self.answer(
            MassExtendRenewalDateResponse.self, "models/extendRenewalDateForAllActiveSubscribersResponse.json").get()
        #expect(mass.requestIdentifier == "758883e8-151b-47b7-abd0-60c4d804c2f5")
        let massStatus = try Self.answer(
            MassExtendRenewalDateStatusResponse.self,
            "models/getStatusOfSubscriptionRenewalDateExtensionsResponse.json"
        ).get()
        #expect(massStatus.requestIdentifier == "20fba8a0-2b80-4a7d-a17f-85c1854727f8")
        #expect(massStatus.complete == true && massStatus.completeDate == 1_698_148_900_000)
        #expect(massStatus.succeededCount == 30 && massStatus.failedCount == 2)
    }

    static func answerError<Value: Decodable>(
        _ type: Value.Type, _ name: String, status: Int = 200
    ) -> ServerAPIError? {
        guard case .failure(let error) = try? answer(type, name, status: status) else { return nil }
        return error
    }

    /// `test_api_error`, `test_api_too_many_requests`, `test_unknown_error`, `test_get_app_transaction_info_*`,
    /// `test_invalid_app_account_token_error`, `test_family_transaction_not_supported_error`,
    /// `test_transaction_id_not_original_transaction_id_error`: Apple's code and message read, and classified.
    @Test(arguments: [
        ("models/apiException.json", 500, 5_000_000, "An unknown error occurred.", ServerAPIError.Kind.retryable),
        ("models/apiTooManyRequestsException.json", 429, 4_290_000, "Rate limit exceeded.", .rateLimited),
        ("models/apiUnknownError.json", 400, 9_990_000, "Testing error.", .invalidRequest),
        ("models/invalidTransactionIdError.json", 400, 4_000_006, "Invalid transaction id.", .invalidTransactionId),
        ("models/appTransactionDoesNotExistError.json", 404, 4_040_019, "No AppTransaction exists for the customer.",
         .notFound),
        ("models/transactionIdNotFoundError.json", 404, 4_040_010, "Transaction id not found.", .notFound),
        ("models/invalidAppAccountTokenUUIDError.json", 400, 4_000_183,
         "Invalid request. The app account token field must be a valid UUID.", .invalidRequest),
        ("models/familyTransactionNotSupportedError.json", 400, 4_000_185,
         "Invalid request. Family Sharing transactions aren't supported by this endpoint.", .invalidRequest),
        ("models/transactionIdNotOriginalTransactionId.json", 400, 4_000_187,
         "Invalid request. The transaction ID provided is not an original transaction ID.", .invalidRequest),
    ])
    func apiErrors(_ name: String, status: Int, code: Int, message: String, kind: ServerAPIError.Kind) throws {
        let body = try JSONDecoder().decode(ServerAPIErrorBody.self, from: Data(try Self.bytes(name)))
        #expect(body.errorCode == code && body.errorMessage == message)
        let error = try #require(Self.answerError(TransactionInfoResponse.self, name, status: status))
        #expect(error.kind == kind && error.httpStatus == status)
        #expect(error.errorCode == (status == 429 ? 4_290_000 : code))
        if status != 429 { #expect(error.message.contains(message)) }
    }
}
