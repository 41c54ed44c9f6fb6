import Foundation
import HTTPServer
import ServiceSupport

/// The fake's app transactions: registered ones, the calls about them, and what is left of their scripted failures.
struct FakeAppTransactionStore: Sendable {
    var appTransactions: [String: FakeAppTransaction] = [:]
    var failuresLeft: [String: [Int]] = [:]
    var calls: [String: FakeServerAPI.Calls] = [:]
}

extension FakeServerAPI {
    // MARK: Admin

    func register(_ appTransaction: FakeAppTransaction) {
        appTransactionStore.withLock { store in
            store.appTransactions[appTransaction.id] = appTransaction
            store.failuresLeft[appTransaction.id] = (appTransaction.failures ?? []).map { max(1, $0.times ?? 1) }
        }
    }

    /// The app transaction `id` is (registered, or the default for a numeric id), or nil.
    func appTransaction(_ id: String) -> FakeAppTransaction? {
        if let registered = appTransactionStore.withLock({ $0.appTransactions[id] }) { return registered }
        guard Self.isNumeric(id) else { return nil }
        return FakeAppTransaction.defaultAppTransaction(id: id)
    }

    /// The app transaction a device holds for `id` (`AppTransaction.shared`'s `jwsRepresentation`, signed now), or
    /// nil for an unknown id.
    func signedAppTransaction(id: String) throws -> String? {
        guard let appTransaction = appTransaction(id) else { return nil }
        return try signing.signer.sign(
            payload: appTransaction.payloadJSON(bundleId: defaultBundleId, signedDateMs: SystemTime.wallMilliseconds()))
    }

    func appTransactionCalls(_ id: String) -> Calls {
        appTransactionStore.withLock { $0.calls[id] ?? Calls() }
    }

    // MARK: API

    /// Get App Transaction Info (`GET /inApps/v1/transactions/appTransactions/{transactionId}`) as Apple documents
    /// it: `id` may be the `appTransactionId` or an in-app transaction id of the customer (a registered transaction's
    /// `app_transaction_id`, an app transaction's `transaction_ids`). Not an id at all (not decimal digits): 400
    /// 4000006. Known here but not in this environment or for the token's app, or not known: 404 4040019
    /// AppTransactionDoesNotExist. Scripted failures first.
    func appTransactionInfo(id rawId: String, bundleId: String, environment: String) -> (HTTPResponse, delayMs: Int) {
        let id = rawId.removingPercentEncoding ?? rawId
        guard Self.isNumeric(id) else { return (Self.error(400, 4_000_006, "Invalid transaction id."), 0) }
        guard let appTransaction = resolveAppTransaction(id) else {
            return (Self.error(404, 4_040_019, "No AppTransaction exists for the customer."), 0)
        }
        let sandbox = environment == "Sandbox"
        let failure = appTransactionStore.withLock { store -> FakeServerTransaction.Failure? in
            store.calls[appTransaction.id, default: Calls()].add(sandbox: sandbox)
            guard var left = store.failuresLeft[appTransaction.id], let failures = appTransaction.failures else {
                return nil
            }
            for (index, step) in failures.enumerated() where index < left.count && left[index] > 0 {
                if let only = step.environment, only.caseInsensitiveCompare(environment) != .orderedSame { continue }
                left[index] -= 1
                store.failuresLeft[appTransaction.id] = left
                return step
            }
            return nil
        }
        if let failure { return (Self.failureResponse(failure), 0) }
        guard appTransaction.resolvedEnvironment.caseInsensitiveCompare(environment) == .orderedSame,
            (appTransaction.bundleId ?? defaultBundleId) == bundleId
        else {
            return (Self.error(404, 4_040_019, "No AppTransaction exists for the customer."), 0)
        }
        do {
            let jws = try signing.signer.sign(
                payload: appTransaction.payloadJSON(
                    bundleId: defaultBundleId, signedDateMs: SystemTime.wallMilliseconds()))
            return (.json(200, "{\"signedAppTransactionInfo\":\"\(jws)\"}"), 0)
        } catch {
            logger.error("cannot sign an app transaction", ["error": .string("\(error)")])
            return (Self.error(500, 5_000_000, "An unknown error occurred."), 0)
        }
    }

    /// The app transaction `id` names: its own id, an in-app transaction of its customer, or the default.
    private func resolveAppTransaction(_ id: String) -> FakeAppTransaction? {
        let registered = appTransactionStore.withLock { store in
            store.appTransactions[id]
                ?? store.appTransactions.values.first { $0.transactionIds?.contains(id) == true }
        }
        if let registered { return registered }
        if let transaction = transaction(id), let appTransactionId = transaction.appTransactionId {
            return appTransaction(appTransactionId)
        }
        return FakeAppTransaction.defaultAppTransaction(id: id)
    }

    /// Decimal digits that fit Apple's ids (a UInt64's text: at most 19 digits here, as the fake's transactions).
    static func isNumeric(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 19 && id.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }
}
