import AppStoreServerAPI
import ReceiptModel

/// Picks the backend for each proof: `receipt_data` to verifyReceipt or, with `RECEIPT_BACKEND=server-api`, to the
/// Server API backend; `signed_transaction`, `signed_app_transaction` and `transaction_id` always to the Server API
/// backend (which verifies signed data locally and answers `config_error` for a transaction id when it has no API
/// key).
public final class BackendRouter: ReceiptVerificationBackend {
    private let verifyReceipt: VerifyReceiptBackend
    private let serverAPI: ServerAPIBackend
    private let receiptBackend: ServerAPISettings.ReceiptBackend

    public init(
        verifyReceipt: VerifyReceiptBackend, serverAPI: ServerAPIBackend,
        receiptBackend: ServerAPISettings.ReceiptBackend
    ) {
        self.verifyReceipt = verifyReceipt
        self.serverAPI = serverAPI
        self.receiptBackend = receiptBackend
    }

    private func backend(for proof: PurchaseProof) -> any ReceiptVerificationBackend {
        if case .receipt = proof, receiptBackend == .verifyReceipt { return verifyReceipt }
        return serverAPI
    }

    public func verify(_ request: BackendRequest, completion: @escaping @Sendable (BackendAnswer) -> Void) {
        backend(for: request.proof).verify(request, completion: completion)
    }

    public func source(for proof: PurchaseProof) -> VerificationSource {
        backend(for: proof).source(for: proof)
    }

    /// Closes both (they share one HTTP client; closing it twice is harmless).
    public func close() {
        verifyReceipt.close()
        serverAPI.close()
    }
}
