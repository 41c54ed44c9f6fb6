import AppStore
import ReceiptModel
import ServiceSupport

/// `set-account-token ORIGINAL_TRANSACTION_ID TOKEN`: Set App Account Token; with the ledger, who owns the purchase
/// there and how it moves (Apple's token does not move it).
enum SetAccountToken {
    static let name = "set-account-token"

    static let howToMove = "The ledger keeps the owner it credited: a new appAccountToken at Apple does not move it. "
        + "Under LEDGER_OWNERSHIP_POLICY=transfer the new owner's app submits the transaction to the ingest and an "
        + "entitlement in force moves to them (item amounts never move); under keep (the default) the claim is "
        + "refused and shows in GET /v1/purchases/{credit_key} (docs/CREDITING.md, Ownership)."

    static func run(originalTransactionId: String, token: String, _ context: AdminContext) async -> AdminReport {
        let request = AppAccountTokenRequest(appAccountToken: token)
        let answer = await context.caller.call(.setAppAccountToken, .put) { deadline in
            await context.client.setAppAccountToken(
                originalTransactionId: originalTransactionId, request, bundleId: context.bundleId,
                environment: context.environment, deadline: deadline)
        }
        let fields: [String: JSONValue] = [
            "original_transaction_id": .string(originalTransactionId), "app_account_token": .string(token),
            "environment": .string(context.environment.rawValue),
        ]
        if case .failure(let error) = answer { return AdminContext.failure(name, error, fields: fields) }
        guard let ledger = context.ledger else {
            return report(originalTransactionId: originalTransactionId, token: token, environment: context.environment,
                          ledger: nil)
        }
        // The purchase the ledger files it under: Apple's current view of the original transaction.
        let info = await context.caller.call(.transactionInfo, .get) { deadline in
            await context.client.transactionInfo(
                transactionId: originalTransactionId, bundleId: context.bundleId, environment: context.environment,
                deadline: deadline)
        }
        let owner: Owner
        switch info {
        case .failure(let error):
            owner = Owner(creditKey: nil, purchase: .failed("Get Transaction Info failed: \(error.message)"))
        case .success(let response):
            switch context.signed.transaction(response.signedTransactionInfo) {
            case .failure(let problem):
                return .failure(name, problem.exitCode, message: problem.description, fields: fields)
            case .success(let facts):
                owner = Owner(creditKey: facts.creditKey, purchase: await ledger.purchase(creditKey: facts.creditKey))
            }
        }
        return report(
            originalTransactionId: originalTransactionId, token: token, environment: context.environment, ledger: owner)
    }

    struct Owner: Sendable, Equatable {
        var creditKey: String?
        var purchase: LedgerPurchase
    }

    static func report(
        originalTransactionId: String, token: String, environment: AppStoreEnvironment, ledger: Owner?
    ) -> AdminReport {
        var fields: [String: JSONValue] = [
            "original_transaction_id": .string(originalTransactionId), "app_account_token": .string(token),
            "environment": .string(environment.rawValue), "set": .bool(true),
        ]
        var lines = [
            "Apple now has appAccountToken \(token) on original transaction \(originalTransactionId) "
                + "(\(environment.rawValue)); transactions Apple signs from now on carry it"
        ]
        var exitCode = AdminExitCode.ok
        if let ledger {
            fields["ledger"] = .object([
                "credit_key": .text(ledger.creditKey), "purchase": ledger.purchase.json,
                "how_to_move": .string(howToMove),
            ])
            lines.append("credit_key \(ledger.creditKey ?? "-"): " + ledger.purchase.summary)
            lines.append(howToMove)
            if case .failed = ledger.purchase { exitCode = .unavailable }
        }
        return AdminReport(command: name, exitCode: exitCode, lines: lines, fields: fields)
    }
}
