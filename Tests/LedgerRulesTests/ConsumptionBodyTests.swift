import LedgerRules
import Testing

/// Apple's field rules for Send Consumption Information v2, as a table: every product kind (and unknown) × every
/// consumption case × every refund preference (none, DECLINE, GRANT_FULL, GRANT_PRORATED). Each row says what
/// `consumptionPercentage` the body carries and which preferences Apple refuses with it; the others are accepted.
/// Sources: Apple's `consumptionPercentage`, `refundPreference`, `ConsumptionRequest` and `deliveryStatus` pages
/// (docs/CREDITING.md, "What Apple accepts").
@Suite struct ConsumptionBodyTests {
    typealias C = ConsumptionRules

    enum Consumption: CustomStringConvertible, Sendable {
        case delivered(Int64?)
        case undelivered

        var facts: (C.DeliveryStatus, Int64?) {
            switch self {
            case .delivered(let share): (.delivered, share)
            case .undelivered: (.undeliveredOther, nil)
            }
        }

        var description: String {
            switch self {
            case .delivered(let share?): "delivered, \(share) consumed"
            case .delivered(nil): "delivered, consumption unknown"
            case .undelivered: "undelivered"
            }
        }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let kind: ProductKind?
        let consumption: Consumption
        /// The body's `consumptionPercentage` (whatever the preference).
        let sent: Int64?
        /// The preferences Apple refuses with these facts.
        let refused: Set<C.RefundPreference>
        var testDescription: String { "\(kind?.rawValue ?? "unknown kind"), \(consumption)" }
    }

    static let prorated: Set<C.RefundPreference> = [.grantProrated]

    static let rows: [Row] = [
        // Consumables, non-consumables and non-renewing subscriptions take the consumed share; GRANT_PRORATED
        // needs it above 0 and below 100 %; undelivered is sent as 0 (Apple refuses anything else).
        Row(kind: .consumable, consumption: .delivered(40_000), sent: 40_000, refused: []),
        Row(kind: .consumable, consumption: .delivered(1), sent: 1, refused: []),
        Row(kind: .consumable, consumption: .delivered(99_999), sent: 99_999, refused: []),
        Row(kind: .consumable, consumption: .delivered(0), sent: 0, refused: prorated),
        Row(kind: .consumable, consumption: .delivered(100_000), sent: 100_000, refused: prorated),
        Row(kind: .consumable, consumption: .delivered(nil), sent: nil, refused: prorated),
        Row(kind: .consumable, consumption: .undelivered, sent: 0, refused: prorated),
        Row(kind: .nonConsumable, consumption: .delivered(40_000), sent: 40_000, refused: []),
        Row(kind: .nonConsumable, consumption: .delivered(0), sent: 0, refused: prorated),
        Row(kind: .nonConsumable, consumption: .delivered(100_000), sent: 100_000, refused: prorated),
        Row(kind: .nonConsumable, consumption: .delivered(nil), sent: nil, refused: prorated),
        Row(kind: .nonConsumable, consumption: .undelivered, sent: 0, refused: prorated),
        Row(kind: .nonRenewing, consumption: .delivered(75_000), sent: 75_000, refused: []),
        Row(kind: .nonRenewing, consumption: .delivered(0), sent: 0, refused: prorated),
        Row(kind: .nonRenewing, consumption: .delivered(100_000), sent: 100_000, refused: prorated),
        Row(kind: .nonRenewing, consumption: .delivered(nil), sent: nil, refused: prorated),
        Row(kind: .nonRenewing, consumption: .undelivered, sent: 0, refused: prorated),
        // An auto-renewable subscription never carries a share (Apple computes it from the time elapsed), and
        // takes every preference, GRANT_PRORATED included.
        Row(kind: .autoRenewable, consumption: .delivered(75_000), sent: nil, refused: []),
        Row(kind: .autoRenewable, consumption: .delivered(0), sent: nil, refused: []),
        Row(kind: .autoRenewable, consumption: .delivered(100_000), sent: nil, refused: []),
        Row(kind: .autoRenewable, consumption: .delivered(nil), sent: nil, refused: []),
        Row(kind: .autoRenewable, consumption: .undelivered, sent: nil, refused: []),
        // Unknown kind (a purchase recorded before product types were kept): it may be an auto-renewable, so no
        // share is sent; without one GRANT_PRORATED is refused for the other kinds, so it is never sent.
        Row(kind: nil, consumption: .delivered(40_000), sent: nil, refused: prorated),
        Row(kind: nil, consumption: .delivered(0), sent: nil, refused: prorated),
        Row(kind: nil, consumption: .delivered(100_000), sent: nil, refused: prorated),
        Row(kind: nil, consumption: .delivered(nil), sent: nil, refused: prorated),
        Row(kind: nil, consumption: .undelivered, sent: nil, refused: prorated),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) {
        let (delivery, consumed) = row.consumption.facts
        let facts = C.Facts(deliveryStatus: delivery, consumedPercentage: consumed, productKind: row.kind)
        for preference in [nil] + C.RefundPreference.allCases {
            let body = C.body(for: facts, preference: preference, sampleContentProvided: true)
            #expect(body.consumptionPercentage == row.sent, "\(preference?.rawValue ?? "no preference")")
            #expect(body.deliveryStatus == delivery)
            #expect(body.refundPreference == preference)
            #expect(body.sampleContentProvided)
            let refused = preference.map(row.refused.contains) ?? false
            #expect((C.refusal(of: body) != nil) == refused, "\(preference?.rawValue ?? "no preference")")
        }
    }

    /// Bodies the builder never makes, refused as Apple documents (the check the load-time policy check relies on).
    static let impossibleBodies: [(C.Body, String)] = [
        (C.Body(sampleContentProvided: false, deliveryStatus: .delivered, consumptionPercentage: 50_000,
                refundPreference: nil, productKind: .autoRenewable),
         "ConsumptionPercentageAutoRenewableSubscriptionError"),
        (C.Body(sampleContentProvided: false, deliveryStatus: .undeliveredQualityIssue, consumptionPercentage: 10,
                refundPreference: .grantFull, productKind: .consumable),
         "UndeliveredConsumptionPercentageNonZeroError"),
        (C.Body(sampleContentProvided: false, deliveryStatus: .delivered, consumptionPercentage: 100_001,
                refundPreference: nil, productKind: .consumable),
         "ConsumptionPercentageOutOfRangeError"),
        (C.Body(sampleContentProvided: false, deliveryStatus: .delivered, consumptionPercentage: -1,
                refundPreference: .decline, productKind: .nonRenewing),
         "ConsumptionPercentageOutOfRangeError"),
        (C.Body(sampleContentProvided: false, deliveryStatus: .delivered, consumptionPercentage: 30_000,
                refundPreference: .decline, productKind: nil),
         "unknown and an auto-renewable subscription takes no consumptionPercentage"),
    ]

    @Test func bodiesAppleDocumentsAsRefusedAreRefused() {
        for (body, why) in Self.impossibleBodies {
            let refusal = C.refusal(of: body)
            #expect(refusal?.contains(why) == true, "\(refusal ?? "accepted") should say \(why)")
        }
    }

    /// The product kind an answer goes by: the request's (Apple's, as signed), else the purchase's as recorded, else
    /// a subscription period's key tells an auto-renewable; nothing else is guessed.
    static let kindRows: [(named: ProductKind?, recorded: ProductKind?, period: Bool, resolved: ProductKind?)] = [
        (.consumable, nil, false, .consumable),
        (.consumable, .nonConsumable, true, .consumable),
        (nil, .nonConsumable, true, .nonConsumable),
        (nil, nil, true, .autoRenewable),
        (nil, nil, false, nil),
    ]

    @Test(arguments: kindRows)
    func productKind(named: ProductKind?, recorded: ProductKind?, period: Bool, resolved: ProductKind?) {
        #expect(ProductKind.resolved(named: named, recorded: recorded, isSubscriptionPeriod: period) == resolved)
    }
}
