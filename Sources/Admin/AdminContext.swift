import AppStoreServerAPI
import Foundation
import ReceiptModel
import ServiceSupport

/// What every subcommand works with: the client, the retrying caller, the signed-data check, the app asked about,
/// and the ledger when `LEDGER_URL` is set.
public struct AdminContext: Sendable {
    public let client: AppStoreServerAPIClient
    public let caller: AppleCaller
    public let signed: SignedAnswers
    public let ledger: LedgerLookup?
    public let bundleId: String

    public init(
        client: AppStoreServerAPIClient, caller: AppleCaller, signed: SignedAnswers, ledger: LedgerLookup?,
        bundleId: String
    ) {
        self.client = client
        self.caller = caller
        self.signed = signed
        self.ledger = ledger
        self.bundleId = bundleId
    }

    public var environment: AppStoreEnvironment { caller.environment }

    /// The report of a call that failed after its retries.
    static func failure(_ command: String, _ error: ServerAPIError, fields: [String: JSONValue] = [:]) -> AdminReport {
        .failure(
            command, AdminExitCode.of(error), message: error.message, httpStatus: error.httpStatus,
            errorCode: error.errorCode, fields: fields)
    }

    /// Verifies every signed transaction, in order; the first that does not verify ends it.
    /// Get Transaction Info about `transactionId` in the app and environment asked about, through the caller
    /// (retried, paced).
    func transactionInfo(_ transactionId: String) async -> Result<TransactionInfoResponse, ServerAPIError> {
        await caller.call(.transactionInfo, .get) { [self] deadline in
            await client.transactionInfo(
                transactionId: transactionId, bundleId: bundleId, environment: environment, deadline: deadline)
        }
    }

    func verifiedTransactions(_ signed: [String]) -> Result<[TransactionFacts], SignedAnswers.Unverified> {
        var transactions: [TransactionFacts] = []
        for jws in signed {
            switch self.signed.transaction(jws) {
            case .success(let facts): transactions.append(facts)
            case .failure(let problem): return .failure(problem)
            }
        }
        return .success(transactions)
    }

    /// The ledger's view of each distinct `credit_key`, nil without a ledger.
    func ledgerPurchases(_ transactions: [TransactionFacts]) async -> [String: LedgerPurchase]? {
        guard let ledger else { return nil }
        var purchases: [String: LedgerPurchase] = [:]
        for transaction in transactions where purchases[transaction.creditKey] == nil {
            purchases[transaction.creditKey] = await ledger.purchase(creditKey: transaction.creditKey)
        }
        return purchases
    }
}

/// A request body as JSON, for dry runs.
enum RequestBody {
    static func json(_ request: some Encodable) -> JSONValue {
        guard let body = try? request.serverAPIBody(),
            let value = try? JSONDecoder().decode(JSONValue.self, from: Data(body))
        else { return .null }
        return value
    }
}
