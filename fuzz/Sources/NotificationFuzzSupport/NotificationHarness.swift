import AppStore
import Catalog
import Crypto
import Foundation
import FuzzSupport
import Kafka
import Notifications
import ReceiptModel
import SignedData
import TestPKI
import Verifier

/// The verifier's notification processing as the fuzz targets run it: `NotificationProcessor` trusting Apple's test
/// CA (Apple's mock signed data verifies) and a fixed minted PKI (`fuzz/fixtures/notification-pki`, from
/// `fake-appstore mint-pki`: the fake App Store's notifications in the corpus verify, and the payload target signs
/// with its key), with the fake's products in a catalog. `check` runs a record through it and checks the
/// properties every consumed notification must have.
public enum NotificationHarness {
    public static let allowedBundleIds: Set<String> = ["com.example.game", "com.example"]
    public static let policy = NotificationPolicy(
        allowedBundleIds: allowedBundleIds, sandboxPolicy: .accept, appAppleId: 1_234_567_890)
    /// The fake's products. Built on each use rather than kept in a global: a `JSONValue` (an indirect enum) keeps
    /// its case in the spare bits of its box pointer, which LeakSanitizer does not recognize as a pointer, so a
    /// global holding one is reported as a leak at exit.
    public static var catalog: ProductCatalog {
        ProductCatalog(products: [
            "gems_100": .init(type: .consumable, credit: .object(["item": .string("gems"), "amount": .integer(100)])),
            "one_month_subscription": .init(type: .autoRenewable, credit: .object(["entitlement": .string("pro")])),
        ])
    }

    /// Gives the processors `catalog`, built on each use (see there).
    struct FreshCatalog: ProductCatalogSource {
        var currentCatalog: ProductCatalog { NotificationHarness.catalog }
    }
    public static let factory = OutputFactory(topics: .init())

    static let pkiDirectory = "fuzz/fixtures/notification-pki"
    public static let roots: [Certificate] = {
        do {
            let apple = try Certificate(
                der: FuzzFixtures.bytes("Tests/SignedDataTests/Fixtures/apple-mock-signed-data/testCA.der"))
            let minted = try Certificate.load(path: FuzzFixtures.path("\(pkiDirectory)/root.pem"))
            return [apple] + minted
        } catch {
            FuzzDriver.violated("the trust anchors are unreadable: \(error)")
        }
    }()

    /// The fixed PKI's leaf key and `x5c` chain, as the fake App Store signs notifications.
    public static let signer: JWSSigner = {
        do {
            return JWSSigner(
                privateKey: try ECPrivateKey.load(path: FuzzFixtures.path("\(pkiDirectory)/signing-key.pem")),
                chain: try Certificate.load(path: FuzzFixtures.path("\(pkiDirectory)/chain.pem")))
        } catch {
            FuzzDriver.violated("the fixed signing PKI is unreadable: \(error)")
        }
    }()

    /// Milliseconds in which every certificate of `signer`'s chain is valid (a signedDate inside verifies).
    public static let validWindowMs: ClosedRange<Int64> = {
        let notBefore = signer.chain.map(\.notBefore).max() ?? 0
        let notAfter = signer.chain.map(\.notAfter).min() ?? 0
        // A second of margin on both ends: validity is checked at whole seconds.
        return (notBefore + 1) * 1000...(notAfter - 1) * 1000
    }()

    static let cached = NotificationProcessor(
        verifier: AppleSignedDataVerifier(trustedRoots: roots), policy: policy, catalog: FreshCatalog())
    static let uncached = NotificationProcessor(
        verifier: AppleSignedDataVerifier(trustedRoots: roots, cacheCapacity: 0), policy: policy,
        catalog: FreshCatalog())

    /// Processes the consumed record `value` and checks:
    /// - a verifier with a chain cache and one without give the same outcome, and so does a second run (the cache
    ///   never changes what is accepted or how);
    /// - an event names an allowed bundle, Production or Sandbox, the type `NotificationEventMapping` gives its
    ///   `notificationType`, a transaction for every money event, the transaction's `credit_key`, creditability by
    ///   the money rules (refunded: never; creditable: listed in the catalog, with its `credit`), `family_shared`
    ///   from the ownership type, and the key (original transaction id, else event id when nothing else names it);
    /// - the event record the verifier writes decodes to that same event;
    /// - a refusal has one of the four notification reasons, does not quote the signed payload, and its DLQ record
    ///   keeps the consumed bytes exactly (replay depends on it).
    /// - Returns: the outcome, for target-specific properties.
    @discardableResult
    public static func check(_ value: [UInt8]) -> Result<NotificationEvent, NotificationRejection> {
        let outcome = cached.process(value)
        guard uncached.process(value) == outcome else {
            FuzzDriver.violated("a verifier with a chain cache and one without process a notification differently")
        }
        guard cached.process(value) == outcome else {
            FuzzDriver.violated("processing the same notification twice gives different outcomes")
        }
        switch outcome {
        case .success(let notification): checkEvent(notification, value: value)
        case .failure(let rejection): checkRejection(rejection, value: value)
        }
        return outcome
    }

    private static func checkEvent(_ notification: NotificationEvent, value: [UInt8]) {
        let event = notification.event
        guard !event.eventId.isEmpty, !event.notificationType.isEmpty else {
            FuzzDriver.violated("an event without event_id or notification_type")
        }
        guard let bundleId = event.bundleId, allowedBundleIds.contains(bundleId) else {
            FuzzDriver.violated("an event for a bundle that is not allowed")
        }
        guard let environment = event.environment, environment == .production || environment == .sandbox else {
            FuzzDriver.violated("an event from an environment other than Production or Sandbox")
        }
        guard event.type == NotificationEventMapping.eventType(
            notificationType: event.notificationType, subtype: event.subtype)
        else {
            FuzzDriver.violated("an event whose type is not the mapping of its notification_type")
        }
        if NotificationEventMapping.requiresTransaction(event.type), event.transaction == nil {
            FuzzDriver.violated("a \(event.type.rawValue) event without a transaction")
        }
        if let transaction = event.transaction {
            checkTransaction(transaction, environment: environment, familyShared: event.familyShared)
        } else if event.familyShared {
            FuzzDriver.violated("family_shared without a transaction")
        }
        let expectedKey = event.transaction?.originalTransactionId ?? (event.renewal == nil ? event.eventId : nil)
        if let expectedKey, notification.key != Array(expectedKey.utf8) {
            FuzzDriver.violated("an event keyed by something other than its original transaction id or event id")
        }
        if let record = try? MessageCoding.decode(NotificationRecord.self, from: value),
            record.receivedAtMs != event.receivedAtMs
        {
            FuzzDriver.violated("an event whose received_at_ms is not the record's")
        }
        let written = factory.event(notification)
        guard (try? JSONSerialization.jsonObject(with: Data(written.value))) is [String: Any] else {
            FuzzDriver.violated("the event record is not a JSON object")
        }
        guard let decoded = try? MessageCoding.decode(PurchaseEvent.self, from: written.value), decoded == event else {
            FuzzDriver.violated("the event record does not decode to the event it was written from")
        }
        guard written.key == notification.key,
            written.headers.contains(where: { $0.name == MessageHeaders.eventId && $0.value == event.eventId })
        else {
            FuzzDriver.violated("the event record's key or event-id header is not the event's")
        }
    }

    private static func checkTransaction(
        _ transaction: VerifiedTransaction, environment: AppStoreEnvironment, familyShared: Bool
    ) {
        // The purchase, restated independently of PurchaseIdentity: a subscription period's web order line item id
        // (an id: not empty, not all zeros), else the original transaction id, else the transaction's own id.
        let prefix = "apple:\(environment.rawValue.lowercased()):"
        let period = transaction.webOrderLineItemId.flatMap { $0.isEmpty || $0.allSatisfy { $0 == "0" } ? nil : $0 }
        let original = transaction.originalTransactionId.flatMap {
            $0.isEmpty || $0.allSatisfy { $0 == "0" } ? nil : $0
        }
        let expected = period.map { prefix + "period:" + $0 } ?? prefix + (original ?? transaction.transactionId)
        guard transaction.creditKey == expected else {
            FuzzDriver.violated("a credit_key that is neither the transaction's period nor its original purchase")
        }
        if transaction.cancellationDateMs != nil, transaction.creditable {
            FuzzDriver.violated("a refunded or revoked transaction is creditable")
        }
        if transaction.creditable {
            guard let entry = catalog[transaction.productId], transaction.credit == entry.credit else {
                FuzzDriver.violated("a creditable transaction whose product or credit is not the catalog's")
            }
        }
        guard familyShared == (transaction.inAppOwnershipType == OwnershipType.familyShared.rawValue) else {
            FuzzDriver.violated("family_shared disagrees with the transaction's in_app_ownership_type")
        }
    }

    private static func checkRejection(_ rejection: NotificationRejection, value: [UInt8]) {
        let reasons: Set<Reason> = [.invalidSignature, .bundleMismatch, .sandboxNotAllowed, .malformedSubmission]
        guard reasons.contains(rejection.reason) else {
            FuzzDriver.violated("a notification refused with reason \(rejection.reason.rawValue)")
        }
        if let record = try? MessageCoding.decode(NotificationRecord.self, from: value),
            record.signedPayload.utf8.count >= 32, rejection.message.contains(record.signedPayload)
        {
            FuzzDriver.violated("a refusal's message quotes the signed payload")
        }
        let message = KafkaMessage(
            topic: factory.topics.notifications, partition: 0, offset: 7, key: nil, value: value)
        let dead = factory.deadLetter(
            message: message, submissionId: nil, reason: rejection.reason, text: rejection.message, appleStatus: nil,
            attempts: 0, nowMs: 1)
        guard let record = try? MessageCoding.decode(DeadLetterRecord.self, from: dead.value),
            ReceiptModel.Base64.decode(record.originalValue) ?? [] == value, record.reason == rejection.reason
        else {
            FuzzDriver.violated("the DLQ record of a refused notification does not keep its bytes and reason")
        }
    }
}
