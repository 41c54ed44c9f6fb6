/// A transaction's product `type` as Apple spells it in signed data ("Auto-Renewable Subscription", ...). Open on
/// purpose: a value Apple adds later is kept as it came, where a closed enum would refuse the
/// whole transaction. `ReceiptModel.ProductType` is the other, deliberate, type: the
/// closed `product_type` of this project's own messages (`non_consumable`, ...), mapped from this one by
/// `ReceiptModel.ProductType(appleType:)`, which also reads the Server API's query spellings; an unknown Apple value
/// maps to no product type there, never to a wrong one.
public struct ProductType: OpenStringEnum {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let autoRenewableSubscription = ProductType(rawValue: "Auto-Renewable Subscription")
    public static let nonConsumable = ProductType(rawValue: "Non-Consumable")
    public static let consumable = ProductType(rawValue: "Consumable")
    public static let nonRenewingSubscription = ProductType(rawValue: "Non-Renewing Subscription")
}
