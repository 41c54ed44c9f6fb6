import ReceiptModel
import SignedData

/// A verified app transaction payload mapped to `AppTransactionRules`' input, whichever copy verified it (the
/// device's, or Get App Transaction Info's).
public enum AppTransactionMapping {
    /// `payload` in `environment` (the payload's own, already read with `SignedTransactionMapping.environment`).
    public static func appTransaction(
        _ payload: JWSAppTransactionPayload, environment: AppStoreEnvironment
    ) -> VerifiedAppTransaction {
        VerifiedAppTransaction(
            appTransactionId: payload.appTransactionId, bundleId: payload.bundleId, appAppleId: payload.appAppleId,
            applicationVersion: payload.applicationVersion,
            originalApplicationVersion: payload.originalApplicationVersion,
            originalPurchaseDateMs: payload.originalPurchaseDate, receiptCreationDateMs: payload.receiptCreationDate,
            preorderDateMs: payload.preorderDate, receiptType: payload.receiptType,
            originalPlatform: payload.originalPlatform, versionExternalIdentifier: payload.versionExternalIdentifier,
            environment: environment, signedDateMs: payload.signedDate)
    }
}
