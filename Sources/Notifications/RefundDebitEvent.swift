import AppStore
import Catalog
import ReceiptModel
import SignedData

/// The `debit` event of a refund Apple lists in Get Refund History but whose `REFUND` notification never reached the
/// ledger (`receipt-reconcile`): the same event the verifier publishes for a `REFUND` notification (type `debit`,
/// `notification_type` `REFUND`, the verified transaction judged by the same money rules and catalog), signed at
/// the refund's `revocationDate` (so the ledger orders it where Apple's notification would be), under the id the
/// caller gives.
///
/// The signed transaction is verified like any signed data (ES256, chain to `APPLE_ROOT_CERTIFICATES` at its
/// `signedDate`, Apple's marker OIDs), and must be of an allowed bundle, of `environment`, and revoked.
public struct RefundDebitEvent: Sendable {
    /// The signed-data verifier, policy and catalog, as notifications are judged with them.
    public let rules: NotificationProcessor

    public init(
        verifier: AppleSignedDataVerifier, policy: NotificationPolicy, catalog: (any ProductCatalogSource)? = nil
    ) {
        rules = NotificationProcessor(verifier: verifier, policy: policy, catalog: catalog)
    }

    /// A verified revoked transaction and the purchase it belongs to.
    public struct Refund: Sendable {
        public let payload: JWSTransactionPayload
        public let transaction: VerifiedTransaction
        public let revocationDateMs: Int64
        public var creditKey: String { transaction.creditKey }
        public var transactionId: String { transaction.transactionId }
    }

    /// Verifies one of Get Refund History's `signedTransactions`.
    public func refund(_ jws: String, environment: AppStoreEnvironment) -> Result<Refund, NotificationRejection> {
        let payload: JWSTransactionPayload
        do {
            payload = try rules.verifier.verify(jws, as: JWSTransactionPayload.self) { $0.signedDate }.payload
        } catch {
            return .failure(.signedData(error, "a refunded transaction"))
        }
        guard let bundleId = payload.bundleId, rules.policy.allowedBundleIds.contains(bundleId) else {
            return .failure(
                NotificationRejection(.bundleMismatch, "a refunded transaction's bundleId is not in ALLOWED_BUNDLE_IDS"))
        }
        let named = payload.environment?.rawValue
        guard named == environment.rawValue else {
            return .failure(
                NotificationRejection(
                    .malformedSubmission,
                    "a refunded transaction names environment \(named ?? "none"), the history was \(environment.rawValue)"))
        }
        guard let revocationDateMs = payload.revocationDate.value else {
            return .failure(
                NotificationRejection(.malformedSubmission, "a transaction in the refund history has no readable revocationDate"))
        }
        guard
            let transaction = SignedTransactionNormalizer.normalize(
                payload, environment: environment, catalog: rules.catalog?.currentCatalog)
        else {
            return .failure(
                NotificationRejection(
                    .malformedSubmission, "a refunded transaction lacks transactionId, productId or purchaseDate"))
        }
        return .success(Refund(payload: payload, transaction: transaction, revocationDateMs: revocationDateMs))
    }

    /// The `debit` event of `refund`, keyed as the verifier keys events (the original transaction id).
    public func event(
        _ refund: Refund, eventId: String, environment: AppStoreEnvironment, receivedAtMs: Int64
    ) -> NotificationEvent {
        let event = PurchaseEvent(
            eventId: eventId, type: .debit, notificationType: "REFUND", subtype: nil, environment: environment,
            bundleId: refund.payload.bundleId, appAppleId: environment == .production ? rules.policy.appAppleId : nil,
            transaction: refund.transaction, renewal: nil, subscriptionStatus: nil,
            familyShared: refund.transaction.inAppOwnershipType == OwnershipType.familyShared.rawValue,
            signedDateMs: refund.revocationDateMs, receivedAtMs: receivedAtMs)
        let key = refund.transaction.originalTransactionId ?? eventId
        return NotificationEvent(event: event, key: Array(key.utf8))
    }
}
