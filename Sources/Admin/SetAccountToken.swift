import AppStoreServerAPI
import ReceiptModel
import ServiceSupport

/// `set-account-token ORIGINAL_TRANSACTION_ID TOKEN [--user USER_ID]`: Set App Account Token; with the ledger, who
/// owns the purchase there and how it moves (Apple's token does not move it); with `--user`, once Apple accepted,
/// the ledger is told the token is that user's (`PUT /v1/users/{user_id}/app-account-token`), so the renewals Apple
/// signs with it, and those already waiting for an owner, are credited to them.
enum SetAccountToken {
    static let name = "set-account-token"

    static let howToMove = "The ledger keeps the owner it credited: a new appAccountToken at Apple does not move it. "
        + "Under LEDGER_OWNERSHIP_POLICY=transfer the new owner's app submits the transaction to the ingest and an "
        + "entitlement in force moves to them (item amounts never move); under keep (the default) the claim is "
        + "refused and shows in GET /v1/purchases/{credit_key} (docs/CREDITING.md, Ownership). With --user USER_ID "
        + "the ledger is told the new token is USER_ID's: the renewals Apple signs with it (and those already waiting "
        + "for an owner) are credited to USER_ID."

    static func run(originalTransactionId: String, token: String, user: String? = nil, _ context: AdminContext) async
        -> AdminReport
    {
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
        // Apple accepted: now the ledger may follow (never the other way round, or the ledger would credit a token
        // Apple never put on the transactions).
        var declaration: Declaration?
        if let user { declaration = Declaration(user: user, answer: await ledger.declare(token: token, userId: user)) }
        // The purchase the ledger files it under: Apple's current view of the original transaction.
        let info = await context.transactionInfo(originalTransactionId)
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
            originalTransactionId: originalTransactionId, token: token, environment: context.environment, ledger: owner,
            declaration: declaration)
    }

    struct Owner: Sendable, Equatable {
        var creditKey: String?
        var purchase: LedgerPurchase
    }

    /// `--user`: whose the ledger was told the token is, and its answer.
    struct Declaration: Sendable, Equatable {
        var user: String
        var answer: LedgerDeclaration
    }

    static func report(
        originalTransactionId: String, token: String, environment: AppStoreEnvironment, ledger: Owner?,
        declaration: Declaration? = nil
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
        if let declaration {
            var declared = declaration.answer.json
            if case .object(var members) = declared {
                members["user_id"] = .string(declaration.user)
                declared = .object(members)
            }
            fields["ledger_declaration"] = declared
            switch declaration.answer {
            case .declared(_, let resolvedClaims):
                lines.append(
                    "the ledger now credits transactions carrying \(token) to \(declaration.user), in every environment "
                        + "(\(resolvedClaims) waiting claims applied now)")
            case .conflict(let message):
                lines.append("the ledger refused to declare \(token) for \(declaration.user): \(message)")
                exitCode = .refused
            case .failed(let message):
                lines.append(
                    "the ledger was not told (\(message)); run the command again: Apple's part and the ledger's "
                        + "are both idempotent")
                exitCode = .unavailable
            }
        }
        return AdminReport(command: name, exitCode: exitCode, lines: lines, fields: fields)
    }
}
