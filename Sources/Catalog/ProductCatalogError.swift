/// Why a product catalog file cannot be used. The message completes "PRODUCT_CATALOG_FILE '<path>' ...".
public struct ProductCatalogError: Error, Sendable, Equatable, CustomStringConvertible {
    public let problem: String

    public init(problem: String) {
        self.problem = problem
    }

    public var description: String { problem }
}
