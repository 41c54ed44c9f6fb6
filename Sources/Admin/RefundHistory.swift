import AppStoreServerAPI
import ReceiptModel

/// `refund-history TRANSACTION_ID`: every page of Get Refund History v2 (the customer's refunded and revoked
/// transactions, oldest revocation first), each transaction verified.
enum RefundHistory {
    static let name = "refund-history"
    /// 20 refunds a page: 10,000 refunds is more than any customer has; past it the history is cut, and says so.
    static let maximumPages = 500

    static func run(transactionId: String, _ context: AdminContext) async -> AdminReport {
        var refunds: [TransactionFacts] = []
        var revision: String?
        var pages = 0
        var complete = false
        while pages < maximumPages {
            let page = await context.caller.call(.refundHistory, .get) { [revision] deadline in
                await context.client.refundHistoryPage(
                    transactionId: transactionId, bundleId: context.bundleId, environment: context.environment,
                    revision: revision, deadline: deadline)
            }
            let response: RefundHistoryResponse
            switch page {
            case .failure(let error):
                return AdminContext.failure(
                    name, error, fields: ["transaction_id": .string(transactionId), "pages": .integer(Int64(pages))])
            case .success(let value): response = value
            }
            pages += 1
            switch context.verifiedTransactions(response.signedTransactions) {
            case .failure(let problem):
                return .failure(name, problem.exitCode, message: problem.description,
                                fields: ["transaction_id": .string(transactionId)])
            case .success(let transactions): refunds += transactions
            }
            guard response.hasMore, let next = response.revision else {
                complete = true
                break
            }
            revision = next
        }
        return report(
            transactionId: transactionId, environment: context.environment, refunds: refunds, pages: pages,
            complete: complete)
    }

    /// Exit 1 when the customer has no refund.
    static func report(
        transactionId: String, environment: AppStoreEnvironment, refunds: [TransactionFacts], pages: Int,
        complete: Bool
    ) -> AdminReport {
        var lines = [
            "transaction \(transactionId) (\(environment.rawValue)): "
                + (refunds.isEmpty ? "no refunded or revoked transaction" : "\(refunds.count) refunded or revoked")
        ]
        for refund in refunds { lines += refund.summary }
        if !complete { lines.append("(cut after \(pages) pages)") }
        return AdminReport(
            command: name, exitCode: refunds.isEmpty ? .notFound : .ok, lines: lines,
            fields: [
                "transaction_id": .string(transactionId), "environment": .string(environment.rawValue),
                "refunds": .array(refunds.map(\.json)), "pages": .integer(Int64(pages)), "complete": .bool(complete),
            ])
    }
}
