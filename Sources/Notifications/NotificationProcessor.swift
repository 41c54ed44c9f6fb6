import AppStore
import Catalog
import ReceiptModel
import ServiceSupport
import SignedData

/// A verified notification, ready to be written: the event and its message key.
public struct NotificationEvent: Sendable, Equatable {
    public let event: PurchaseEvent
    /// `original_transaction_id` (of the transaction, else of the renewal info), else `event_id`.
    public let key: [UInt8]

    /// The event's JSON exactly as the verifier writes it to `EVENTS_TOPIC`.
    public var value: [UInt8] { PurchaseEventJSON.encode(event) }
}

/// Turns one `NOTIFICATIONS_TOPIC` record into a purchase event, or says why it cannot be one. Pure apart from the
/// shared chain cache of its `AppleSignedDataVerifier` (and its revocation checker's OCSP cache, the only network
/// use): no Kafka, no clock, so every rule is unit-tested.
///
/// In order (the first failure decides the DLQ reason):
/// 1. the message is a `NotificationRecord` of schema version 1 and at most `MessageLimits.maximumValueBytes` long
///    (not parsed otherwise), else `malformed_submission`;
/// 2. `signed_payload` verifies (ES256, x5c chain to our roots at its `signedDate`, Apple's marker OIDs, and with
///    `APPLE_REVOCATION_CHECK=ocsp` no revoked certificate), else `invalid_signature`; when the revocation status of
///    any of its JWS is unavailable the notification is not judged: `retryLater` (`isRetryable`), held and verified
///    again by the engine, never a DLQ record; the verified payload has a `notificationUUID` and a
///    `notificationType`, else `malformed_submission`;
/// 3. its `bundleId` is in `ALLOWED_BUNDLE_IDS`, else `bundle_mismatch`;
/// 4. its environment is Production or Sandbox (`sandbox_not_allowed` for Xcode and LocalTesting, always, and for
///    Sandbox under `SANDBOX_POLICY=reject`); a Production notification carries `APPLE_APP_APPLE_ID` when that is set,
///    else `bundle_mismatch`;
/// 5. `data.signedTransactionInfo`, `data.signedRenewalInfo` and `appData.signedAppTransactionInfo` (RESCIND_CONSENT:
///    the event's `app_transaction_id`), when present, verify the same way (`invalid_signature`), are of the same
///    bundle (`bundle_mismatch`) and environment (`malformed_submission`);
/// 6. the event type comes from `NotificationEventMapping`; a money event (credit, debit, recredit, revoke) without
///    a usable transaction is `malformed_submission` (it could not be applied). The transaction is judged by the
///    money rules (`VerdictRules.normalize` with the product catalog), exactly as results judge transactions.
public struct NotificationProcessor: Sendable {
    public let verifier: AppleSignedDataVerifier
    public let policy: NotificationPolicy
    /// `PRODUCT_CATALOG_FILE` (nil: no catalog; transactions carry no `credit`).
    public let catalog: (any ProductCatalogSource)?

    public init(
        verifier: AppleSignedDataVerifier, policy: NotificationPolicy, catalog: (any ProductCatalogSource)? = nil
    ) {
        self.verifier = verifier
        self.policy = policy
        self.catalog = catalog
    }

    /// The event for the consumed record `value`, or why there is none.
    public func process(_ value: [UInt8]) -> Result<NotificationEvent, NotificationRejection> {
        do {
            return .success(try event(from: value))
        } catch {
            return .failure(error)
        }
    }

    private func event(from value: [UInt8]) throws(NotificationRejection) -> NotificationEvent {
        let record = try Self.record(value)
        // Each JWS payload is parsed once: the signedDate the chain is validated at is read from the decoded value.
        let payload: NotificationPayload
        let verified: VerifiedJWS
        do {
            (payload, verified) = try verifier.verify(record.signedPayload, as: NotificationPayload.self) {
                $0.signedDate
            }
        } catch {
            throw NotificationRejection.signedData(error, "signedPayload")
        }
        guard let uuid = payload.notificationUUID, !uuid.isEmpty else {
            throw NotificationRejection(
                .malformedSubmission, "the verified notification has no notificationUUID (the event id)")
        }
        guard let notificationType = payload.notificationType?.rawValue, !notificationType.isEmpty else {
            throw NotificationRejection(
                .malformedSubmission, "the verified notification has no notificationType", notificationUUID: uuid)
        }
        let metadata = NotificationAppMetadata(payload)
        let (bundleId, environment) = try check(metadata, uuid: uuid)

        let transaction = try signedTransaction(
            payload.data?.signedTransactionInfo, bundleId: bundleId, environment: environment, uuid: uuid)
        let renewal = try signedRenewal(payload.data?.signedRenewalInfo, environment: environment, uuid: uuid)
        let appTransaction = try signedAppTransaction(
            payload.appData?["signedAppTransactionInfo"], bundleId: bundleId, environment: environment, uuid: uuid)
        let subtype = payload.subtype?.rawValue
        let type = NotificationEventMapping.eventType(notificationType: notificationType, subtype: subtype)
        let catalog = self.catalog?.currentCatalog
        let normalized = transaction.flatMap {
            SignedTransactionNormalizer.normalize($0, environment: environment, catalog: catalog)
        }
        if NotificationEventMapping.requiresTransaction(type), normalized == nil {
            let what =
                transaction == nil
                ? "no signedTransactionInfo"
                : "a signedTransactionInfo without transactionId, productId or purchaseDate"
            throw NotificationRejection(
                .malformedSubmission,
                "a \(notificationType) notification carries \(what), so its \(type.rawValue) event could not be "
                    + "applied; look the transaction up with the App Store Server API",
                notificationUUID: uuid)
        }
        let event = PurchaseEvent(
            eventId: uuid, type: type, notificationType: notificationType, subtype: subtype, environment: environment,
            bundleId: bundleId, appAppleId: metadata.appAppleId, transaction: normalized,
            renewal: renewal.map(Self.summary), subscriptionStatus: payload.data?.status.map { Int(clamping: $0) },
            familyShared: normalized?.inAppOwnershipType == OwnershipType.familyShared.rawValue,
            signedDateMs: verified.signedDateMs, receivedAtMs: record.receivedAtMs,
            appTransactionId: appTransaction?.appTransactionId,
            consumptionRequestReason: payload.data?.consumptionRequestReason)
        let key = normalized?.originalTransactionId ?? renewal?.originalTransactionId ?? uuid
        return NotificationEvent(event: event, key: Array(key.utf8))
    }

    private static func record(_ value: [UInt8]) throws(NotificationRejection) -> NotificationRecord {
        guard value.count <= MessageLimits.maximumValueBytes else {
            throw NotificationRejection(
                .malformedSubmission,
                "not a notification record: \(value.count) bytes, over the verifier's limit of "
                    + "\(MessageLimits.maximumValueBytes) (Apple's notifications are a few KiB); not read")
        }
        let record: NotificationRecord
        do {
            record = try MessageCoding.decode(NotificationRecord.self, from: value)
        } catch {
            throw NotificationRejection(
                .malformedSubmission, "not a notification record: \(MessageCoding.describe(error))")
        }
        guard record.schemaVersion == NotificationRecord.currentSchemaVersion else {
            throw NotificationRejection(
                .malformedSubmission,
                "notification record schema_version \(record.schemaVersion) is unknown to this verifier (it reads "
                    + "\(NotificationRecord.currentSchemaVersion)); replay it after upgrading")
        }
        return record
    }

    /// Bundle, environment and app checks of the notification itself.
    private func check(_ metadata: NotificationAppMetadata, uuid: String) throws(NotificationRejection)
        -> (bundleId: String, environment: AppStoreEnvironment)
    {
        guard let bundleId = metadata.bundleId, policy.allowedBundleIds.contains(bundleId) else {
            let shown = metadata.bundleId.map { "'\($0)'" } ?? "absent"
            throw NotificationRejection(
                .bundleMismatch, "the notification's bundleId (\(shown)) is not in ALLOWED_BUNDLE_IDS",
                notificationUUID: uuid)
        }
        let environment = try Self.environment(metadata.environment, of: "the notification", uuid: uuid)
        if environment == .sandbox, policy.sandboxPolicy == .reject {
            throw NotificationRejection(
                .sandboxNotAllowed, "a Sandbox notification, and SANDBOX_POLICY is reject", notificationUUID: uuid)
        }
        if environment == .production, let expected = policy.appAppleId, metadata.appAppleId != expected {
            let shown = metadata.appAppleId.map(String.init) ?? "none"
            throw NotificationRejection(
                .bundleMismatch,
                "the Production notification is for appAppleId \(shown), not APPLE_APP_APPLE_ID \(expected)",
                notificationUUID: uuid)
        }
        return (bundleId, environment)
    }

    /// Production or Sandbox; Xcode and LocalTesting data are never accepted (they are signed on a developer's Mac).
    private static func environment(_ raw: String?, of what: String, uuid: String) throws(NotificationRejection)
        -> AppStoreEnvironment
    {
        switch raw {
        case SignedEnvironment.production.rawValue: return .production
        case SignedEnvironment.sandbox.rawValue: return .sandbox
        case SignedEnvironment.xcode.rawValue, SignedEnvironment.localTesting.rawValue:
            throw NotificationRejection(
                .sandboxNotAllowed, "\(what) comes from the \(raw ?? "") environment, which is never accepted",
                notificationUUID: uuid)
        default:
            let shown = raw.map { "'\($0)'" } ?? "no environment"
            throw NotificationRejection(
                .malformedSubmission, "\(what) names \(shown); only Production and Sandbox are known",
                notificationUUID: uuid)
        }
    }

    private func signedTransaction(
        _ jws: String?, bundleId: String, environment: AppStoreEnvironment, uuid: String
    ) throws(NotificationRejection) -> JWSTransactionPayload? {
        guard let jws else { return nil }
        let transaction = try verified(
            jws, as: JWSTransactionPayload.self, field: "data.signedTransactionInfo", uuid: uuid) { $0.signedDate }
        try Self.sameApp(
            transaction.bundleId, transaction.environment, of: "data.signedTransactionInfo",
            environmentField: "data.signedTransactionInfo", as: bundleId, environment, uuid: uuid)
        return transaction
    }

    /// `appData.signedAppTransactionInfo` (RESCIND_CONSENT), verified like the transaction: the same roots, the
    /// notification's bundle and environment. Its environment is its `receiptType` (Apple's app transaction has no
    /// `environment` member) and its chain is validated at its `receiptCreationDate`.
    private func signedAppTransaction(
        _ value: JSONValue?, bundleId: String, environment: AppStoreEnvironment, uuid: String
    ) throws(NotificationRejection) -> JWSAppTransactionPayload? {
        guard let value, value != .null else { return nil }
        guard case .string(let jws) = value else {
            throw NotificationRejection(
                .malformedSubmission, "appData.signedAppTransactionInfo is not a string", notificationUUID: uuid)
        }
        let app = try verified(
            jws, as: JWSAppTransactionPayload.self, field: "appData.signedAppTransactionInfo", uuid: uuid,
            signedDate: \.validationDateMs)
        try Self.sameApp(
            app.bundleId, app.environment, of: "appData.signedAppTransactionInfo",
            environmentField: "appData.signedAppTransactionInfo's receiptType", as: bundleId, environment, uuid: uuid)
        return app
    }

    private func signedRenewal(_ jws: String?, environment: AppStoreEnvironment, uuid: String)
        throws(NotificationRejection) -> JWSRenewalInfoPayload?
    {
        guard let jws else { return nil }
        let renewal = try verified(
            jws, as: JWSRenewalInfoPayload.self, field: "data.signedRenewalInfo", uuid: uuid) { $0.signedDate }
        try Self.sameEnvironment(renewal.environment, environment, of: "data.signedRenewalInfo", uuid: uuid)
        return renewal
    }

    /// Signed data of the notification's `field`, verified against Apple's roots at the date `signedDate` reads
    /// and decoded as `type`; any failure is the notification's rejection, naming the field.
    private func verified<Payload: Decodable>(
        _ jws: String, as type: Payload.Type, field: String, uuid: String, signedDate: (Payload) -> Int64?
    ) throws(NotificationRejection) -> Payload {
        do {
            return try verifier.verify(jws, as: type, signedDate: signedDate).payload
        } catch {
            throw NotificationRejection.signedData(error, field, notificationUUID: uuid)
        }
    }

    /// Signed data inside the notification (`what`) must be for the notification's app and environment: another
    /// bundle is `bundle_mismatch`; another environment (read from `environmentField`) is malformed.
    private static func sameApp(
        _ signedBundleId: String?, _ signedEnvironment: SignedEnvironment?, of what: String, environmentField: String,
        as bundleId: String, _ environment: AppStoreEnvironment, uuid: String
    ) throws(NotificationRejection) {
        guard signedBundleId == bundleId else {
            throw NotificationRejection(
                .bundleMismatch,
                "\(what) is for bundleId '\(signedBundleId ?? "")', the notification for '\(bundleId)'",
                notificationUUID: uuid)
        }
        try sameEnvironment(signedEnvironment, environment, of: environmentField, uuid: uuid)
    }

    private static func sameEnvironment(
        _ raw: SignedEnvironment?, _ expected: AppStoreEnvironment, of what: String, uuid: String
    ) throws(NotificationRejection) {
        let environment = try Self.environment(raw?.rawValue, of: what, uuid: uuid)
        guard environment == expected else {
            throw NotificationRejection(
                .malformedSubmission,
                "\(what) is from \(environment.rawValue), the notification from \(expected.rawValue)",
                notificationUUID: uuid)
        }
    }

    private static func summary(_ renewal: JWSRenewalInfoPayload) -> RenewalSummary {
        RenewalSummary(
            autoRenewStatus: renewal.autoRenewStatus.map { Int(clamping: $0) },
            autoRenewProductId: renewal.autoRenewProductId,
            expirationIntent: renewal.expirationIntent.map { Int(clamping: $0) },
            gracePeriodExpiresDateMs: renewal.gracePeriodExpiresDate,
            isInBillingRetryPeriod: renewal.isInBillingRetryPeriod,
            renewalBillingPlanType: renewal.renewalBillingPlanType, appTransactionId: renewal.appTransactionId,
            renewalPrice: renewal.renewalPrice, currency: renewal.currency, offerType: renewal.offerType,
            offerIdentifier: renewal.offerIdentifier, offerDiscountType: renewal.offerDiscountType,
            offerPeriod: renewal.offerPeriod)
    }
}
