import AppStoreServerAPI
import ReceiptModel
import ServiceSupport

/// `finish-transaction TRANSACTION_ID [--force]`: Finish Transaction (API 1.20), for a purchase whose app cannot
/// finish it itself. Apple: call it "after it finishes providing the customer with the new content", and not at all
/// when the app calls `finish()` (docs/CREDITING.md, "Finish Transaction"). So with the ledger (`LEDGER_URL`) the
/// purchase is finished only when the ledger delivered it (its `credit_key` `credited`, `recredited` or `upgraded`);
/// `--force` finishes without asking. Without a ledger the operator is the judge.
enum FinishTransaction {
    static let name = "finish-transaction"
    /// The ledger states of a purchase whose content was delivered.
    static let delivered: Set<String> = ["credited", "recredited", "upgraded"]

    static func run(transactionId: String, force: Bool, _ context: AdminContext) async -> AdminReport {
        var fields: [String: JSONValue] = [
            "transaction_id": .string(transactionId), "environment": .string(context.environment.rawValue),
            "finished": .bool(false),
        ]
        var lines: [String] = []
        if let ledger = context.ledger, !force {
            // The purchase the ledger files it under: Apple's view of the transaction, verified.
            let info = await context.transactionInfo(transactionId)
            let facts: TransactionFacts
            switch info {
            case .failure(let error): return AdminContext.failure(name, error, fields: fields)
            case .success(let response):
                switch context.signed.transaction(response.signedTransactionInfo) {
                case .failure(let problem):
                    return .failure(name, problem.exitCode, message: problem.description, fields: fields)
                case .success(let verified): facts = verified
                }
            }
            let purchase = await ledger.purchase(creditKey: facts.creditKey)
            fields["credit_key"] = .string(facts.creditKey)
            fields["ledger"] = purchase.json
            lines.append("credit_key \(facts.creditKey): " + purchase.summary)
            switch purchase {
            case .failed(let message):
                return AdminReport(
                    command: name, exitCode: .unavailable,
                    lines: lines + ["not finished: the ledger could not be read (\(message))"], fields: fields)
            case .unknown, .found:
                guard case .found(_, let state, _, _) = purchase, delivered.contains(state) else {
                    return AdminReport(
                        command: name, exitCode: .notFound,
                        lines: lines + [
                            "not finished: the ledger has not delivered this purchase (Apple: finish only after the "
                                + "content was provided); --force finishes it anyway"
                        ], fields: fields)
                }
            }
        }
        let answer = await context.caller.call(.finishTransaction, .post) { deadline in
            await context.client.finishTransaction(
                transactionId: transactionId, bundleId: context.bundleId, environment: context.environment,
                deadline: deadline)
        }
        if case .failure(let error) = answer { return AdminContext.failure(name, error, fields: fields) }
        fields["finished"] = .bool(true)
        lines.insert(
            "Apple has transaction \(transactionId) finished (\(context.environment.rawValue)): StoreKit stops "
                + "presenting it to the app as unfinished", at: 0)
        if context.ledger == nil {
            lines.append("the ledger was not asked (no LEDGER_URL): make sure the purchase was delivered")
        } else if force {
            lines.append("--force: the ledger was not asked")
        }
        return AdminReport(command: name, exitCode: .ok, lines: lines, fields: fields)
    }
}
