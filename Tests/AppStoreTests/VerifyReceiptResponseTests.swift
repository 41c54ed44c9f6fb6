import Foundation
@testable import HTTPClient
import ReceiptModel
import Testing

@testable import AppStore

@Suite struct VerifyReceiptResponseTests {
    static func fixture(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
        return Array(try Data(contentsOf: url))
    }

    static func decode(_ json: String) throws -> VerifyReceiptResponse {
        try VerifyReceiptResponse.decode(Array(json.utf8))
    }

    @Test func decodesTheRealSubscriptionResponseWith42Transactions() throws {
        let response = try VerifyReceiptResponse.decode(Self.fixture("verifyreceipt-subscription-42-transactions.json"))
        #expect(response.status == 0)
        #expect(response.environment == "Production")
        #expect(response.bundleId == "com.some.thing")
        #expect(response.inApp.count == 42)
        #expect(response.latestReceiptInfo.count == 1)
        let first = try #require(response.inApp.first)
        #expect(first.transactionId == "1000000739289145")
        #expect(first.originalTransactionId == "1000000723811158")
        #expect(first.productId == "one_year_subscription")
        #expect(first.quantity == 1)
        #expect(first.purchaseDateMs == 1_602_065_218_000)
        #expect(first.expiresDateMs == 1_602_068_818_000)
        #expect(first.webOrderLineItemId == "1000000056284415")
        #expect(first.isTrialPeriod == false)
        #expect(first.cancellationDateMs == nil)
        let latest = try #require(response.latestReceiptInfo.first)
        #expect(latest.transactionId == "1000000767477815")
        #expect(latest.inAppOwnershipType == "PURCHASED")
    }

    /// The purchase-identity rule checked on Apple's own data: one subscription (one original transaction id) renewed
    /// 42 times has 42 billing periods (42 distinct web order line item ids), so 42 credit keys, each a period.
    @Test func theRealSubscriptionHasOneCreditKeyPerBillingPeriod() throws {
        let response = try VerifyReceiptResponse.decode(Self.fixture("verifyreceipt-subscription-42-transactions.json"))
        #expect(Set(response.inApp.compactMap(\.originalTransactionId)) == ["1000000723811158"])
        let verdict = VerdictRules.evaluate(
            AppleReceipt(
                environment: .production, bundleId: response.bundleId, inApp: response.inApp,
                latestReceiptInfo: response.latestReceiptInfo),
            expectations: VerificationExpectations(), policy: VerdictPolicy(allowedBundleIds: ["com.some.thing"]))
        let keys = verdict.transactions.map(\.creditKey)
        #expect(verdict.outcome == .verified && keys.count == 42)
        #expect(Set(keys).count == 42)
        #expect(keys.allSatisfy { $0.hasPrefix("apple:production:period:") })
        #expect(keys.first == "apple:production:period:1000000056284415")
    }

    @Test func decodesTheAbridgedSandboxSuccessBody() throws {
        let response = try Self.decode(
            """
            {"status":0,"environment":"Sandbox",
             "receipt":{"receipt_type":"ProductionSandbox","adam_id":0,"app_item_id":0,"bundle_id":"com.example.game",
               "application_version":"36","download_id":0,"receipt_creation_date_ms":"1604851257000",
               "request_date_ms":"1628954383379","original_application_version":"1.0",
               "in_app":[{"quantity":"1","product_id":"gems_100","transaction_id":"1000000460004095",
                 "original_transaction_id":"1000000460004095","purchase_date":"2018-10-19 10:50:48 Etc/GMT",
                 "purchase_date_ms":"1539946248000","original_purchase_date_ms":"1539946248000",
                 "is_trial_period":"false","in_app_ownership_type":"PURCHASED"}]}}
            """)
        #expect(response.environment == "Sandbox")
        #expect(
            response.inApp == [
                AppleTransaction(
                    TransactionFields(
                        transactionId: "1000000460004095", originalTransactionId: "1000000460004095",
                        productId: "gems_100", quantity: 1, purchaseDateMs: 1_539_946_248_000,
                        inAppOwnershipType: "PURCHASED", isTrialPeriod: false))
            ])
    }

    @Test func acceptsNumbersWhereStringsAreDocumentedAndStringsWhereNumbersAre() throws {
        let response = try Self.decode(
            """
            {"status":"0","receipt":{"bundle_id":"b","in_app":[{"quantity":2,"product_id":"p",
              "transaction_id":1000000460004095,"original_transaction_id":1000000460004000,
              "purchase_date_ms":1539946248000,"expires_date_ms":"1539946249000.0","is_trial_period":true,
              "cancellation_date_ms":"1539946250000","cancellation_reason":0,"web_order_line_item_id":77}]}}
            """)
        let transaction = try #require(response.inApp.first)
        #expect(response.status == 0)
        #expect(transaction.transactionId == "1000000460004095")
        #expect(transaction.originalTransactionId == "1000000460004000")
        #expect(transaction.quantity == 2)
        #expect(transaction.purchaseDateMs == 1_539_946_248_000)
        #expect(transaction.expiresDateMs == 1_539_946_249_000)
        #expect(transaction.isTrialPeriod)
        #expect(transaction.cancellationDateMs == 1_539_946_250_000)
        #expect(transaction.cancellationReason == "0")
        #expect(transaction.webOrderLineItemId == "77")
    }

    @Test(arguments: [
        (#"{"status":21199,"is_retryable":true}"#, true),
        (#"{"status":21199,"is-retryable":true}"#, true),
        (#"{"status":21199,"is_retryable":1}"#, true),
        (#"{"status":21199,"is_retryable":"true"}"#, true),
        (#"{"status":21199,"is_retryable":"0"}"#, false),
        (#"{"environment":"Production","status":21010,"is_retryable":false}"#, false),
    ])
    func readsBothSpellingsOfTheRetryFlag(json: String, expected: Bool) throws {
        #expect(try Self.decode(json).isRetryable == expected)
    }

    @Test func errorBodiesNeedOnlyAStatus() throws {
        let response = try Self.decode(#"{"status":21007}"#)
        #expect(response.status == 21007)
        #expect(response.environment == nil)
        #expect(response.isRetryable == nil)
        #expect(response.inApp.isEmpty)
    }

    @Test func ignoresUnknownFieldsAndMissingOptionalObjects() throws {
        let response = try Self.decode(
            #"{"status":0,"brand_new_field":{"x":[1,2]},"receipt":{"bundle_id":"b","in_app":[]},"#
                + #""pending_renewal_info":null}"#
        )
        #expect(response.bundleId == "b")
        #expect(response.inApp.isEmpty)
        #expect(response.latestReceiptInfo.isEmpty)
        let bare = try Self.decode(#"{"status":0}"#)
        #expect(bare.bundleId == nil)
    }

    @Test func decodesTheFlatIOS6ReceiptShape() throws {
        let response = try Self.decode(
            """
            {"status":0,"receipt":{"original_purchase_date_pst":"2012-04-30 08:05:55 America/Los_Angeles",
             "original_transaction_id":"1000000046178817","original_purchase_date_ms":"1335798355868",
             "transaction_id":"1000000046178817","quantity":"1","product_id":"com.example.game.gems",
             "bvrs":"20120427","item_id":"521129812","bid":"com.example.game","unique_identifier":"0000b0",
             "purchase_date_ms":"1335798355868","purchase_date":"2012-04-30 15:05:55 Etc/GMT"}}
            """)
        #expect(response.isLegacyReceipt)
        #expect(response.bundleId == "com.example.game")
        #expect(response.inApp.map(\.transactionId) == ["1000000046178817"])
        #expect(response.inApp.first?.productId == "com.example.game.gems")
    }

    @Test func readsIOS6ExpiredSubscriptionInfoAsASingleObject() throws {
        let response = try Self.decode(
            """
            {"status":21006,"receipt":{"bid":"b","transaction_id":"1","product_id":"sub","purchase_date_ms":"10",
             "expires_date":"20"},
             "latest_expired_receipt_info":{"transaction_id":"2","product_id":"sub","purchase_date_ms":"30",
             "expires_date":"40"}}
            """)
        #expect(response.status == 21006)
        #expect(response.inApp.first?.expiresDateMs == 20)
        #expect(response.latestReceiptInfo.map(\.transactionId) == ["2"])
    }

    @Test func refusesBodiesThatAreNotJSONObjects() {
        #expect(throws: VerifyReceiptDecodingError.empty) { try VerifyReceiptResponse.decode([]) }
        #expect(throws: VerifyReceiptDecodingError.empty) { try VerifyReceiptResponse.decode(Array(" \n".utf8)) }
        #expect(throws: VerifyReceiptDecodingError.notJSON) {
            try Self.decode("<html><body>503 Service Unavailable</body></html>")
        }
        #expect(throws: VerifyReceiptDecodingError.notJSON) { try Self.decode(#"{"status": 0"#) }
        #expect(throws: VerifyReceiptDecodingError.missingStatus) { try Self.decode(#"{"environment":"Sandbox"}"#) }
        #expect(throws: VerifyReceiptDecodingError.missingStatus) { try Self.decode(#"{"status":"abc"}"#) }
    }

    @Test func unusableTransactionsAreSkippedAndCountedNotFatal() throws {
        let response = try Self.decode(
            #"""
            {"status":0,"receipt":{"bundle_id":"b","in_app":[
                {"product_id":"p"},
                {"transaction_id":"","product_id":"p","purchase_date_ms":"1"},
                {"transaction_id":"11","purchase_date_ms":"1"},
                {"transaction_id":"12","product_id":"p"},
                {"transaction_id":"16","product_id":"","purchase_date_ms":"1"},
                "not an object",
                {"transaction_id":"13","product_id":"p","purchase_date_ms":"1"}]},
             "latest_receipt_info":[{"transaction_id":"14","product_id":"s"},
                {"transaction_id":"15","product_id":"s","purchase_date_ms":"2"}]}
            """#)
        #expect(response.inApp.map(\.transactionId) == ["13"])
        #expect(response.latestReceiptInfo.map(\.transactionId) == ["15"])
        #expect(response.unusableTransactionCount == 7)
        #expect(response.unusableTransactionIds == ["11", "12", "16", "14"])
    }

    @Test func aSingleUnusableLatestReceiptInfoObjectIsSkipped() throws {
        let response = try Self.decode(
            #"{"status":0,"receipt":{"bundle_id":"b","in_app":[]},"latest_receipt_info":{"transaction_id":"9"}}"#)
        #expect(response.latestReceiptInfo.isEmpty)
        #expect(response.unusableTransactionIds == ["9"])
    }

    @Test func aValidStatusWithTransactionListsOfTheWrongShapeIsUnusable() {
        #expect(throws: VerifyReceiptDecodingError.self) {
            try Self.decode(#"{"status":0,"receipt":{"bundle_id":"b","in_app":"none"}}"#)
        }
    }

    @Test func anUnusableExpectedTransactionIsAnInvalidReceiptOthersAreJudgedWithoutIt() throws {
        let response = try Self.decode(
            #"""
            {"status":0,"receipt":{"bundle_id":"com.example.game","in_app":[
                {"transaction_id":"21","product_id":"gems_100"},
                {"transaction_id":"22","product_id":"gems_100","purchase_date_ms":"1000"}]}}
            """#)
        let receipt = AppleReceipt(
            environment: .production, bundleId: response.bundleId, inApp: response.inApp,
            latestReceiptInfo: response.latestReceiptInfo,
            unusableTransactionCount: response.unusableTransactionCount,
            unusableTransactionIds: response.unusableTransactionIds)
        let policy = VerdictPolicy(allowedBundleIds: ["com.example.game"], sandboxPolicy: .accept)
        func evaluate(_ id: String?) -> Verdict {
            VerdictRules.evaluate(
                receipt, expectations: VerificationExpectations(transactionId: id, productId: nil), policy: policy)
        }
        #expect(evaluate("21").reason == .invalidReceipt)
        #expect(evaluate("21").outcome == .rejected)
        #expect(evaluate("22").outcome == .verified)
        #expect(evaluate("23").reason == .transactionNotFound)
        #expect(evaluate(nil).transactions.map(\.transactionId) == ["22"])
    }

    @Test func aReceiptOfOnlyUnusableTransactionsIsAnInvalidReceipt() throws {
        let response = try Self.decode(
            #"{"status":0,"receipt":{"bundle_id":"com.example.game","in_app":[{"transaction_id":"31"}]}}"#)
        let receipt = AppleReceipt(
            environment: .production, bundleId: response.bundleId, inApp: response.inApp,
            unusableTransactionCount: response.unusableTransactionCount,
            unusableTransactionIds: response.unusableTransactionIds)
        let verdict = VerdictRules.evaluate(
            receipt, expectations: VerificationExpectations(transactionId: nil, productId: nil),
            policy: VerdictPolicy(allowedBundleIds: ["com.example.game"], sandboxPolicy: .accept))
        #expect(verdict.reason == .invalidReceipt)
    }

    @Test func theBackendPassesSkippedTransactionsOnAsAReceipt() {
        let body = #"{"status":0,"receipt":{"bundle_id":"b","in_app":[{"transaction_id":"41","product_id":"p"}]}}"#
        let interpretation = VerifyReceiptBackend.interpret(
            .success(HTTPClientResponse(status: 200, body: Array(body.utf8))), environment: .production, calls: 1)
        guard case .receipt(let receipt) = interpretation.backendAnswer.result else {
            Issue.record("not a receipt: \(interpretation.backendAnswer)")
            return
        }
        #expect(receipt.unusableTransactionIds == ["41"])
        #expect(receipt.inApp.isEmpty)
    }

    @Test func anErrorStatusWithAGarbledReceiptStillDecodes() throws {
        let response = try Self.decode(#"{"status":21010,"receipt":{"in_app":[{"product_id":"p"}]}}"#)
        #expect(response.status == 21010)
    }

    @Test func decodesAFiveMegabyteResponse() throws {
        var transactions: [String] = []
        var index = 0
        var size = 0
        while size < 5_000_000 {
            let entry = """
                {"quantity":"1","product_id":"one_month_subscription","transaction_id":"\(1_000_000_000_000 + index)",
                "original_transaction_id":"1000000723811158","purchase_date":"2021-01-20 13:00:00 Etc/GMT",
                "purchase_date_ms":"\(1_611_147_600_000 + Int64(index))",
                "purchase_date_pst":"2021-01-20 05:00:00 America/Los_Angeles",
                "expires_date_ms":"1611147900000","web_order_line_item_id":"\(2_000_000 + index)",
                "is_trial_period":"false","is_in_intro_offer_period":"false","in_app_ownership_type":"PURCHASED"}
                """
            transactions.append(entry)
            size += entry.utf8.count + 1
            index += 1
        }
        let inApp = transactions.joined(separator: ",")
        let body =
            #"{"status":0,"environment":"Production","receipt":{"bundle_id":"com.example.game","in_app":["#
            + inApp + #"]},"latest_receipt_info":["# + inApp + "]}"
        #expect(body.utf8.count > 10_000_000)
        let response = try Self.decode(body)
        #expect(response.inApp.count == index)
        #expect(response.latestReceiptInfo.count == index)
        #expect(response.inApp.last?.transactionId == String(1_000_000_000_000 + index - 1))
    }

    @Test(
        "the body's environment is Production or Sandbox in any ASCII case, nothing else",
        arguments: [
            ("Production", AppStoreEnvironment.production), ("production", .production), ("PRODUCTION", .production),
            ("pRoDuCtIoN", .production), ("Sandbox", .sandbox), ("SANDBOX", .sandbox), ("sandbox", .sandbox),
        ] as [(String, AppStoreEnvironment)])
    func environmentNamed(name: String, environment: AppStoreEnvironment) {
        #expect(VerifyReceiptBackend.environment(named: name) == environment)
    }

    @Test(
        "a name that is not one of them is no environment",
        arguments: [
            "", "Prod", "Productio", "Productionn", " Production", "Production ", "Sandbox\u{0}", "ſandbox",
            "Sandbo\u{1}", "PRODUCTİON", "Xcode", "sand box", "\u{FF33}andbox",
        ])
    func noEnvironmentNamed(name: String) {
        #expect(VerifyReceiptBackend.environment(named: name) == nil)
    }
}
