@testable import Catalog
@testable import HTTPClient
import ReceiptModel
import ServiceSupport
import Testing

@testable import AppStore

/// The money rules (`VerdictRules`), as a table a reviewer reads as their specification.
///
/// Each row is Apple's data (a verifyReceipt body as Apple writes it, decoded by the real decoder and backend, or
/// the evidence an App Store Server API / StoreKit 2 source fills in), the submission's expectations, the operator's
/// policy and catalog, and what the result must say: outcome, reason, and for each transaction it lists whether it is
/// creditable, what to credit and the product type. Every row also checks the invariant that a rejected result never
/// lists a creditable transaction.
@Suite struct MoneyRulesTests {
    // MARK: The table

    static let rows: [Row] =
        refunds + environments + receiptChecks + productTypes + catalogRows + accountRows + purchaseIdentity
        + quantities + upgrades + tokenPolicy + familySharing + notCreditableReasons

    static let refunds: [Row] = [
        Row(
            "a purchase without cancellation fields is creditable",
            .verifyReceipt(body(inApp: [entry("1")])), transaction: "1",
            .verified, [.init("1", creditable: true)]),
        Row(
            "cancellation_date_ms on the in_app entry: the expected transaction is refunded",
            .verifyReceipt(body(inApp: [entry("1", cancelledMs)])), transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false, cancelledAtMs: 1_571_477_448_000)]),
        Row(
            "cancellation_date alone (Apple's '2019-10-19 09:30:48 Etc/GMT' text) is a refund",
            .verifyReceipt(body(inApp: [entry("1", cancelledText)])), transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false, cancelledAtMs: 1_571_477_448_000)]),
        Row(
            "cancellation_date_pst alone is a refund, read in Pacific time",
            .verifyReceipt(
                body(inApp: [entry("1", #","cancellation_date_pst":"2019-10-19 02:30:48 America/Los_Angeles""#)])),
            transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false, cancelledAtMs: 1_571_477_448_000)]),
        Row(
            "cancellation_reason alone is a refund",
            .verifyReceipt(body(inApp: [entry("1", #","cancellation_reason":"0""#)])), transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false)]),
        Row(
            "a refund only in latest_receipt_info (Apple's current state) refunds the in_app transaction",
            .verifyReceipt(body(inApp: [entry("1")], latest: [entry("1", cancelledMs)])), transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false, cancelledAtMs: 1_571_477_448_000)]),
        Row(
            "a refund only in latest_receipt_info, without an expected transaction: listed, not creditable",
            .verifyReceipt(body(inApp: [entry("1"), entry("2")], latest: [entry("1", cancelledText)])),
            .verified, [.init("1", creditable: false, cancelledAtMs: 1_571_477_448_000), .init("2", creditable: true)]),
        Row(
            "without an expected transaction, a refunded purchase is listed not creditable beside a live one",
            .verifyReceipt(body(inApp: [entry("1", cancelledMs + reasonOne), entry("2")])),
            .verified, [.init("1", creditable: false), .init("2", creditable: true)]),
        Row(
            "without an expected transaction, every candidate refunded is refunded",
            .verifyReceipt(body(inApp: [entry("1", cancelledMs), entry("2")], latest: [entry("2", reasonOne)])),
            .rejected(.refunded), [.init("1", creditable: false), .init("2", creditable: false)]),
        Row(
            "an unreadable cancellation_date_ms fails closed",
            .verifyReceipt(body(inApp: [entry("1", #","cancellation_date_ms":"soon""#)])), transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false)], unreadable: ["1"]),
        Row(
            "an unreadable cancellation_date fails closed",
            .verifyReceipt(body(inApp: [entry("1", #","cancellation_date":"2019-13-45 99:00:00 Etc/GMT""#)])),
            transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false)], unreadable: ["1"]),
        Row(
            "an unreadable cancellation_reason fails closed",
            .verifyReceipt(body(inApp: [entry("1", #","cancellation_reason":{"code":1}"#)])), transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false)], unreadable: ["1"]),
        Row(
            "an empty cancellation_date_ms fails closed",
            .verifyReceipt(body(inApp: [entry("1", #","cancellation_date_ms":"""#)])), transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false)], unreadable: ["1"]),
        Row(
            "an unreadable cancellation field only in latest_receipt_info fails closed for the in_app purchase",
            .verifyReceipt(
                body(inApp: [entry("1"), entry("2")], latest: [entry("1", #","cancellation_date_ms":true"#)])),
            .verified, [.init("1", creditable: false), .init("2", creditable: true)], unreadable: ["1"]),
        Row(
            "a readable cancellation date with an unreadable reason is a refund, and the reason is counted",
            .verifyReceipt(body(inApp: [entry("1", cancelledMs + #","cancellation_reason":[1]"#)])), transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false, cancelledAtMs: 1_571_477_448_000)], unreadable: ["1"]),
        Row(
            "a null cancellation field is absent",
            .verifyReceipt(body(inApp: [entry("1", #","cancellation_date_ms":null,"cancellation_reason":null"#)])),
            transaction: "1",
            .verified, [.init("1", creditable: true)]),
        Row(
            "an unusable latest_receipt_info entry with the same id makes the purchase not creditable",
            .verifyReceipt(body(inApp: [entry("1")], latest: [#"{"transaction_id":"1","product_id":"gems_100"}"#])),
            transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false)]),
        Row(
            "a signed transaction revoked for family sharing (revocationType alone) is not creditable",
            .evidence([apple("1", revocationType: "FAMILY_REVOKE")]), transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false)]),
        Row(
            "a prorated refund (revocation date and percentage) is not creditable",
            .evidence([
                apple("1", cancelledAtMs: 1_700_000_000_000, revocationType: "REFUND_PRORATED", percentage: 50_000),
                apple("2"),
            ]),
            .verified, [.init("1", creditable: false, cancelledAtMs: 1_700_000_000_000), .init("2", creditable: true)]),
        Row(
            "a revocation in the transaction history (latest) refunds the signed transaction",
            .evidence([apple("1")], latest: [apple("1", cancelledAtMs: 1_700_000_000_000)]), transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false, cancelledAtMs: 1_700_000_000_000)]),
    ]

    static let environments: [Row] = [
        Row(
            "the environment is Apple's word: a Sandbox body from the production endpoint is Sandbox",
            .verifyReceipt(body(inApp: [entry("1")], environment: "Sandbox"), endpoint: .production),
            .verified, [.init("1", creditable: true)], environment: .sandbox),
        Row(
            "SANDBOX_POLICY=reject applies to Apple's word, whatever endpoint answered",
            .verifyReceipt(body(inApp: [entry("1")], environment: "Sandbox"), endpoint: .production),
            sandboxPolicy: .reject,
            .rejected(.sandboxNotAllowed), [], environment: .sandbox),
        Row(
            "a Production body from the sandbox endpoint is Production",
            .verifyReceipt(body(inApp: [entry("1")], environment: "Production"), endpoint: .sandbox),
            sandboxPolicy: .reject,
            .verified, [.init("1", creditable: true)], environment: .production),
        Row(
            "without environment in the body, the endpoint that answered decides",
            .verifyReceipt(body(inApp: [entry("1")], environment: nil), endpoint: .sandbox),
            .verified, [.init("1", creditable: true)], environment: .sandbox),
        Row(
            "an environment Apple never sends falls back to the endpoint",
            .verifyReceipt(body(inApp: [entry("1")], environment: "Staging"), endpoint: .production),
            .verified, [.init("1", creditable: true)], environment: .production),
    ]

    static let receiptChecks: [Row] = [
        Row(
            "with an expected transaction, the result lists it alone",
            .verifyReceipt(body(inApp: [entry("1"), entry("2")])), transaction: "2", product: "gems_100",
            .verified, [.init("2", creditable: true)]),
        Row(
            "another app's receipt is bundle_mismatch",
            .verifyReceipt(body(inApp: [entry("1")], bundle: "com.evil.app")), .rejected(.bundleMismatch), []),
        Row(
            "a receipt without bundle_id is bundle_mismatch",
            .verifyReceipt(body(inApp: [entry("1")], bundle: nil)), .rejected(.bundleMismatch), []),
        Row(
            "bundle ids compare exactly",
            .verifyReceipt(body(inApp: [entry("1")], bundle: "COM.EXAMPLE.GAME")), .rejected(.bundleMismatch), []),
        Row(
            "any bundle id of ALLOWED_BUNDLE_IDS is accepted",
            .verifyReceipt(body(inApp: [entry("1")], bundle: "com.example.other")),
            .verified, [.init("1", creditable: true)]),
        Row(
            "the bundle rule comes before the sandbox rule",
            .verifyReceipt(body(inApp: [], environment: "Sandbox", bundle: "x")), transaction: "1",
            sandboxPolicy: .reject, .rejected(.bundleMismatch), [], environment: .sandbox),
        Row(
            "a receipt without purchases is no_purchases",
            .verifyReceipt(body(inApp: [])), transaction: "1", .rejected(.noPurchases), []),
        Row(
            "a receipt of only unusable entries is invalid_receipt",
            .verifyReceipt(body(inApp: [#"{"transaction_id":"31"}"#])), .rejected(.invalidReceipt), []),
        Row(
            "an expected transaction whose entry is unusable is invalid_receipt",
            .verifyReceipt(body(inApp: [#"{"transaction_id":"21","product_id":"gems_100"}"#, entry("22")])),
            transaction: "21", .rejected(.invalidReceipt), []),
        Row(
            "an expected transaction absent from the receipt is transaction_not_found",
            .verifyReceipt(body(inApp: [entry("1")], latest: [entry("2")])), transaction: "3",
            .rejected(.transactionNotFound), []),
        Row(
            "the expected transaction may be in latest_receipt_info only",
            .verifyReceipt(body(inApp: [entry("1")], latest: [entry("9")])), transaction: "9",
            .verified, [.init("9", creditable: true)]),
        Row(
            "the expected transaction of another product is product_mismatch, shown not creditable",
            .verifyReceipt(body(inApp: [entry("1", product: "gems_10")])), transaction: "1", product: "gems_100",
            .rejected(.productMismatch), [.init("1", creditable: false)]),
        Row(
            "an expected product without a transaction narrows the candidates",
            .verifyReceipt(body(inApp: [entry("1", product: "a"), entry("2", product: "b")])), product: "b",
            .verified, [.init("2", creditable: true)]),
        Row(
            "an expected product no candidate has is product_mismatch",
            .verifyReceipt(body(inApp: [entry("1", product: "gems_10")])), product: "gems_100",
            .rejected(.productMismatch), []),
        Row(
            "without an expected transaction, every in_app purchase is listed (not latest_receipt_info)",
            .verifyReceipt(body(inApp: [entry("1"), entry("2")], latest: [entry("9")])),
            .verified, [.init("1", creditable: true), .init("2", creditable: true)]),
        Row(
            "with in_app empty (exclude-old-transactions), latest_receipt_info is listed",
            .verifyReceipt(body(inApp: [], latest: [entry("7", subscription)])),
            .verified, [.init("7", creditable: true, type: .autoRenewable, key: "period:1000000056284415")]),
    ]

    static let productTypes: [Row] = [
        Row(
            "an expires date or web order line item makes product_type auto_renewable",
            .verifyReceipt(body(inApp: [entry("1", subscription), entry("2", #","web_order_line_item_id":"5""#)])),
            .verified, [
                .init("1", creditable: true, type: .autoRenewable, key: "period:1000000056284415"),
                .init("2", creditable: true, type: .autoRenewable, key: "period:5"),
            ]),
        Row(
            "product_type is null when nothing says it",
            .verifyReceipt(body(inApp: [entry("1")])), .verified, [.init("1", creditable: true, type: nil)]),
        Row(
            "the catalog's type wins over the subscription guess, but never moves the key (the ids alone)",
            .verifyReceipt(body(inApp: [entry("1", product: "season_pass", subscription)])), catalog: catalog,
            .verified, [
                .init("1", creditable: true, type: .nonRenewing, credit: seasonCredit, key: "period:1000000056284415"),
            ]),
        Row(
            "Apple's own type wins over the catalog's",
            .evidence([apple("1", product: "gems_100", type: .nonConsumable)]), catalog: catalog,
            .verified, [.init("1", creditable: true, type: .nonConsumable, credit: gemsCredit)]),
    ]

    static let catalogRows: [Row] = [
        Row(
            "a listed product carries its catalog credit object and type",
            .verifyReceipt(body(inApp: [entry("1")])), transaction: "1", catalog: catalog,
            .verified, [.init("1", creditable: true, type: .consumable, credit: gemsCredit)]),
        Row(
            "the expected transaction of an unlisted product is unknown_product",
            .verifyReceipt(body(inApp: [entry("1", product: "gems_999")])), transaction: "1", catalog: catalog,
            .rejected(.unknownProduct), [.init("1", creditable: false)]),
        Row(
            "an unlisted product beside a listed one is listed not creditable, without credit",
            .verifyReceipt(body(inApp: [entry("1"), entry("2", product: "gems_999")])), catalog: catalog,
            .verified, [
                .init("1", creditable: true, type: .consumable, credit: gemsCredit), .init("2", creditable: false),
            ]),
        Row(
            "no listed product among the candidates is unknown_product",
            .verifyReceipt(body(inApp: [entry("1", product: "gems_999"), entry("2", product: "x")])), catalog: catalog,
            .rejected(.unknownProduct), [.init("1", creditable: false), .init("2", creditable: false)]),
        Row(
            "every candidate refunded stays refunded, listed or not",
            .verifyReceipt(body(inApp: [entry("1", product: "gems_999", cancelledMs), entry("2", cancelledMs)])),
            catalog: catalog,
            .rejected(.refunded), [
                .init("1", creditable: false), .init("2", creditable: false, type: .consumable, credit: gemsCredit),
            ]),
        Row(
            "one refunded and one unlisted: nothing creditable for want of the catalog, unknown_product",
            .verifyReceipt(body(inApp: [entry("1", cancelledMs), entry("2", product: "gems_999")])), catalog: catalog,
            .rejected(.unknownProduct), [
                .init("1", creditable: false, type: .consumable, credit: gemsCredit), .init("2", creditable: false),
            ]),
        Row(
            "a refunded expected transaction of an unlisted product is refunded",
            .verifyReceipt(body(inApp: [entry("1", product: "gems_999", cancelledMs)])), transaction: "1",
            catalog: catalog,
            .rejected(.refunded), [.init("1", creditable: false)]),
        Row(
            "an empty catalog lists nothing",
            .verifyReceipt(body(inApp: [entry("1")])), catalog: ProductCatalog(products: [:]),
            .rejected(.unknownProduct), [.init("1", creditable: false)]),
    ]

    static let accountRows: [Row] = [
        Row(
            "the expected app_account_token matches case-insensitively and is carried lower-cased",
            .evidence([apple("1", token: upperToken)]), transaction: "1", token: token,
            .verified, [.init("1", creditable: true, token: token)]),
        Row(
            "the expected transaction carrying another token is account_mismatch, not creditable",
            .evidence([apple("1", token: otherToken)]), transaction: "1", token: token,
            .rejected(.accountMismatch), [.init("1", creditable: false, token: otherToken)]),
        Row(
            "the expected transaction carrying no token when one is expected is account_mismatch",
            .evidence([apple("1")]), transaction: "1", token: token,
            .rejected(.accountMismatch), [.init("1", creditable: false)]),
        Row(
            "without an expected transaction, the candidates are narrowed to the expected token",
            .evidence([apple("1", token: otherToken), apple("2", token: token), apple("3")]), token: token,
            .verified, [.init("2", creditable: true, token: token)]),
        Row(
            "without an expected transaction, no candidate with the expected token is account_mismatch",
            .evidence([apple("1", token: otherToken), apple("2")]), token: token,
            .rejected(.accountMismatch), []),
        Row(
            "a verifyReceipt entry without app_account_token, when one is expected, is account_mismatch",
            .verifyReceipt(body(inApp: [entry("1")])), transaction: "1", token: token,
            .rejected(.accountMismatch), [.init("1", creditable: false)]),
        Row(
            "a token is carried, not checked, when none is expected",
            .evidence([apple("1", token: otherToken)]),
            .verified, [.init("1", creditable: true, token: otherToken)]),
        Row(
            "a refunded transaction with the expected token is refunded",
            .evidence([apple("1", cancelledAtMs: 5, token: token)]), transaction: "1", token: token,
            .rejected(.refunded), [.init("1", creditable: false, token: token, cancelledAtMs: 5)]),
    ]

    /// One purchase, one `credit_key`: the subscription period's web order line item id, else the original
    /// transaction id (CONTRACT "Purchase identity").
    static let purchaseIdentity: [Row] = [
        Row(
            "a restore of a non-consumable is the original purchase: one credit_key for both transactions",
            .verifyReceipt(body(inApp: [entry("100"), entry("101", original: "100")])),
            .verified, [.init("100", creditable: true), .init("101", creditable: true, key: "100")]),
        Row(
            "the expected restore transaction carries the original purchase's key",
            .verifyReceipt(body(inApp: [entry("100"), entry("101", original: "100")])), transaction: "101",
            .verified, [.init("101", creditable: true, key: "100")]),
        Row(
            "a restore through the Server API (signed transactions) has the same key",
            .evidence([apple("101", original: "100", type: .nonConsumable)]), transaction: "101",
            .verified, [.init("101", creditable: true, type: .nonConsumable, key: "100")]),
        Row(
            "a refunded original makes its restores non-creditable",
            .verifyReceipt(body(inApp: [entry("100", cancelledMs), entry("101", original: "100")])), transaction: "101",
            .rejected(.refunded), [.init("101", creditable: false, key: "100")]),
        Row(
            "a refund of the purchase seen only on another device's transaction counts (latest_receipt_info)",
            .verifyReceipt(
                body(inApp: [entry("101", original: "100")], latest: [entry("102", original: "100", cancelledMs)])),
            transaction: "101",
            .rejected(.refunded), [.init("101", creditable: false, key: "100")]),
        Row(
            "a subscription period seen on two devices is one period: one key",
            .verifyReceipt(
                body(inApp: [
                    entry("200", original: "200", period("7001")), entry("201", original: "200", period("7001")),
                ])),
            .verified, [
                .init("200", creditable: true, type: .autoRenewable, key: "period:7001"),
                .init("201", creditable: true, type: .autoRenewable, key: "period:7001"),
            ]),
        Row(
            "two renewals of one subscription are two periods: two keys",
            .verifyReceipt(
                body(inApp: [
                    entry("200", original: "200", period("7001")), entry("210", original: "200", period("7002")),
                ])),
            .verified, [
                .init("200", creditable: true, type: .autoRenewable, key: "period:7001"),
                .init("210", creditable: true, type: .autoRenewable, key: "period:7002"),
            ]),
        Row(
            "a refund of one period leaves the other period creditable",
            .verifyReceipt(
                body(
                    inApp: [
                        entry("200", original: "200", period("7001")), entry("210", original: "200", period("7002")),
                    ],
                    latest: [entry("210", original: "200", period("7002") + cancelledMs)])),
            .verified, [
                .init("200", creditable: true, type: .autoRenewable, key: "period:7001"),
                .init("210", creditable: false, type: .autoRenewable, key: "period:7002"),
            ]),
        Row(
            "a signed subscription renewal is keyed by its period, like verifyReceipt's",
            .evidence([apple("210", original: "200", type: .autoRenewable, period: "7002")]), transaction: "210",
            .verified, [.init("210", creditable: true, type: .autoRenewable, key: "period:7002")]),
        Row(
            "the key comes from the ids alone: a web order line item id is a period whatever the type says",
            .evidence([apple("301", original: "300", type: .nonRenewing, period: "9")]), transaction: "301",
            .verified, [.init("301", creditable: true, type: .nonRenewing, key: "period:9")]),
        Row(
            "a purchase without a web order line item id is its original purchase, whatever the catalog says",
            .verifyReceipt(body(inApp: [entry("1", original: "0900", product: "season_pass")])), catalog: catalog,
            .verified, [.init("1", creditable: true, type: .nonRenewing, credit: seasonCredit, key: "0900")]),
        Row(
            "an all-zero web order line item id is no period: the original purchase is the key",
            .verifyReceipt(body(inApp: [entry("200", original: "200", period("0"))])),
            .verified, [.init("200", creditable: true, type: .autoRenewable, key: "200")]),
        Row(
            "two consumable purchases of one product are two purchases: two keys",
            .verifyReceipt(body(inApp: [entry("400"), entry("401")])), catalog: catalog,
            .verified, [
                .init("400", creditable: true, type: .consumable, credit: gemsCredit),
                .init("401", creditable: true, type: .consumable, credit: gemsCredit),
            ]),
        Row(
            "the key is Apple's environment's: a sandbox restore is apple:sandbox:<original>",
            .verifyReceipt(body(inApp: [entry("101", original: "100")], environment: "Sandbox")),
            .verified, [.init("101", creditable: true, key: "100")], environment: .sandbox),
    ]

    /// `quantity`: credit x quantity; unreadable fails closed.
    static let quantities: [Row] = [
        Row(
            "quantity 5 (Apple writes \"5\") is carried: credit five times",
            .verifyReceipt(body(inApp: [entry("1", quantity: "5")])), catalog: catalog,
            .verified, [.init("1", creditable: true, type: .consumable, credit: gemsCredit, quantity: 5)]),
        Row(
            "quantity \"five\" fails closed: not creditable, counted",
            .verifyReceipt(body(inApp: [entry("1", quantity: "five"), entry("2")])),
            .verified, [.init("1", creditable: false), .init("2", creditable: true)], unreadableCrediting: ["1"]),
        Row(
            "quantity 0 fails closed",
            .verifyReceipt(body(inApp: [entry("1", quantity: "0")])), transaction: "1",
            .verified, [.init("1", creditable: false)], unreadableCrediting: ["1"]),
        Row(
            "a signed transaction's quantity 3 is carried",
            .evidence([apple("1", quantity: 3)]), transaction: "1",
            .verified, [.init("1", creditable: true, quantity: 3)]),
    ]

    /// Upgrades: the replaced period is never creditable.
    static let upgrades: [Row] = [
        Row(
            "a period verifyReceipt marks is_upgraded is not creditable; the upgrade's period is",
            .verifyReceipt(
                body(inApp: [
                    entry("500", original: "500", period("8001") + #","is_upgraded":"true""#),
                    entry("501", original: "500", product: "pro_yearly", period("8002")),
                ])),
            .verified, [
                .init("500", creditable: false, type: .autoRenewable, key: "period:8001", upgraded: true),
                .init("501", creditable: true, type: .autoRenewable, key: "period:8002"),
            ]),
        Row(
            "an upgrade seen only in latest_receipt_info makes the submitted period not creditable",
            .verifyReceipt(
                body(
                    inApp: [entry("500", original: "500", period("8001"))],
                    latest: [entry("500", original: "500", period("8001") + #","is_upgraded":"true""#)])),
            transaction: "500",
            .verified, [.init("500", creditable: false, type: .autoRenewable, key: "period:8001", upgraded: true)]),
        Row(
            "a signed transaction with isUpgraded is not creditable",
            .evidence([apple("500", original: "500", type: .autoRenewable, period: "8001", upgraded: true)]),
            transaction: "500",
            .verified, [.init("500", creditable: false, type: .autoRenewable, key: "period:8001", upgraded: true)]),
        Row(
            "an unreadable is_upgraded fails closed",
            .verifyReceipt(body(inApp: [entry("500", original: "500", period("8001") + #","is_upgraded":"maybe""#)])),
            .verified, [.init("500", creditable: false, type: .autoRenewable, key: "period:8001")],
            unreadableCrediting: ["500"]),
    ]

    /// `APP_ACCOUNT_TOKEN_POLICY` and tokens verifyReceipt reports in `latest_receipt_info` only.
    static let tokenPolicy: [Row] = [
        Row(
            "a token only in latest_receipt_info is the in_app transaction's: the expected token matches",
            .verifyReceipt(
                body(inApp: [entry("1")], latest: [entry("1", #","app_account_token":"\#(upperToken)""#)])),
            transaction: "1", token: token,
            .verified, [.init("1", creditable: true, token: token)]),
        Row(
            "a token only in latest_receipt_info narrows the candidates without an expected transaction",
            .verifyReceipt(
                body(inApp: [entry("1"), entry("2")], latest: [entry("2", #","app_account_token":"\#(token)""#)])),
            token: token,
            .verified, [.init("2", creditable: true, token: token)]),
        Row(
            "require: a submission without an expected token is account_mismatch",
            .evidence([apple("1", token: token)]), tokenPolicy: .require,
            .rejected(.accountMismatch), []),
        Row(
            "require: a submission naming the token carried is verified",
            .evidence([apple("1", token: token), apple("2")]), token: token, tokenPolicy: .require,
            .verified, [.init("1", creditable: true, token: token)]),
        Row(
            "require: the expected transaction without a token is account_mismatch",
            .evidence([apple("1")]), transaction: "1", token: token, tokenPolicy: .require,
            .rejected(.accountMismatch), [.init("1", creditable: false)]),
    ]

    /// Family Sharing (issue 24 item 2): a `FAMILY_SHARED` transaction is someone else's payment. It grants
    /// entitlements, never items or currency.
    static let familySharing: [Row] = [
        Row(
            "a family-shared transaction whose catalog credit is an item is not creditable: family_shared_item",
            .evidence([apple("1", ownership: "FAMILY_SHARED")]), transaction: "1", catalog: catalog,
            .verified, [
                .init("1", creditable: false, type: .consumable, credit: gemsCredit, reason: .familySharedItem),
            ]),
        Row(
            "a family-shared transaction whose catalog credit is an entitlement stays creditable",
            .evidence([apple("1", product: "season_pass", ownership: "FAMILY_SHARED")]), transaction: "1",
            catalog: catalog,
            .verified, [.init("1", creditable: true, type: .nonRenewing, credit: seasonCredit)]),
        Row(
            "verifyReceipt's in_app_ownership_type FAMILY_SHARED with an item credit: family_shared_item",
            .verifyReceipt(body(inApp: [entry("1", ownership: "FAMILY_SHARED"), entry("2")])), catalog: catalog,
            .verified, [
                .init("1", creditable: false, type: .consumable, credit: gemsCredit, reason: .familySharedItem),
                .init("2", creditable: true, type: .consumable, credit: gemsCredit),
            ]),
        Row(
            "the purchaser's own transaction of the same product (PURCHASED) is creditable",
            .evidence([apple("1", ownership: "PURCHASED")]), transaction: "1", catalog: catalog,
            .verified, [.init("1", creditable: true, type: .consumable, credit: gemsCredit)]),
        Row(
            "without a catalog there is no credit to judge: a family-shared transaction stays creditable",
            .evidence([apple("1", ownership: "FAMILY_SHARED")]), transaction: "1",
            .verified, [.init("1", creditable: true)]),
        Row(
            "a family-shared entitlement Apple revoked (FAMILY_REVOKE) is revoked",
            .evidence([
                apple(
                    "1", product: "season_pass", cancelledAtMs: 9, revocationType: "FAMILY_REVOKE",
                    ownership: "FAMILY_SHARED"),
            ]),
            catalog: catalog,
            .rejected(.refunded), [
                .init(
                    "1", creditable: false, type: .nonRenewing, credit: seasonCredit, cancelledAtMs: 9,
                    reason: .revoked),
            ]),
    ]

    /// `not_creditable_reason`: every value the rules give, one row each (the other rows check that it is null
    /// exactly when creditable).
    static let notCreditableReasons: [Row] = [
        Row(
            "not_creditable_reason refunded: a readable cancellation date",
            .verifyReceipt(body(inApp: [entry("1", cancelledMs), entry("2")])),
            .verified, [.init("1", creditable: false, reason: .refunded), .init("2", creditable: true)]),
        Row(
            "not_creditable_reason refunded: a prorated refund (revocation type and percentage)",
            .evidence([apple("1", revocationType: "REFUND_PRORATED", percentage: 50_000), apple("2")]),
            .verified, [.init("1", creditable: false, reason: .refunded), .init("2", creditable: true)]),
        Row(
            "not_creditable_reason unreadable: only an unreadable cancellation field",
            .verifyReceipt(body(inApp: [entry("1", #","cancellation_date_ms":"soon""#), entry("2")])),
            .verified, [.init("1", creditable: false, reason: .unreadable), .init("2", creditable: true)],
            unreadable: ["1"]),
        Row(
            "not_creditable_reason unreadable: an unreadable quantity",
            .verifyReceipt(body(inApp: [entry("1", quantity: "lots"), entry("2")])),
            .verified, [.init("1", creditable: false, reason: .unreadable), .init("2", creditable: true)],
            unreadableCrediting: ["1"]),
        Row(
            "not_creditable_reason upgraded",
            .evidence([
                apple("500", original: "500", type: .autoRenewable, period: "8001", upgraded: true),
                apple("501", original: "500", product: "pro_yearly", type: .autoRenewable, period: "8002"),
            ]),
            .verified, [
                .init(
                    "500", creditable: false, type: .autoRenewable, key: "period:8001", upgraded: true,
                    reason: .upgraded),
                .init("501", creditable: true, type: .autoRenewable, key: "period:8002"),
            ]),
        Row(
            "not_creditable_reason unknown_product beside a listed product",
            .evidence([apple("1"), apple("2", product: "gems_999")]), catalog: catalog,
            .verified, [
                .init("1", creditable: true, type: .consumable, credit: gemsCredit),
                .init("2", creditable: false, reason: .unknownProduct),
            ]),
        Row(
            "not_creditable_reason rejected: a transaction shown in a product_mismatch rejection",
            .evidence([apple("1")]), transaction: "1", product: "gems_500",
            .rejected(.productMismatch), [.init("1", creditable: false, reason: .rejected)]),
        Row(
            "a rejection keeps the transaction's own reason: refunded, not rejected",
            .evidence([apple("1", cancelledAtMs: 5)]), transaction: "1",
            .rejected(.refunded), [.init("1", creditable: false, cancelledAtMs: 5, reason: .refunded)]),
        Row(
            "a refund wins over the family-shared item rule",
            .evidence([apple("1", cancelledAtMs: 5, ownership: "FAMILY_SHARED"), apple("2")]), catalog: catalog,
            .verified, [
                .init(
                    "1", creditable: false, type: .consumable, credit: gemsCredit, cancelledAtMs: 5,
                    reason: .refunded),
                .init("2", creditable: true, type: .consumable, credit: gemsCredit),
            ]),
    ]

    // MARK: Running a row

    @Test(arguments: rows)
    func theRuleHolds(_ row: Row) throws {
        let receipt = try row.apple.receipt()
        #expect(receipt.environment == row.environment, "the environment results use")
        let verdict = VerdictRules.evaluate(
            receipt,
            expectations: VerificationExpectations(
                transactionId: row.transaction, productId: row.product, appAccountToken: row.token),
            policy: VerdictPolicy(
                allowedBundleIds: Self.bundles, sandboxPolicy: row.sandboxPolicy,
                appAccountTokenPolicy: row.tokenPolicy),
            catalog: row.catalog)
        #expect(verdict.outcome == row.expected.outcome)
        #expect(verdict.reason == row.expected.reason)
        #expect(verdict.outcome == .verified || verdict.message != nil, "a rejection says why")
        #expect(verdict.transactions.map(\.transactionId) == row.transactions.map(\.id))
        for (actual, expected) in zip(verdict.transactions, row.transactions) {
            #expect(actual.creditable == expected.creditable, "creditable of \(expected.id)")
            #expect(actual.credit == expected.credit, "credit of \(expected.id)")
            #expect(actual.productType == expected.type, "product_type of \(expected.id)")
            #expect(actual.appAccountToken == expected.token, "app_account_token of \(expected.id)")
            #expect(
                actual.creditKey == "apple:\(row.environment.rawValue.lowercased()):\(expected.key ?? expected.id)",
                "credit_key of \(expected.id)")
            #expect(actual.quantity == expected.quantity, "quantity of \(expected.id)")
            #expect(actual.isUpgraded == expected.upgraded, "is_upgraded of \(expected.id)")
            // not_creditable_reason: null exactly when creditable, and the row's value where it names one.
            #expect(
                (actual.notCreditableReason == nil) == actual.creditable, "not_creditable_reason of \(expected.id)")
            if let reason = expected.reason {
                #expect(actual.notCreditableReason == reason, "not_creditable_reason of \(expected.id)")
            }
            if let cancelledAtMs = expected.cancelledAtMs {
                #expect(actual.cancellationDateMs == cancelledAtMs, "cancellation_date_ms of \(expected.id)")
            }
        }
        if verdict.outcome != .verified {
            let creditable = verdict.transactions.filter(\.creditable).map(\.transactionId)
            #expect(creditable.isEmpty, "a rejection lists nothing creditable")
        }
        #expect(verdict.unreadableCancellationIds == row.unreadable)
        #expect(verdict.unreadableCreditingIds == row.unreadableCrediting)
    }

    @Test func theTableCoversEveryNotCreditableReason() {
        let named = Set(Self.rows.flatMap { $0.transactions.compactMap(\.reason) })
        let all = Set(NotCreditableReason.allCases)
        #expect(named == all, "missing: \(all.subtracting(named))")
    }

    @Test func theTableCoversEveryRejectionReasonTheRulesCanGive() {
        let reasons = Set(Self.rows.compactMap(\.expected.reason))
        let ruleReasons: Set<Reason> = [
            .bundleMismatch, .sandboxNotAllowed, .noPurchases, .invalidReceipt, .transactionNotFound,
            .productMismatch, .accountMismatch, .refunded, .unknownProduct,
        ]
        #expect(ruleReasons.isSubset(of: reasons), "missing: \(ruleReasons.subtracting(reasons))")
        #expect(Set(Self.rows.map(\.name)).count == Self.rows.count, "row names are unique")
    }

    @Test func aFailClosedRefundSaysWhatCouldNotBeRead() throws {
        let expectations = VerificationExpectations(transactionId: "1")
        let policy = VerdictPolicy(allowedBundleIds: Self.bundles)
        let field = try AppleData.verifyReceipt(
            Self.body(inApp: [Self.entry("1", #","cancellation_date_ms":"soon""#)])
        ).receipt()
        let fieldMessage = VerdictRules.evaluate(field, expectations: expectations, policy: policy).message ?? ""
        #expect(fieldMessage.contains("cancellation_date_ms") && fieldMessage.contains("could not be read"))
        let entry = try AppleData.verifyReceipt(
            Self.body(inApp: [Self.entry("1")], latest: [#"{"transaction_id":"1","product_id":"gems_100"}"#])
        ).receipt()
        let entryMessage = VerdictRules.evaluate(entry, expectations: expectations, policy: policy).message ?? ""
        #expect(entryMessage.contains("an entry in Apple's answer that could not be read"))
    }

    @Test func normalizeJudgesOneTransactionOnItsOwnData() {
        let refunded = VerdictRules.normalize(Self.apple("1", cancelledAtMs: 7), .production, catalog: Self.catalog)
        #expect(!refunded.creditable)
        #expect(refunded.credit == Self.gemsCredit)
        let unlisted = VerdictRules.normalize(Self.apple("2", product: "gems_999"), .sandbox, catalog: Self.catalog)
        #expect(!unlisted.creditable)
        #expect(unlisted.creditKey == "apple:sandbox:2")
        let renewal = VerdictRules.normalize(
            Self.apple("20", original: "10", type: .autoRenewable, period: "30"), .production)
        #expect(renewal.creditKey == "apple:production:period:30")
        #expect(VerdictRules.normalize(Self.apple("3"), .production).creditable)
        // Events are judged by the same rules: a family-shared item credit is not creditable, and says why.
        let family = VerdictRules.normalize(
            Self.apple("4", ownership: "FAMILY_SHARED"), .production, catalog: Self.catalog)
        #expect(!family.creditable)
        #expect(family.notCreditableReason == .familySharedItem)
        #expect(refunded.notCreditableReason == .refunded)
        #expect(unlisted.notCreditableReason == .unknownProduct)
    }

    @Test func normalizeCarriesEveryContractField() {
        let apple = AppleTransaction(
            TransactionFields(
                transactionId: "10", originalTransactionId: "9", productId: "sub", quantity: 3, purchaseDateMs: 11,
                expiresDateMs: 12, cancellationDateMs: nil, cancellationReason: nil, webOrderLineItemId: "13",
                inAppOwnershipType: "FAMILY_SHARED", isTrialPeriod: true, appAccountToken: "ABC"))
        #expect(
            VerdictRules.normalize(apple, .sandbox)
                == VerifiedTransaction(
                    TransactionFields(
                        transactionId: "10", originalTransactionId: "9", productId: "sub", quantity: 3,
                        purchaseDateMs: 11, expiresDateMs: 12, webOrderLineItemId: "13",
                        inAppOwnershipType: "FAMILY_SHARED", isTrialPeriod: true, appAccountToken: "abc",
                        productType: .autoRenewable),
                    creditable: true, credit: nil, environment: .sandbox))
        #expect(VerdictRules.normalize(apple, .sandbox).creditKey == "apple:sandbox:period:13")
        var signed = apple
        signed.price = 10_990
        signed.currency = "EUR"
        signed.transactionReason = "RENEWAL"
        let carried = VerdictRules.normalize(signed, .production)
        #expect(carried.price == 10_990 && carried.currency == "EUR" && carried.transactionReason == "RENEWAL")
    }

    // MARK: Building rows

    static let bundles: Set<String> = ["com.example.game", "com.example.other"]
    static let token = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
    static let upperToken = token.uppercased()
    static let otherToken = "0b1c1d9e-0000-4000-8000-000000000001"
    static let gemsCredit: JSONValue = .object(["item": .string("gems"), "amount": .integer(100)])
    static let seasonCredit: JSONValue = .object(["entitlement": .string("season")])
    static let catalog = ProductCatalog(products: [
        "gems_100": .init(type: .consumable, credit: gemsCredit),
        "season_pass": .init(type: .nonRenewing, credit: seasonCredit),
    ])

    /// `cancellation_date_ms` of 2019-10-19 09:30:48 UTC, as Apple writes it (a string).
    static let cancelledMs = #","cancellation_date_ms":"1571477448000""#
    static let cancelledText = #","cancellation_date":"2019-10-19 09:30:48 Etc/GMT""#
    static let reasonOne = #","cancellation_reason":"1""#
    static let subscription = #","expires_date_ms":"1602068818000","web_order_line_item_id":"1000000056284415""#

    /// A subscription period's fields: an expiry and its web order line item id.
    static func period(_ webOrderLineItemId: String) -> String {
        #","expires_date_ms":"1602068818000","web_order_line_item_id":"\#(webOrderLineItemId)""#
    }

    /// One `in_app` / `latest_receipt_info` entry as Apple writes it (every value a string), plus `extra` fields.
    static func entry(
        _ id: String, original: String? = nil, product: String = "gems_100", quantity: String = "1",
        ownership: String = "PURCHASED", _ extra: String = ""
    ) -> String {
        #"{"quantity":"\#(quantity)","product_id":"\#(product)","transaction_id":"\#(id)","#
            + #""original_transaction_id":"\#(original ?? id)","#
            + #""purchase_date":"2018-10-19 10:50:48 Etc/GMT","purchase_date_ms":"1539946248000","#
            + #""is_trial_period":"false","in_app_ownership_type":"\#(ownership)"\#(extra)}"#
    }

    /// A status-0 verifyReceipt body.
    static func body(
        inApp: [String], latest: [String]? = nil, environment: String? = "Production",
        bundle: String? = "com.example.game"
    ) -> String {
        var fields = [#""status":0"#]
        if let environment { fields.append(#""environment":"\#(environment)""#) }
        var receipt = [#""receipt_type":"Production""#, #""in_app":[\#(inApp.joined(separator: ","))]"#]
        if let bundle { receipt.append(#""bundle_id":"\#(bundle)""#) }
        fields.append(#""receipt":{\#(receipt.joined(separator: ","))}"#)
        if let latest { fields.append(#""latest_receipt_info":[\#(latest.joined(separator: ","))]"#) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// A transaction as a StoreKit 2 / App Store Server API source fills it.
    static func apple(
        _ id: String, original: String? = nil, product: String = "gems_100", quantity: Int = 1,
        cancelledAtMs: Int64? = nil, revocationType: String? = nil, percentage: Int? = nil, token: String? = nil,
        type: ProductType? = nil, period: String? = nil, upgraded: Bool = false, ownership: String? = nil
    ) -> AppleTransaction {
        AppleTransaction(
            TransactionFields(
                transactionId: id, originalTransactionId: original ?? id, productId: product, quantity: quantity,
                purchaseDateMs: 1_700_000_000_000, expiresDateMs: period == nil ? nil : 1_702_000_000_000,
                cancellationDateMs: cancelledAtMs, cancellationReason: cancelledAtMs == nil ? nil : "0",
                webOrderLineItemId: period, inAppOwnershipType: ownership, appAccountToken: token, productType: type,
                revocationType: revocationType, revocationPercentage: percentage, isUpgraded: upgraded))
    }
}

extension MoneyRulesTests {
    /// Apple's data for one row.
    enum AppleData: Sendable {
        /// A verifyReceipt body answered by `endpoint`'s URL, through the real decoder and backend.
        case verifyReceipt(String, endpoint: AppStoreEnvironment = .production)
        /// What another source fills in (production, bundle com.example.game).
        case evidence([AppleTransaction], latest: [AppleTransaction] = [])

        func receipt() throws -> AppleReceipt {
            switch self {
            case .verifyReceipt(let body, let endpoint):
                let interpretation = VerifyReceiptBackend.interpret(
                    .success(HTTPClientResponse(status: 200, body: Array(body.utf8))), environment: endpoint, calls: 1)
                guard case .receipt(let receipt) = interpretation.backendAnswer.result else {
                    throw RowError(description: "the body is not a valid receipt: \(interpretation.backendAnswer)")
                }
                return receipt
            case .evidence(let inApp, let latest):
                return AppleReceipt(
                    environment: .production, bundleId: "com.example.game", inApp: inApp, latestReceiptInfo: latest)
            }
        }
    }

    struct RowError: Error, CustomStringConvertible {
        let description: String
    }

    /// What the result must say.
    struct Expected: Sendable {
        var outcome: Outcome
        var reason: Reason?

        static let verified = Expected(outcome: .verified, reason: nil)
        static func rejected(_ reason: Reason) -> Expected { Expected(outcome: .rejected, reason: reason) }
    }

    /// One transaction the result must list, in order.
    struct ExpectedTransaction: Sendable {
        var id: String
        var creditable: Bool
        var type: ProductType?
        var credit: JSONValue?
        var token: String?
        /// Checked when set.
        var cancelledAtMs: Int64?
        /// The purchase id in `credit_key` (`apple:<environment>:<key>`); the transaction id when nil.
        var key: String?
        var quantity: Int
        var upgraded: Bool
        /// `not_creditable_reason`, checked when set (and always null exactly when creditable).
        var reason: NotCreditableReason?

        init(
            _ id: String, creditable: Bool, type: ProductType? = nil, credit: JSONValue? = nil, token: String? = nil,
            cancelledAtMs: Int64? = nil, key: String? = nil, quantity: Int = 1, upgraded: Bool = false,
            reason: NotCreditableReason? = nil
        ) {
            self.reason = reason
            self.id = id
            self.creditable = creditable
            self.type = type
            self.credit = credit
            self.token = token
            self.cancelledAtMs = cancelledAtMs
            self.key = key
            self.quantity = quantity
            self.upgraded = upgraded
        }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var apple: AppleData
        var transaction: String?
        var product: String?
        var token: String?
        var sandboxPolicy: SandboxPolicy
        var tokenPolicy: AppAccountTokenPolicy
        var catalog: ProductCatalog?
        var expected: Expected
        var transactions: [ExpectedTransaction]
        var environment: AppStoreEnvironment
        var unreadable: [String]
        var unreadableCrediting: [String]

        init(
            _ name: String, _ apple: AppleData, transaction: String? = nil, product: String? = nil,
            token: String? = nil, tokenPolicy: AppAccountTokenPolicy = .check, sandboxPolicy: SandboxPolicy = .accept,
            catalog: ProductCatalog? = nil, _ expected: Expected, _ transactions: [ExpectedTransaction],
            environment: AppStoreEnvironment = .production, unreadable: [String] = [],
            unreadableCrediting: [String] = []
        ) {
            self.tokenPolicy = tokenPolicy
            self.unreadableCrediting = unreadableCrediting
            self.name = name
            self.apple = apple
            self.transaction = transaction
            self.product = product
            self.token = token
            self.sandboxPolicy = sandboxPolicy
            self.catalog = catalog
            self.expected = expected
            self.transactions = transactions
            self.environment = environment
            self.unreadable = unreadable
        }

        var testDescription: String { name }
    }
}
