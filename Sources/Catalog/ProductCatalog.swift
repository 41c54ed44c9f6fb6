import Foundation
import ReceiptModel
import ServiceSupport

/// The operator's product catalog (`PRODUCT_CATALOG_FILE`): for each product id, what kind of product it is and what
/// to credit for it. An immutable snapshot: lookups are dictionary reads, and a reloaded file replaces the whole
/// snapshot (see `ProductCatalogFile`).
///
/// ```json
/// {"products": {"com.example.gems100": {"type": "consumable", "credit": {"item": "gems", "amount": 100}},
///               "com.example.pro.monthly": {"type": "auto_renewable", "credit": {"entitlement": "pro"}}}}
/// ```
public struct ProductCatalog: Sendable, Equatable {
    /// One product.
    public struct Entry: Sendable, Equatable {
        public var type: ProductType
        /// Opaque to the pipeline: copied unchanged into each transaction of this product (`credit`).
        public var credit: JSONValue

        public init(type: ProductType, credit: JSONValue) {
            self.type = type
            self.credit = credit
        }
    }

    public let products: [String: Entry]

    public init(products: [String: Entry]) {
        self.products = products
    }

    /// The entry of `productId`, or nil when the catalog does not list it.
    public subscript(productId: String) -> Entry? { products[productId] }

    public var count: Int { products.count }

    /// Parses a catalog file's bytes. Unknown fields are ignored; everything the contract names is checked.
    /// - Throws: `ProductCatalogError` saying what is wrong: not JSON, `products` missing or not an object, an entry
    ///   that is not an object, a `type` that is not `consumable`, `non_consumable`, `auto_renewable` or
    ///   `non_renewing`, a `credit` missing or not an object, or with an `item`, `entitlement` or `amount` of another
    ///   type than the contract's.
    public static func parse(_ bytes: [UInt8]) throws(ProductCatalogError) -> ProductCatalog {
        let document: JSONValue
        do {
            document = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        } catch {
            throw ProductCatalogError(problem: "is not valid JSON (\(bytes.count) bytes)")
        }
        guard case .object(let root) = document else {
            throw ProductCatalogError(problem: "is not a JSON object with \"products\"")
        }
        guard let productsValue = root["products"] else {
            throw ProductCatalogError(problem: "has no \"products\" object")
        }
        guard case .object(let listed) = productsValue else {
            throw ProductCatalogError(problem: "\"products\" is not an object of product id to entry")
        }
        var products: [String: Entry] = [:]
        products.reserveCapacity(listed.count)
        // Sorted, so that the first problem reported is the same on every read.
        for (productId, value) in listed.sorted(by: { $0.key < $1.key }) {
            guard !productId.isEmpty else { throw ProductCatalogError(problem: "a product id is empty") }
            guard case .object(let fields) = value else {
                throw ProductCatalogError(problem: "product '\(productId)' is not an object with type and credit")
            }
            let types = ProductType.allCases.map(\.rawValue).joined(separator: ", ")
            guard case .string(let typeName)? = fields["type"] else {
                throw ProductCatalogError(problem: "product '\(productId)' has no \"type\" (one of \(types))")
            }
            guard let type = ProductType(rawValue: typeName) else {
                throw ProductCatalogError(
                    problem: "product '\(productId)' has type '\(typeName)', not one of \(types)")
            }
            guard let credit = fields["credit"], credit != .null else {
                throw ProductCatalogError(problem: "product '\(productId)' has no \"credit\" object")
            }
            guard case .object(let members) = credit else {
                throw ProductCatalogError(problem: "product '\(productId)': \"credit\" is not an object")
            }
            try checkContractMembers(of: members, productId: productId)
            products[productId] = Entry(type: type, credit: credit)
        }
        return ProductCatalog(products: products)
    }

    /// The members of a credit the contract names have the contract's types (`item` and `entitlement` strings,
    /// `amount` a whole number), as schemas/transaction.schema.json declares them for generated clients; any other
    /// member is carried unchanged.
    private static func checkContractMembers(
        of credit: [String: JSONValue], productId: String
    ) throws(ProductCatalogError) {
        for name in ["item", "entitlement"] {
            guard let value = credit[name] else { continue }
            guard case .string = value else {
                throw ProductCatalogError(problem: "product '\(productId)': credit \"\(name)\" is not a string")
            }
        }
        if let amount = credit["amount"] {
            guard case .integer = amount else {
                throw ProductCatalogError(problem: "product '\(productId)': credit \"amount\" is not a whole number")
            }
        }
    }
}
