import HTTPServer
import ServiceSupport

/// The bodies the fake sends, shaped like Apple's (every transaction field a string).
enum FakeAppStoreResponses {
    static func status(_ status: Int, environment: String?, isRetryable: Bool? = nil, hyphenated: Bool = false)
        -> HTTPResponse
    {
        var body = "{\"status\":\(status)"
        if let environment { body += ",\"environment\":\(JSONText.quoted(environment))" }
        if let isRetryable { body += ",\"\(hyphenated ? "is-retryable" : "is_retryable")\":\(isRetryable)" }
        body += "}"
        return .json(200, body)
    }

    static func html(_ status: Int) -> HTTPResponse {
        .text(
            status, "<html><head><title>\(status)</title></head><body>Service Unavailable</body></html>",
            contentType: "text/html")
    }

    static func http(_ status: Int, bodyKind: String?) -> HTTPResponse {
        switch bodyKind {
        case "empty": HTTPResponse(status: status)
        case "json": .json(status, "{\"status\":21005}")
        default: html(status)
        }
    }

    /// A status-0 body for a valid scenario, naming `environment` (nil: no `environment` field).
    static func valid(_ scenario: FakeReceiptScenario, environment: String?) -> HTTPResponse {
        let bundleId = scenario.bundleId ?? "com.example.game"
        var transactions = scenario.transactions ?? []
        if let generate = scenario.generate, generate > 0 {
            transactions.reserveCapacity(transactions.count + generate)
            for index in 0..<generate {
                transactions.append(
                    FakeTransaction(
                        id: String(2_000_000_000_000_000 + index), product: "one_month_subscription",
                        originalId: "2000000000000000", purchaseMs: 1_600_000_000_000 + Int64(index) * 2_592_000_000,
                        expiresMs: 1_602_592_000_000 + Int64(index) * 2_592_000_000))
            }
        }
        var body: [UInt8] = []
        body.reserveCapacity(400 + transactions.count * 700 * (scenario.subscription == true ? 2 : 1))
        body.append(contentsOf: "{\"status\":0,".utf8)
        if let environment { body.append(contentsOf: "\"environment\":\(JSONText.quoted(environment)),".utf8) }
        body.append(contentsOf: "\"receipt\":{".utf8)
        body.append(
            contentsOf: "\"receipt_type\":\"\(environment == "Sandbox" ? "ProductionSandbox" : "Production")\",".utf8)
        body.append(contentsOf: "\"adam_id\":0,\"app_item_id\":0,\"bundle_id\":\(JSONText.quoted(bundleId)),".utf8)
        body.append(contentsOf: "\"application_version\":\"1\",\"download_id\":0,".utf8)
        body.append(
            contentsOf: "\"receipt_creation_date_ms\":\"1604851257000\",\"request_date_ms\":\"1628954383379\",".utf8)
        body.append(contentsOf: "\"original_application_version\":\"1.0\",\"in_app\":[".utf8)
        appendTransactions(transactions, to: &body)
        body.append(contentsOf: "]}".utf8)
        if scenario.subscription == true {
            body.append(contentsOf: ",\"latest_receipt_info\":[".utf8)
            appendTransactions(transactions, to: &body)
            body.append(contentsOf: "],\"latest_receipt\":\"ZmFrZQ==\",\"pending_renewal_info\":[]".utf8)
        }
        body.append(UInt8(ascii: "}"))
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: body)
    }

    private static func appendTransactions(_ transactions: [FakeTransaction], to body: inout [UInt8]) {
        for (index, transaction) in transactions.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            let purchase = transaction.purchaseMs ?? 1_539_946_248_000
            var text =
                "{\"quantity\":\"\(transaction.quantity ?? 1)\",\"product_id\":\(JSONText.quoted(transaction.product)),"
            text += "\"transaction_id\":\(JSONText.quoted(transaction.id)),"
            text += "\"original_transaction_id\":\(JSONText.quoted(transaction.originalId ?? transaction.id)),"
            text += "\"purchase_date\":\"2018-10-19 10:50:48 Etc/GMT\",\"purchase_date_ms\":\"\(purchase)\","
            text += "\"original_purchase_date_ms\":\"\(purchase)\","
            if let expires = transaction.expiresMs {
                text += "\"expires_date_ms\":\"\(expires)\",\"web_order_line_item_id\":\"\(expires / 1000)\","
            }
            if let refunded = transaction.refundedMs {
                text += "\"cancellation_date_ms\":\"\(refunded)\","
                text += "\"cancellation_reason\":\(JSONText.quoted(transaction.cancellationReason ?? "0")),"
            }
            text += "\"is_trial_period\":\"false\",\"is_in_intro_offer_period\":\"false\","
            text += "\"in_app_ownership_type\":\"PURCHASED\"}"
            body.append(contentsOf: text.utf8)
        }
    }
}
