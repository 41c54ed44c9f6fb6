import LedgerRules
import Postgres

/// Upgrades between subscription periods: `UpgradeRule` over the periods the batch holds.
extension BatchWork {
    /// Apple marked a period `is_upgraded`: remembered on the period (evidence for a replacement credited later),
    /// and applied to the replacements credited already.
    mutating func reportUpgrade(of transaction: LedgerTransaction) throws(PostgresError) {
        guard transaction.isPeriod, let original = transaction.originalTransactionId else { return }
        var purchase = try load(transaction.creditKey)
        guard let marked = UpgradeRule.markingReported(purchase.state) else { return }
        purchase.state = marked
        purchases[transaction.creditKey] = purchase
        dirtyPurchases.insert(transaction.creditKey)
        try applyUpgrades(subscription: original, upgradeNotified: [])
    }

    /// Takes back the unused share of every period of `subscription` that a credited period replaced. A period
    /// upgraded before is not offered again (refunded and reversed since, it is in force, but upgraded once).
    mutating func applyUpgrades(subscription: String, upgradeNotified: Set<String>) throws(PostgresError) {
        let periods = purchases.compactMap { key, purchase -> UpgradeRule.Period? in
            guard purchase.originalTransactionId == subscription, PurchaseKey.isPeriod(key),
                let productId = purchase.state.productId, let purchased = purchase.state.purchaseDateMs,
                let expires = purchase.state.expiresDateMs
            else { return nil }
            return UpgradeRule.Period(
                creditKey: key, originalTransactionId: subscription, productId: productId, purchaseDateMs: purchased,
                expiresDateMs: expires, inForce: purchase.state.isInForce && purchase.state.upgradedAtMs == nil,
                upgradeReported: purchase.state.upgradeReported)
        }
        for replaced in UpgradeRule.replacements(among: periods, upgradeNotified: upgradeNotified) {
            summary.upgrades += 1
            _ = try decide(
                .upgrade(newPurchaseDateMs: replaced.newPurchaseDateMs), creditKey: replaced.creditKey,
                originalTransactionId: subscription, appAccountToken: nil, claimId: nil, isPeriod: false,
                upgradeNotified: false)
        }
    }
}
