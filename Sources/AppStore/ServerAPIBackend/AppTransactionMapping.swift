import ReceiptModel
import SignedData

/// A verified app transaction payload mapped to `AppTransactionRules`' input, whichever copy verified it (the
/// device's, or Get App Transaction Info's).
public enum AppTransactionMapping {
    /// `payload` in `environment` (the payload's own, already read with `SignedTransactionMapping.environment`).
    public static func appTransaction(
        _ payload: JWSAppTransactionPayload, environment: AppStoreEnvironment
    ) -> AppleAppTransaction {
        AppleAppTransaction(
            environment: environment, bundleId: payload.bundleId, appTransactionId: payload.appTransactionId,
            appAppleId: payload.appAppleId, applicationVersion: payload.applicationVersion,
            originalApplicationVersion: payload.originalApplicationVersion,
            originalPurchaseDateMs: payload.originalPurchaseDate, receiptCreationDateMs: payload.receiptCreationDate,
            preorderDateMs: payload.preorderDate, receiptType: payload.receiptType,
            originalPlatform: payload.originalPlatform, versionExternalIdentifier: payload.versionExternalIdentifier,
            signedDateMs: payload.signedDate)
    }
}
