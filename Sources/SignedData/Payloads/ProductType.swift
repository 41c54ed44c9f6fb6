/// A transaction's product `type`. Unknown values are kept as they are.
public struct ProductType: OpenStringEnum {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let autoRenewableSubscription = ProductType(rawValue: "Auto-Renewable Subscription")
    public static let nonConsumable = ProductType(rawValue: "Non-Consumable")
    public static let consumable = ProductType(rawValue: "Consumable")
    public static let nonRenewingSubscription = ProductType(rawValue: "Non-Renewing Subscription")
}
