import Dispatch
import Foundation
import ServiceSupport
import Synchronization

/// The product catalog of `PRODUCT_CATALOG_FILE`, following the file: `refreshIfChanged()` looks at the file's
/// `stat` (inode, size, times) and re-reads and re-parses it only when that changed; `startWatching()` does so on a
/// timer (once a second by default), off the verification path.
///
/// Invariants: `currentCatalog` is always a complete, valid catalog (an immutable snapshot swapped in whole under a
/// lock, never mutated); a file that became invalid or unreadable keeps the previous snapshot, and is logged and
/// counted once per change of the file. Only the first read may fail the caller (`init`).
public final class ProductCatalogFile: ProductCatalogSource {
    /// What one `refreshIfChanged()` did.
    public enum Refresh: Sendable, Equatable {
        /// The file looks as it did at the last look: nothing was read.
        case unchanged
        /// The file changed and its catalog (this many products) is now current.
        case reloaded(products: Int)
        /// The file changed but cannot be used; the previous catalog stays current.
        case keptPrevious(ProductCatalogError)
    }

    private struct State {
        var catalog: ProductCatalog
        /// The stamp of the file as last examined (read or found invalid).
        var stamp: FileStamp
    }

    public let path: String
    private let state: Locked<State>
    private let logger: Logger
    private let loaded: Counter?
    private let invalid: Counter?
    private let productsGauge: Gauge?
    /// Serializes refreshes (the timer's and explicit calls) and runs the timer.
    private let queue = DispatchQueue(label: "product-catalog-file", qos: .utility)
    private let timer = Locked<SendableDispatchTimer?>(nil)

    /// Reads and parses the file.
    /// - Parameter metrics: `appstore_product_catalog_reloads_total{result}`, `appstore_product_catalog_products`.
    /// - Throws: `ConfigurationError` naming `PRODUCT_CATALOG_FILE` when the file cannot be read or is not a valid
    ///   catalog (there is no previous catalog to keep).
    public init(path: String, logger: Logger, metrics: MetricsRegistry? = nil) throws(ConfigurationError) {
        self.path = path
        self.logger = logger
        loaded = metrics?.counter(
            "appstore_product_catalog_reloads_total", help: "Product catalog file reads by result",
            labels: [("result", "loaded")])
        invalid = metrics?.counter(
            "appstore_product_catalog_reloads_total", help: "Product catalog file reads by result",
            labels: [("result", "invalid")])
        productsGauge = metrics?.gauge(
            "appstore_product_catalog_products", help: "Products in the product catalog in use")
        let stamp = FileStamp.of(path: path)
        let catalog: ProductCatalog
        do {
            catalog = try Self.read(path)
        } catch {
            throw ConfigurationError(variable: "PRODUCT_CATALOG_FILE", problem: "'\(path)' \(error.problem)")
        }
        state = Locked(State(catalog: catalog, stamp: stamp))
        loaded?.increment()
        productsGauge?.set(catalog.count)
        logger.info("product catalog loaded", ["path": .string(path), "products": .int(catalog.count)])
    }

    deinit {
        timer.withLock { $0?.source.cancel() }
    }

    /// Validates a catalog file without keeping it (settings validation at start-up).
    /// - Throws: `ProductCatalogError` saying what is wrong.
    public static func read(_ path: String) throws(ProductCatalogError) -> ProductCatalog {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            let stamp = FileStamp.of(path: path)
            let reason = stamp.errorNumber != 0 ? String(cString: strerror(stamp.errorNumber)) : "unreadable"
            throw ProductCatalogError(problem: "cannot be read (\(reason))")
        }
        return try ProductCatalog.parse(bytes)
    }

    public var currentCatalog: ProductCatalog {
        state.withLock { $0.catalog }
    }

    /// Re-reads the file if its stamp changed since the last look. Blocking I/O: call it off latency-sensitive
    /// threads (the watcher does).
    @discardableResult
    public func refreshIfChanged() -> Refresh {
        queue.sync { refreshOnQueue() }
    }

    private func refreshOnQueue() -> Refresh {
        let stamp = FileStamp.of(path: path)
        guard stamp != state.withLock({ $0.stamp }) else { return .unchanged }
        let result: Result<ProductCatalog, ProductCatalogError>
        do {
            result = .success(try Self.read(path))
        } catch {
            result = .failure(error)
        }
        switch result {
        case .success(let catalog):
            state.withLock { $0 = State(catalog: catalog, stamp: stamp) }
            loaded?.increment()
            productsGauge?.set(catalog.count)
            logger.info("product catalog reloaded", ["path": .string(path), "products": .int(catalog.count)])
            return .reloaded(products: catalog.count)
        case .failure(let error):
            let kept = state.withLock { state in
                state.stamp = stamp
                return state.catalog.count
            }
            invalid?.increment()
            logger.error(
                "PRODUCT_CATALOG_FILE changed but \(error.problem): keeping the previous catalog until it is fixed",
                ["path": .string(path), "products_kept": .int(kept)])
            return .keptPrevious(error)
        }
    }

    /// Checks the file every `interval` (on a utility queue) until `stopWatching()`. Idempotent.
    public func startWatching(interval: Duration = .seconds(1)) {
        timer.withLock { timer in
            guard timer == nil else { return }
            let source = DispatchSource.makeTimerSource(queue: queue)
            let nanoseconds = Int(clamping: max(interval.clampedNanoseconds, 1_000_000))
            source.schedule(
                deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
                leeway: .milliseconds(100))
            source.setEventHandler { [weak self] in _ = self?.refreshOnQueue() }
            source.resume()
            timer = SendableDispatchTimer(source)
        }
    }

    /// Stops the timer; a check already running finishes. Idempotent.
    public func stopWatching() {
        timer.withLock { timer in
            timer?.source.cancel()
            timer = nil
        }
    }
}
