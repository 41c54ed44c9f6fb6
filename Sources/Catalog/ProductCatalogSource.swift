/// Where `ReceiptVerifier` gets the product catalog for each verdict: a fixed `ProductCatalog`, or a
/// `ProductCatalogFile` that follows its file.
public protocol ProductCatalogSource: Sendable {
    /// The catalog to judge with now. Called once per verdict: must be cheap and never block on I/O.
    var currentCatalog: ProductCatalog { get }
}

extension ProductCatalog: ProductCatalogSource {
    public var currentCatalog: ProductCatalog { self }
}
