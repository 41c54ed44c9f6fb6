import Foundation
import Ingest
import ReceiptModel
import Testing
import TestSupport

/// The schemas in `schemas/` against what the code writes, checked by an independent validator, with negative cases
/// proving the schemas actually constrain.
@Suite("schemas/ match the messages the code writes")
struct SchemaTests {
    private static func text<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try MessageCoding.encode(value), as: UTF8.self)
    }

    /// Results and events as their one writer writes them.
    private static func text(_ result: VerificationResult) -> String {
        String(decoding: VerificationResultJSON.encode(result), as: UTF8.self)
    }

    private static func text(_ event: PurchaseEvent) -> String {
        String(decoding: PurchaseEventJSON.encode(event), as: UTF8.self)
    }

    private static func text(_ submission: Submission) -> String {
        String(decoding: SubmissionJSON.encode(submission), as: UTF8.self)
    }

    private static func text(_ record: RetryRecord) -> String {
        String(decoding: RetryRecordJSON.encode(record), as: UTF8.self)
    }

    private static let submission = SubmissionRequest(
        receiptData: "aGVsbG8=", orderId: "o-1", userId: "u-1", expectedTransactionId: "1000",
        expectedProductId: "com.example.p"
    ).submission(id: "s-1", submittedAtMs: 1_764_489_600_000)

    private static let transaction = VerifiedTransaction(
        TransactionFields(
            transactionId: "1000", originalTransactionId: "1000", productId: "com.example.p", quantity: 1,
            purchaseDateMs: 1_764_489_500_000, expiresDateMs: 1_767_000_000_000, inAppOwnershipType: "PURCHASED"),
        environment: .sandbox)

    @Test("what the ingest and the verifier write validates")
    func validMessages() throws {
        let minimal = SubmissionRequest(receiptData: "aGVsbG8=").submission(id: "s-2", submittedAtMs: 1)
        let verified = VerificationResult(
            submissionId: "s-1", orderId: "o-1", userId: nil, outcome: .verified, reason: nil, message: nil,
            appleStatus: 0, environment: .sandbox, bundleId: "com.example", transactions: [Self.transaction],
            attempts: 2, verifiedAtMs: 1_764_489_600_100)
        var cases: [SchemaValidator.Case] = [
            .init(schema: "submission.schema.json", instance: Self.text(Self.submission)),
            .init(schema: "submission.schema.json", instance: Self.text(minimal)),
            .init(schema: "result.schema.json", instance: Self.text(verified)),
            .init(
                schema: "retry.schema.json",
                instance: Self.text(
                    RetryRecord(
                        submission: Self.submission, round: 1, attempts: 4, notBeforeMs: 1_764_489_660_000,
                        lastAppleStatus: nil, lastError: "timeout"))),
            .init(
                schema: "dlq.schema.json",
                instance: try Self.text(
                    DeadLetterRecord(
                        submissionId: nil, reason: .malformedSubmission, message: "not valid JSON",
                        sourceTopic: "iap.receipts.submitted", sourcePartition: 3, sourceOffset: 77,
                        originalKey: nil, originalValue: Array("{oops".utf8), appleStatus: nil, attempts: 0,
                        failedAtMs: 1_764_489_601_000))),
        ]
        let signed = Submission(
            submissionId: "s-3",
            proof: .signedTransaction("eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2lnbmF0dXJl"),
            clientId: "billing", expectedAppAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138", submittedAtMs: 1)
        let byId = Submission(submissionId: "s-4", proof: .transactionId("2000000123456789"), submittedAtMs: 1)
        var refunded = Self.transaction
        refunded.creditable = false
        refunded.cancellationDateMs = 1_764_489_550_000
        refunded.revocationType = "REFUND_PRORATED"
        refunded.revocationPercentage = 50_000
        refunded.productType = .consumable
        refunded.credit = .object(["item": .string("gems"), "amount": .integer(100)])
        let event = PurchaseEvent(
            eventId: "e-1", type: .debit, notificationType: "REFUND", subtype: nil, environment: .production,
            bundleId: "com.example", appAppleId: 1_234_567_890, transaction: refunded,
            renewal: RenewalSummary(
                autoRenewStatus: 1, autoRenewProductId: "p", expirationIntent: nil, gracePeriodExpiresDateMs: nil,
                isInBillingRetryPeriod: false),
            subscriptionStatus: 1, familyShared: false, signedDateMs: 1, receivedAtMs: 2)
        let info = PurchaseEvent(
            eventId: "e-2", type: .info, notificationType: "SOMETHING_NEW", subtype: nil, environment: nil,
            bundleId: nil, appAppleId: nil, transaction: nil, renewal: nil, subscriptionStatus: nil,
            familyShared: false, signedDateMs: 1, receivedAtMs: 2)
        // Round 5's members, filled: the offer and storefront of a transaction, the renewal's price and offer, the
        // consumption request's reason.
        var offered = Self.transaction
        offered.offerType = 5
        offered.offerIdentifier = "stay-with-us"
        offered.storefront = "FRA"
        offered.storefrontId = "143442"
        let consumption = PurchaseEvent(
            eventId: "e-3", type: .consumptionRequest, notificationType: "CONSUMPTION_REQUEST", subtype: nil,
            environment: .production, bundleId: "com.example", appAppleId: 1_234_567_890, transaction: offered,
            renewal: RenewalSummary(
                autoRenewStatus: 1, autoRenewProductId: "p", expirationIntent: nil, gracePeriodExpiresDateMs: nil,
                isInBillingRetryPeriod: false, renewalPrice: 4_990, currency: "EUR", offerType: 2,
                offerIdentifier: "promo", offerDiscountType: "PAY_AS_YOU_GO", offerPeriod: "P1M"),
            subscriptionStatus: 1, familyShared: false, signedDateMs: 1, receivedAtMs: 2,
            consumptionRequestReason: "UNINTENDED_PURCHASE")
        let withEverything = VerificationResult(
            submissionId: "s-3", orderId: nil, userId: nil, clientId: "billing", outcome: .verified, reason: nil,
            source: .serverAPI, message: nil, appleStatus: nil, environment: .production, bundleId: "com.example",
            transactions: [refunded], submissionFingerprint: String(repeating: "ab", count: 32), attempts: 1,
            verifiedAtMs: 1)
        cases += [
            .init(schema: "submission.schema.json", instance: Self.text(signed)),
            .init(schema: "submission.schema.json", instance: Self.text(byId)),
            .init(schema: "result.schema.json", instance: Self.text(withEverything)),
            .init(schema: "event.schema.json", instance: Self.text(event)),
            .init(schema: "event.schema.json", instance: Self.text(info)),
            .init(schema: "event.schema.json", instance: Self.text(consumption)),
            .init(
                schema: "notification.schema.json",
                instance: try Self.text(
                    NotificationRecord(
                        signedPayload: "eyJhbGciOiJFUzI1NiJ9.eyJub3RpZmljYXRpb25UeXBlIjoiVEVTVCJ9.c2ln",
                        receivedAtMs: 1))),
        ]
        // Every body the ingest accepts, as the ingest writes it (with and without a named key's client_id).
        for body in SubmissionRequestTests.acceptedBodies {
            let request = try SubmissionRequest.parse(Array(body.utf8))
            for clientId in [nil, "billing"] {
                let written = request.submission(id: "s-5", clientId: clientId, submittedAtMs: 1_764_489_600_000)
                cases.append(.init(schema: "submission.schema.json", instance: Self.text(written)))
            }
        }
        for reason in Reason.allCases {
            let result = VerificationResult(
                submissionId: "s-1", orderId: nil, userId: nil, outcome: reason.outcome, reason: reason,
                message: "because", appleStatus: 21002, environment: nil, bundleId: nil, transactions: [],
                attempts: 1, verifiedAtMs: 1)
            cases.append(.init(schema: "result.schema.json", instance: Self.text(result)))
        }
        for (index, errors) in try SchemaValidator.errors(cases).enumerated() {
            #expect(errors.isEmpty, "case \(index) (\(cases[index].schema)): \(errors)")
        }
    }

    /// `json` (an object) with `change` applied.
    private static func mutated(_ json: String, _ change: (inout [String: Any]) -> Void) throws -> String {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        change(&object)
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    @Test("the schemas refuse what the contract forbids")
    func invalidMessages() throws {
        let submission = Self.text(Self.submission)
        let verified = Self.text(
            VerificationResult(
                submissionId: "s", orderId: nil, userId: nil, outcome: .verified, reason: nil, message: nil,
                appleStatus: 0, environment: .production, bundleId: nil, transactions: [Self.transaction],
                attempts: 1, verifiedAtMs: 1))
        let deadLetter = try Self.text(
            DeadLetterRecord(
                submissionId: "s", reason: .malformedSubmission, message: "m", sourceTopic: "t", sourcePartition: 0,
                sourceOffset: 0, originalKey: nil, originalValue: [1, 2, 3], appleStatus: nil, attempts: 0,
                failedAtMs: 1))
        let retry = Self.text(
            RetryRecord(
                submission: Self.submission, round: 1, attempts: 1, notBeforeMs: 1, lastAppleStatus: nil,
                lastError: "x"))
        let submissionSchema = "submission.schema.json"
        let cases: [SchemaValidator.Case] = [
            .init(schema: submissionSchema, instance: try Self.mutated(submission) { $0["receipt_data"] = nil }),
            .init(schema: submissionSchema, instance: try Self.mutated(submission) { $0["schema_version"] = 2 }),
            .init(schema: submissionSchema, instance: try Self.mutated(submission) { $0["submission_id"] = "" }),
            .init(
                schema: "submission.schema.json",
                instance: try Self.mutated(submission) { $0["receipt_data"] = "eyJh.eyJi.c2ln" }),
            .init(
                schema: "submission.schema.json",
                instance: try Self.mutated(submission) { $0["submitted_at_ms"] = "1" }),
            .init(schema: "result.schema.json", instance: try Self.mutated(verified) { $0["reason"] = "refunded" }),
            .init(
                schema: "result.schema.json",
                instance: try Self.mutated(verified) {
                    $0["outcome"] = "failed"
                    $0["reason"] = "refunded"
                }),
            .init(schema: "result.schema.json", instance: try Self.mutated(verified) { $0["environment"] = nil }),
            .init(
                schema: "result.schema.json",
                instance: verified.replacingOccurrences(of: "apple:sandbox:", with: "apple:Sandbox:")),
            .init(schema: "dlq.schema.json", instance: try Self.mutated(deadLetter) { $0["reason"] = "nope" }),
            .init(schema: "dlq.schema.json", instance: try Self.mutated(deadLetter) { $0["original_value"] = "@@" }),
            .init(schema: "retry.schema.json", instance: try Self.mutated(retry) { $0["submission"] = ["a": 1] }),
        ]
        for (index, errors) in try SchemaValidator.errors(cases).enumerated() {
            #expect(!errors.isEmpty, "case \(index) (\(cases[index].schema)) was accepted: \(cases[index].instance)")
        }
    }

    @Test("every example in the schemas and in openapi.yaml validates against its schema")
    func examples() throws {
        var cases: [SchemaValidator.Case] = []
        let directory = URL(fileURLWithPath: SchemaValidator.schemasDirectory)
        for name in ["submission", "transaction", "result", "retry", "dlq"] {
            let data = try Data(contentsOf: directory.appendingPathComponent("\(name).schema.json"))
            let schema = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let examples = try #require(schema["examples"] as? [Any], "\(name) has no examples")
            for example in examples {
                let text = String(decoding: try JSONSerialization.data(withJSONObject: example), as: UTF8.self)
                cases.append(.init(schema: "\(name).schema.json", instance: text))
            }
        }
        // OpenAPI examples, by the component schema they illustrate (extracted with the same YAML parser).
        for (component, example) in try openAPIExamples() {
            cases.append(.init(schema: "openapi.yaml#/components/schemas/\(component)", instance: example))
        }
        #expect(cases.count >= 15)
        for (index, errors) in try SchemaValidator.errors(cases).enumerated() {
            #expect(errors.isEmpty, "example \(index) for \(cases[index].schema): \(errors)")
        }
    }

    @Test("the OpenAPI request schemas accept what the ingest accepts and refuse what it refuses for shape")
    func openAPIRequest() throws {
        let accepted = SubmissionRequestTests.acceptedBodies + [
            #"{"receipt":"aGVsbG8=","orderNo":7,"transactionId":"1","sandbox":true}"#,
            #"{"receipt_data":"aGVsbG8=","receipt":"aGVsbG8=","sandbox":1}"#,
            // Whitespace anywhere in a receipt is removed, also inside a JWS sent as receipt_data.
            #"{"receipt_data":" aGVs\r\nbG8 =\n"}"#,
            #"{"receipt":"\#(sampleJWS.prefix(10))\n\#(sampleJWS.dropFirst(10))"}"#,
        ]
        for body in accepted { _ = try SubmissionRequest.parse(Array(body.utf8)) }
        let refused = [
            #"{"order_id":"o"}"#, #"{"receipt_data":"aGVsbG8=","signed_transaction":"\#(sampleJWS)"}"#,
            #"{"receipt":"aGVsbG8=","transaction_id":"1"}"#, #"{"transaction_id":"12ab"}"#,
            #"{"receipt":"aGVsbG8=","sandbox":"yes"}"#, #"{"transaction_id":"1","expected_app_account_token":"x"}"#,
            #"{"receipt_data":"aGVsbG8"}"#, #"{"receipt":"aGVsbG8=="}"#, #"{"receipt_data":"aGVs-bG8="}"#,
        ]
        for body in refused {
            #expect(throws: APIError.self) { try SubmissionRequest.parse(Array(body.utf8)) }
        }
        let schema = "openapi.yaml#/components/schemas/SubmissionRequest"
        let results = try SchemaValidator.errors(
            accepted.map { .init(schema: schema, instance: $0) } + refused.map { .init(schema: schema, instance: $0) })
        for (index, errors) in results.enumerated() {
            if index < accepted.count {
                #expect(errors.isEmpty, "\(accepted[index]): \(errors)")
            } else {
                #expect(!errors.isEmpty, "accepted by the schema: \(refused[index - accepted.count])")
            }
        }
        let notification = "openapi.yaml#/components/schemas/NotificationRequest"
        let notifications = try SchemaValidator.errors([
            .init(schema: notification, instance: NotificationFixtures.body(NotificationFixtures.signedPayload())),
            .init(schema: notification, instance: #"{"signedPayload":"a.b"}"#),
        ])
        #expect(notifications[0].isEmpty)
        #expect(!notifications[1].isEmpty)
    }

    @Test("what the ingest answers for conflicts, other clients, notifications and a full buffer matches openapi.yaml")
    func openAPIResponses() throws {
        let ingest = try InProcessIngest.start {
            $0.apiKeys = [APIKey(name: "billing", key: "k1"), APIKey(name: "support", key: "k2")]
            $0.maxBufferedBytes = 64 * 1024
        }
        defer { ingest.service.drain() }
        let billing = [("Authorization", "Bearer k1")]
        let support = [("Authorization", "Bearer k2")]
        let accepted = try ingest.post(#"{"receipt_data":"aGVsbG8=","submission_id":"o-1"}"#, headers: billing)
        let conflict = try ingest.post(
            #"{"receipt_data":"aGVsbG8=","submission_id":"o-1","expected_product_id":"p"}"#, headers: billing)
        let foreign = try ingest.post(#"{"receipt_data":"aGVsbG8=","submission_id":"o-1"}"#, headers: support)
        let badJWS = try ingest.post(
            #"{"signed_transaction":"eyJhbGciOiJIUzI1NiJ9.eyJ0eCI6MX0.c2ln"}"#, headers: billing)
        let notification = try ingest.post(
            NotificationFixtures.body(NotificationFixtures.signedPayload()), "/v1/apple/notifications")
        let notANotification = try ingest.post(#"{"signedPayload":"a.b"}"#, "/v1/apple/notifications")
        let slow = try HTTPTestConnection(port: ingest.port)
        // Bodies are held as they arrive: 59,000 of an announced 60,000 bytes leave too little for the next one.
        try slow.send(
            "POST /v1/apple/notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: 60000\r\n\r\n{" + String(repeating: " ", count: 58_999))
        #expect(waitUntil { ingest.scrape().contains("ingest_http_buffered_body_bytes 59000") })
        let busy = try ingest.post(#"{"receipt_data":"\#(String(repeating: "A", count: 8000))"}"#, headers: billing)
        let statuses: [Int] = [
            accepted.status, conflict.status, foreign.status, badJWS.status, notification.status,
            notANotification.status, busy.status,
        ]
        #expect(statuses == [202, 409, 404, 400, 200, 400, 503])
        let results = try SchemaValidator.errors([
            .init(schema: "openapi.yaml#/components/schemas/Accepted", instance: accepted.text),
            .init(schema: "openapi.yaml#/components/schemas/Error", instance: conflict.text),
            .init(schema: "openapi.yaml#/components/schemas/Error", instance: foreign.text),
            .init(schema: "openapi.yaml#/components/schemas/Error", instance: badJWS.text),
            .init(schema: "openapi.yaml#/components/schemas/NotificationReceived", instance: notification.text),
            .init(schema: "openapi.yaml#/components/schemas/Error", instance: notANotification.text),
            .init(schema: "openapi.yaml#/components/schemas/Error", instance: busy.text),
        ])
        #expect(results.allSatisfy { $0.isEmpty }, "\(results)")
        // The codes are the ones openapi.yaml documents for these statuses.
        let documented = try String(contentsOfFile: SchemaValidator.schemasDirectory + "/openapi.yaml", encoding: .utf8)
        for code in [conflict, foreign, badJWS, notANotification, busy].compactMap(\.errorCode) {
            #expect(documented.contains("code: \(code)"), "\(code) has no example in openapi.yaml")
        }
    }

    /// `(component, example JSON)` for every request and response example of openapi.yaml whose media type has a
    /// component schema.
    private func openAPIExamples() throws -> [(String, String)] {
        let script = """
            import json, sys, yaml
            doc = yaml.safe_load(open(sys.argv[1]))
            out = []
            def visit(content):
                for media in (content or {}).values():
                    ref = (media.get("schema") or {}).get("$ref", "")
                    if not ref.startswith("#/components/schemas/"):
                        continue
                    for example in (media.get("examples") or {}).values():
                        if "$ref" in example:
                            example = doc["components"]["examples"][example["$ref"].rsplit("/", 1)[1]]
                        out.append([ref.rsplit("/", 1)[1], json.dumps(example["value"])])
            for path in doc["paths"].values():
                for operation in path.values():
                    visit((operation.get("requestBody") or {}).get("content"))
                    for response in operation.get("responses", {}).values():
                        visit(response.get("content"))
            json.dump(out, sys.stdout)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, SchemaValidator.schemasDirectory + "/openapi.yaml"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let pairs = try JSONDecoder().decode([[String]].self, from: data)
        #expect(pairs.count >= 20)
        return pairs.map { ($0[0], $0[1]) }
    }
}
