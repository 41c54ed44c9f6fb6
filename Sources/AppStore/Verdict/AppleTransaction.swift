import ReceiptModel
import ServiceSupport

/// One purchase as Apple's data shows it (`TransactionFields`, read through: `transaction.productId`), with what the
/// source could not read. Part of `AppleReceipt`, the verdict rules' input.
///
/// Source-independent: verifyReceipt's `in_app` / `latest_receipt_info` entries decode into it
/// (`AppleTransaction+VerifyReceipt.swift`), and an App Store Server API or StoreKit 2 source fills the same fields
/// from a signed transaction (`SignedTransactionMapping`), so the rules never see a wire format.
///
/// A source must never drop evidence of a refund: a cancellation or revocation field that is present but cannot be
/// read is named in `unreadableCancellationFields`, which makes the transaction not creditable (fail closed). The
/// same holds for the other fields money depends on (`quantity`, `is_upgraded`): `unreadableCreditingFields`.
public struct AppleTransaction: CarriesTransactionFields, Sendable, Equatable {
    public var fields: TransactionFields
    /// Cancellation or revocation fields Apple's data carries but the source could not read (for verifyReceipt:
    /// `cancellation_date_ms`, `cancellation_date`, `cancellation_date_pst`, `cancellation_reason`). Not empty means
    /// "Apple may have refunded this": the transaction is never creditable.
    public var unreadableCancellationFields: [String]
    /// `quantity` or `is_upgraded` present but unreadable: how much to credit, or whether to credit at all, is
    /// unknown, so the transaction is never creditable.
    public var unreadableCreditingFields: [String]

    public init(
        _ fields: TransactionFields, unreadableCancellationFields: [String] = [],
        unreadableCreditingFields: [String] = []
    ) {
        self.fields = fields
        self.unreadableCancellationFields = unreadableCancellationFields
        self.unreadableCreditingFields = unreadableCreditingFields
    }

    /// Apple's data shows a refund or revocation, or a cancellation field that could not be read (fail closed).
    public var showsCancellation: Bool {
        fields.cancellationDateMs != nil || fields.cancellationReason != nil || fields.revocationType != nil
            || fields.revocationPercentage != nil || !unreadableCancellationFields.isEmpty
    }
}
