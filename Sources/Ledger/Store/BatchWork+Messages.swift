import LedgerRules
import Postgres

/// A result's and an event's way to the rules.
extension BatchWork {
    // MARK: Results

    /// - Returns: why (parts of) the result could not be applied; empty when all of it was.
    mutating func applyResult(_ result: LedgerResult, atMs: Int64) throws(PostgresError) -> [String] {
        guard CreditingRules.claims(outcome: result.outcome) else { return [] }
        var problems: [String] = []
        for transaction in result.transactions {
            if transaction.keyWasRederived { summary.rederivedKeys += 1 }
            if transaction.isUpgraded == true { try reportUpgrade(of: transaction) }
            guard CreditingRules.claims(creditable: transaction.creditable, isUpgraded: transaction.isUpgraded) else {
                continue
            }
            guard let productId = transaction.productId, let quantity = transaction.quantity else {
                problems.append("\(transaction.creditKey): creditable without product_id or quantity")
                continue
            }
            let claimant = result.owner
            // A declared token, or a token linked in this environment, says whose purchase it is, whoever submitted
            // it; the submitter's claim is then recorded as refused when it is someone else's (`OwnerRules`).
            let owner = try owner(of: transaction, claimant: claimant)
            let claim = claim(
                transaction, source: .result(submissionId: result.submissionId), owner: owner.user,
                productId: productId, quantity: quantity, atMs: atMs)
            if let problem = try decide(
                .credit(claim), transaction: transaction,
                claimId: "result:\(result.submissionId):\(transaction.creditKey)")
            {
                problems.append(problem)
                continue
            }
            if let appTransactionId = transaction.appTransactionId {
                appTransactionIds[transaction.creditKey] = appTransactionId
            }
            guard let claimant else { continue }
            let purchase = purchases[transaction.creditKey]?.state
            let left = OwnerRules.claimant(
                claimant, of: owner, purchaseStatus: purchase?.status ?? .unseen, purchaseOwner: purchase?.owner,
                isPeriod: transaction.isPeriod,
                originalAwaited: awaitedValues.contains(transaction.originalTransactionId ?? ""))
            if left.recordedAsRefused {
                try perform(
                    .recordRefusedClaim(userId: claimant, submissionId: result.submissionId, atMs: atMs),
                    creditKey: transaction.creditKey, book: .production)
            }
            // In the transaction's environment: a sandbox claim never binds a production token.
            if left.linksOriginalTransactionId {
                try link(
                    .originalTransactionId, transaction.originalTransactionId, to: claimant, in: transaction.environment)
            }
            if left.linksToken {
                try link(.appAccountToken, transaction.appAccountToken, to: claimant, in: transaction.environment)
            }
        }
        return problems
    }

    func claim(
        _ transaction: LedgerTransaction, source: CreditClaim.Source, owner: String?, productId: String,
        quantity: Int64, atMs: Int64
    ) -> CreditClaim {
        CreditClaim(
            source: source, owner: owner, productId: productId, credit: transaction.creditShape, quantity: quantity,
            expiresDateMs: transaction.expiresDateMs, atMs: atMs, environment: transaction.environment,
            ownership: transaction.ownership, purchaseDateMs: transaction.purchaseDateMs,
            productKind: transaction.productKind)
    }

    // MARK: Events

    mutating func applyEvent(_ event: LedgerEvent, atMs: Int64) throws(PostgresError) -> [String] {
        let kind: LedgerEventKind
        switch LedgerEventKind.of(event.type) {
        case .none: return ["unknown event type '\(event.type)'"]
        case .some(.noMoney) where event.rescindsConsent: return try withdrawConsent(event)
        case .some(.noMoney): return []
        case .some(.consumptionRequest): return try recordConsumptionRequest(event)
        case .some(let money): kind = money
        }
        guard let transaction = event.transaction else { return ["a \(event.type) event without a transaction"] }
        if transaction.keyWasRederived { summary.rederivedKeys += 1 }
        guard newEvents.remove(event.eventId) != nil else {
            summary.duplicateEvents += 1
            return []
        }
        if transaction.isUpgraded == true { try reportUpgrade(of: transaction) }
        let problem: String?
        if case .credit = kind {
            guard CreditingRules.claims(creditable: transaction.creditable, isUpgraded: transaction.isUpgraded) else {
                return []
            }
            guard let productId = transaction.productId, let quantity = transaction.quantity else {
                return try undoEvent(event, "\(transaction.creditKey): creditable without product_id or quantity")
            }
            let claim = claim(
                transaction, source: .event(eventId: event.eventId),
                owner: try owner(of: transaction, claimant: nil).user,
                productId: productId, quantity: quantity, atMs: atMs)
            problem = try decide(
                .credit(claim), transaction: transaction, claimId: "event:\(event.eventId)",
                upgradeNotified: event.reportsUpgrade)
            if problem == nil, let appTransactionId = transaction.appTransactionId {
                appTransactionIds[transaction.creditKey] = appTransactionId
            }
        } else {
            guard
                let input = kind.input(
                    revocationPercentage: transaction.revocationPercentage, expiresDateMs: transaction.expiresDateMs,
                    signedDateMs: event.signedDateMs)
            else { return [] }
            problem = try decide(input, transaction: transaction, eventId: event.eventId)
        }
        guard let problem else { return [] }
        return try undoEvent(event, problem)
    }

    /// A `CONSUMPTION_REQUEST` for the refund responder, once per `event_id` (a redelivery records nothing more). Its
    /// deadline runs from when Apple signed it; the product type its transaction names, Apple's reason and who paid
    /// are kept with it (the answer's fields depend on the first, policy rules may on the second, and a family-shared
    /// transaction is never answered).
    private mutating func recordConsumptionRequest(_ event: LedgerEvent) throws(PostgresError) -> [String] {
        guard let transaction = event.transaction, let transactionId = transaction.transactionId else {
            return ["a consumption_request event without a transaction id"]
        }
        guard let environment = event.environment, environment == "Production" || environment == "Sandbox" else {
            return ["a consumption_request event from environment '\(event.environment ?? "")' (Apple asks only in Production and Sandbox)"]
        }
        guard let bundleId = event.bundleId, !bundleId.isEmpty else {
            return ["a consumption_request event without bundle_id"]
        }
        let signedAtMs = event.signedDateMs ?? event.receivedAtMs ?? nowMs
        try write(
            """
            INSERT INTO consumption_requests (event_id, credit_key, transaction_id, environment, bundle_id,
                signed_at_ms, deadline_ms, recorded_at_ms, status, next_attempt_at_ms, product_type,
                consumption_request_reason, in_app_ownership_type)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $8, $9, $10, $11)
            ON CONFLICT (event_id) DO NOTHING
            """,
            [
                .text(event.eventId), .text(transaction.creditKey), .text(transactionId), .text(environment),
                .text(bundleId), .int(signedAtMs), .int(signedAtMs + ConsumptionRules.answerWindowMs), .int(nowMs),
                .optional(transaction.productKind?.rawValue), .optional(event.consumptionRequestReason),
                .optional(transaction.inAppOwnershipType),
            ], counted: .consumptionRequest)
        return []
    }

    /// `RESCIND_CONSENT`: a parent or guardian withdrew consent for the app download `app_transaction_id`; the owners
    /// of the purchases made under it no longer consent to share consumption data (`consents.consented` false, the
    /// row kept for the audit), unless they consented again after Apple signed the rescind (`ConsentRules`). The
    /// consents are locked as they are read, so a consent given through the API meanwhile waits and is not undone.
    /// Purchases credited earlier in this batch count (their downloads are written first). An event without an app
    /// transaction ties to no purchase: nothing to withdraw. Every rescind is recorded by its `event_id`
    /// (`consent_rescinds`, with what it withdrew): receipt-reconcile tells a lost one by its absence there.
    private mutating func withdrawConsent(_ event: LedgerEvent) throws(PostgresError) -> [String] {
        var withdrawn: [String] = []
        if let appTransactionId = event.appTransactionId, !appTransactionId.isEmpty {
            try writeAppTransactionIds()
            let consents = try read(
                """
                SELECT user_id, consented, updated_at_ms FROM consents WHERE user_id IN (
                    SELECT p.owner FROM purchase_app_transactions a JOIN purchases p ON p.credit_key = a.credit_key
                    WHERE a.app_transaction_id = $1 AND p.owner IS NOT NULL)
                ORDER BY user_id FOR UPDATE
                """, [.text(appTransactionId)])
            for row in consents.rows {
                let consented = try row.bool("consented")
                let updatedAtMs = try row.int64("updated_at_ms")
                if ConsentRules.rescindWithdraws(
                    consented: consented, consentUpdatedAtMs: updatedAtMs, rescindSignedAtMs: event.signedDateMs)
                {
                    withdrawn.append(try row.string("user_id"))
                }
            }
        }
        if !withdrawn.isEmpty {
            try write(
                "UPDATE consents SET consented = false, updated_at_ms = $2 WHERE user_id = ANY($1::text[]) AND consented",
                [.textArray(withdrawn), .int(nowMs)], counted: .consentWithdrawal)
        }
        // A redelivery keeps the first record (what the first application withdrew).
        try write(
            """
            INSERT INTO consent_rescinds (event_id, app_transaction_id, signed_at_ms, consents_withdrawn, applied_at_ms)
            VALUES ($1, $2, $3, $4, $5) ON CONFLICT (event_id) DO NOTHING
            """,
            [
                .text(event.eventId), .optional(event.appTransactionId), .optional(event.signedDateMs),
                .int(Int64(withdrawn.count)), .int(nowMs),
            ])
        return []
    }

    /// Dead-lettered, not applied: a replay of the same event after a fix must not be taken for a duplicate.
    private mutating func undoEvent(_ event: LedgerEvent, _ problem: String) throws(PostgresError) -> [String] {
        try write("DELETE FROM applied_events WHERE event_id = $1", [.text(event.eventId)])
        return [problem]
    }
}
