import AppStoreServerAPI
import ReceiptModel
import ServiceSupport

/// `lookup-order ORDER_ID`: Look Up Order ID, each transaction verified, with its `credit_key` and, with the
/// ledger, its state and owner there.
enum LookupOrder {
    static let name = "lookup-order"

    static func run(orderId: String, _ context: AdminContext) async -> AdminReport {
        let answer = await context.caller.call(.orderLookup, .get) { deadline in
            await context.client.lookUpOrder(
                orderId: orderId, bundleId: context.bundleId, environment: context.environment, deadline: deadline)
        }
        let response: OrderLookupResponse
        switch answer {
        case .failure(let error): return AdminContext.failure(name, error, fields: ["order_id": .string(orderId)])
        case .success(let value): response = value
        }
        guard response.status == 0 else {
            return report(orderId: orderId, environment: context.environment, orderStatus: response.status,
                          transactions: [], ledger: nil)
        }
        switch context.verifiedTransactions(response.signedTransactions) {
        case .failure(let problem):
            return .failure(name, problem.exitCode, message: problem.description, fields: ["order_id": .string(orderId)])
        case .success(let transactions):
            return report(
                orderId: orderId, environment: context.environment, orderStatus: 0, transactions: transactions,
                ledger: await context.ledgerPurchases(transactions))
        }
    }

    /// The report: `orderStatus` is Apple's (0 valid, 1 invalid); `ledger` nil without a ledger. Exit 1 for an
    /// order Apple does not know (or without transactions), 4 when the ledger could not be read.
    static func report(
        orderId: String, environment: AppStoreEnvironment, orderStatus: Int, transactions: [TransactionFacts],
        ledger: [String: LedgerPurchase]?
    ) -> AdminReport {
        var fields: [String: JSONValue] = [
            "order_id": .string(orderId), "environment": .string(environment.rawValue),
            "order_status": .integer(Int64(orderStatus)),
        ]
        guard orderStatus == 0, !transactions.isEmpty else {
            fields["transactions"] = .array([])
            return AdminReport(
                command: name, exitCode: .notFound,
                lines: ["order \(orderId): Apple does not know this order id in \(environment.rawValue) "
                    + "(status \(orderStatus)); check the id on the customer's e-mail receipt, or try "
                    + "--environment sandbox"],
                fields: fields)
        }
        var lines = ["order \(orderId) (\(environment.rawValue)): \(transactions.count) transaction(s)"]
        var items: [JSONValue] = []
        var ledgerFailed = false
        for transaction in transactions {
            lines += transaction.summary
            var item = transaction.json
            if let purchase = ledger?[transaction.creditKey] {
                lines.append("  " + purchase.summary)
                if case .object(var members) = item {
                    members["ledger"] = purchase.json
                    item = .object(members)
                }
                if case .failed = purchase { ledgerFailed = true }
            }
            items.append(item)
        }
        fields["transactions"] = .array(items)
        return AdminReport(command: name, exitCode: ledgerFailed ? .unavailable : .ok, lines: lines, fields: fields)
    }
}
