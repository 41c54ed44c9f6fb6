import Catalog
import ServiceSupport

/// The item names spends and grants may name: with `PRODUCT_CATALOG_FILE`, the items its products' credits give
/// (`{"item": I, ...}`), followed as the file changes (a product added to the catalog makes its item spendable within
/// a second, as the verifier credits it); without a catalog the ledger has no list of items and takes any name (a
/// spend of an item the user has none of is then `insufficient_balance`, a grant creates the item).
final class WalletItems: Sendable {
    private let catalog: ProductCatalogFile?

    /// - Throws: `ConfigurationError` naming `PRODUCT_CATALOG_FILE` when the file is not a valid catalog.
    init(catalogFile: String?, logger: Logger, metrics: MetricsRegistry) throws(ConfigurationError) {
        catalog = try catalogFile.map { path throws(ConfigurationError) in
            try ProductCatalogFile(path: path, logger: logger, metrics: metrics)
        }
    }

    /// Whether `item` is credited by a product of the catalog (always, without one).
    func knows(_ item: String) -> Bool {
        guard let catalog else { return true }
        return catalog.currentCatalog.products.values.contains { $0.credit["item"] == .string(item) }
    }

    func startWatching() { catalog?.startWatching() }
    func stopWatching() { catalog?.stopWatching() }

    /// Reads `path` as a catalog (the settings check; exit 2 when it is not one).
    static func check(_ path: String) throws(ConfigurationError) {
        do {
            _ = try ProductCatalogFile.read(path)
        } catch {
            throw ConfigurationError(variable: "PRODUCT_CATALOG_FILE", problem: "'\(path)' \(error.problem)")
        }
    }
}
