import AppStore
import Catalog
import FuzzSupport
@testable import Notifications
import ReceiptModel

@testable import Verifier

// PRODUCT_CATALOG_FILE's parser (ProductCatalog.parse; the file is re-read whenever it changes).
// Properties: no crash, no leak; parsing is deterministic; a parsed catalog has only non-empty product ids with an
// object as `credit`; each entry's `credit`, opaque to the pipeline, reaches crediting unchanged: in a result
// (MessageCoding) and in a purchase event (the verifier's own event writer) it decodes to the catalog's value.
let factory = OutputFactory(topics: .init())

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    let parsed = Result { () throws(ProductCatalogError) in try ProductCatalog.parse(bytes) }
    let again = Result { () throws(ProductCatalogError) in try ProductCatalog.parse(bytes) }
    switch (parsed, again) {
    case (.success(let catalog), .success(let second)):
        guard catalog == second else { FuzzDriver.violated("the same catalog parses to different catalogs") }
        for (productId, entry) in catalog.products.sorted(by: { $0.key < $1.key }).prefix(8) {
            guard !productId.isEmpty, case .object = entry.credit else {
                FuzzDriver.violated("a catalog entry with an empty product id or a credit that is not an object")
            }
            checkCreditTravels(productId, entry)
        }
    case (.failure(let first), .failure(let second)):
        guard first == second else { FuzzDriver.violated("the same catalog fails differently") }
    default:
        FuzzDriver.violated("the same catalog parses once and fails once")
    }
    return 0
}

func checkCreditTravels(_ productId: String, _ entry: ProductCatalog.Entry) {
    let transaction = VerifiedTransaction(
        TransactionFields(
            transactionId: "2000000000000001", originalTransactionId: "2000000000000001", productId: productId,
            quantity: 1, purchaseDateMs: 1_764_489_600_000, productType: entry.type),
        credit: entry.credit, environment: .production)
    let result = VerificationResult(
        submissionId: "s-1", orderId: nil, userId: nil, outcome: .verified, reason: nil, message: nil,
        appleStatus: 0, environment: .production, bundleId: "com.example.game", transactions: [transaction],
        attempts: 1, verifiedAtMs: 1_764_489_600_000)
    let value = VerificationResultJSON.encode(result)
    guard let decoded = try? MessageCoding.decode(VerificationResult.self, from: value),
        decoded.transactions.first?.credit == entry.credit
    else {
        FuzzDriver.violated("a catalog credit does not survive a result's encoding unchanged")
    }
    let event = PurchaseEvent(
        eventId: "e-1", type: .credit, notificationType: "ONE_TIME_CHARGE", subtype: nil, environment: .production,
        bundleId: "com.example.game", appAppleId: nil, transaction: transaction, renewal: nil,
        subscriptionStatus: nil, familyShared: false, signedDateMs: 1_764_489_600_000,
        receivedAtMs: 1_764_489_600_001)
    let record = factory.event(NotificationEvent(event: event, key: Array("2000000000000001".utf8)))
    guard let read = try? MessageCoding.decode(PurchaseEvent.self, from: record.value),
        read.transaction?.credit == entry.credit
    else {
        FuzzDriver.violated("a catalog credit does not survive a purchase event's encoding unchanged")
    }
}

FuzzDriver.run(testOneInput)
