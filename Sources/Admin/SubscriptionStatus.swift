import AppStoreServerAPI
import ReceiptModel
import ServiceSupport

/// `subscription-status TRANSACTION_ID`: Get All Subscription Statuses, every signed transaction and renewal info
/// verified.
enum SubscriptionStatus {
    static let name = "subscription-status"

    /// One subscription (an original transaction) in a group, verified.
    struct Subscription: Sendable, Equatable {
        var status: Int?
        var originalTransactionId: String?
        var transaction: TransactionFacts?
        var renewal: RenewalFacts?
    }

    struct Group: Sendable, Equatable {
        var identifier: String?
        var subscriptions: [Subscription]
    }

    static func statusName(_ status: Int?) -> String {
        switch status {
        case 1: "active"
        case 2: "expired"
        case 3: "billing_retry"
        case 4: "billing_grace_period"
        case 5: "revoked"
        default: "unknown"
        }
    }

    static func run(transactionId: String, status: Int?, _ context: AdminContext) async -> AdminReport {
        let answer = await context.caller.call(.subscriptionStatuses, .get) { deadline in
            await context.client.subscriptionStatuses(
                transactionId: transactionId, statuses: status.map { [$0] } ?? [], bundleId: context.bundleId,
                environment: context.environment, deadline: deadline)
        }
        let response: SubscriptionStatusesResponse
        switch answer {
        case .failure(let error):
            return AdminContext.failure(name, error, fields: ["transaction_id": .string(transactionId)])
        case .success(let value): response = value
        }
        var groups: [Group] = []
        for group in response.data {
            var subscriptions: [Subscription] = []
            for last in group.lastTransactions {
                var subscription = Subscription(status: last.status, originalTransactionId: last.originalTransactionId)
                do throws(SignedAnswers.Unverified) {
                    if let jws = last.signedTransactionInfo {
                        subscription.transaction = try context.signed.transaction(jws).get()
                    }
                    if let jws = last.signedRenewalInfo {
                        subscription.renewal = try context.signed.renewal(jws).get()
                    }
                } catch {
                    return .failure(
                        name, error.exitCode, message: error.description,
                        fields: ["transaction_id": .string(transactionId)])
                }
                subscriptions.append(subscription)
            }
            groups.append(Group(identifier: group.subscriptionGroupIdentifier, subscriptions: subscriptions))
        }
        return report(transactionId: transactionId, environment: context.environment, groups: groups)
    }

    /// Exit 1 when Apple knows no subscription for the id (a one-time purchase, or none in the asked status).
    static func report(transactionId: String, environment: AppStoreEnvironment, groups: [Group]) -> AdminReport {
        let count = groups.reduce(0) { $0 + $1.subscriptions.count }
        var lines = ["transaction \(transactionId) (\(environment.rawValue)): \(count) subscription(s)"]
        let json = groups.map { group -> JSONValue in
            lines.append("group \(group.identifier ?? "-"):")
            let items = group.subscriptions.map { subscription -> JSONValue in
                lines.append(
                    "- \(statusName(subscription.status)) (status \(subscription.status.map(String.init) ?? "-")), "
                        + "original transaction \(subscription.originalTransactionId ?? "-")")
                if let transaction = subscription.transaction { lines += transaction.summary.map { "  " + $0 } }
                if let renewal = subscription.renewal { lines.append("  " + renewal.summary) }
                return .object([
                    "status": .int(subscription.status), "status_name": .string(statusName(subscription.status)),
                    "original_transaction_id": .text(subscription.originalTransactionId),
                    "transaction": subscription.transaction?.json ?? .null,
                    "renewal": subscription.renewal?.json ?? .null,
                ])
            }
            return .object(["subscription_group_identifier": .text(group.identifier), "subscriptions": .array(items)])
        }
        if count == 0 {
            lines = ["transaction \(transactionId) (\(environment.rawValue)): Apple lists no subscription for it"]
        }
        return AdminReport(
            command: name, exitCode: count == 0 ? .notFound : .ok, lines: lines,
            fields: [
                "transaction_id": .string(transactionId), "environment": .string(environment.rawValue),
                "subscription_groups": .array(json),
            ])
    }
}
