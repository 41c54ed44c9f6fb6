import Foundation
import HTTPServer
import LedgerRules
import Postgres
import ServiceSupport

/// `PUT /v1/users/{user_id}/app-account-token`: the backend declares which user an `appAccountToken` belongs to.
/// A declared token binds in every environment, and no claim or other declaration ever takes it (`OwnerRules`); the
/// claims already parked for it (renewals after Set App Account Token) are applied now. There is no `DELETE`: the
/// token is in every transaction Apple signed with it, renewals included, so moving it is a money decision for an
/// operator (docs/OPERATIONS.md), not an API call.
struct TokenDeclarations: Sendable {
    let store: LedgerStore
    let database: DatabaseLink
    let metrics: LedgerMetrics?
    let logger: Logger

    /// The body's one member (others are ignored, as the ingest ignores unknown fields).
    static let member = "app_account_token"

    /// The answer to a declaration of the body's token for `userId` (a checked identifier).
    func response(userId: String, body: [UInt8], nowMs: Int64) throws(PostgresError) -> HTTPResponse {
        let token: String
        switch Self.token(in: body) {
        case .success(let read): token = read
        case .failure(let problem): return LedgerHTTPHandler.error(400, problem.code, problem.message)
        }
        let outcome = try database.withConnection { connection throws(PostgresError) in
            try connection.transaction { session throws(PostgresError) in
                try store.declare(token: token, for: userId, in: session, nowMs: nowMs)
            }
        }
        record(outcome, userId: userId)
        guard outcome.decision != .conflict, let declaredAtMs = outcome.declaredAtMs else {
            return LedgerHTTPHandler.error(
                409, "app_account_token_declared",
                "this app_account_token is declared for another user; a declaration is never moved "
                    + "(docs/OPERATIONS.md, receipt-ledger: a token declared for the wrong user)")
        }
        return .json(
            200,
            #"{"user_id":\#(JSONText.quoted(userId)),"app_account_token":\#(JSONText.quoted(token)),"declared_at_ms":\#(declaredAtMs),"resolved_claims":\#(outcome.summary.resolvedClaims)}"#
        )
    }

    struct Problem: Error, Equatable {
        let code: String
        let message: String
    }

    /// The token of a body `{"app_account_token": "<uuid>"}`, lower-cased.
    static func token(in body: [UInt8]) -> Result<String, Problem> {
        guard case .object(let members)? = try? JSONParser.parse(body) else {
            return .failure(Problem(code: "invalid_body", message: #"send a JSON object {"app_account_token": "<uuid>"}"#))
        }
        guard case .string(let text)? = members[member] else {
            return .failure(Problem(code: "invalid_body", message: "app_account_token is required, a string"))
        }
        // Apple's appAccountToken is a UUID; 8-4-4-4-12 hexadecimal digits, any case.
        guard text.utf8.count == 36, let uuid = UUID(uuidString: text) else {
            return .failure(
                Problem(
                    code: "invalid_app_account_token",
                    message: "app_account_token must be a UUID, like 7e3fb20b-4cdb-47cc-936d-99d65f608138"))
        }
        return .success(uuid.uuidString.lowercased())
    }

    private func record(_ outcome: TokenDeclarationOutcome, userId: String) {
        metrics?.tokenDeclarations(outcome.decision).increment()
        let summary = outcome.summary
        metrics?.resolvedClaims.increment(by: summary.resolvedClaims)
        metrics?.refusedClaims.increment(by: summary.refusedClaims)
        metrics?.sandboxCredits.increment(by: summary.sandboxCredits)
        metrics?.declinedClaims.increment(by: summary.declinedClaims)
        metrics?.upgrades.increment(by: summary.upgrades)
        switch outcome.decision {
        case .conflict:
            // Never the token (it binds money) in a log line; the user asked for is enough to find the caller.
            logger.warning(
                "an app_account_token declared for another user was declared again for this one: refused",
                ["user_id": .string(userId)])
        case .declared, .alreadyDeclared:
            if summary.resolvedClaims > 0 {
                logger.info(
                    "claims waiting for a declared app_account_token applied",
                    ["user_id": .string(userId), "resolved_claims": .int(summary.resolvedClaims)])
            }
        }
    }
}
