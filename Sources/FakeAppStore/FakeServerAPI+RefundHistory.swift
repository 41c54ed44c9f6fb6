import HTTPServer
import ServiceSupport

extension FakeServerAPI {
    /// Get Refund History v2 (`GET /inApps/v2/refund/lookup/{transactionId}?revision=`): the customer's revoked
    /// transactions (those registered with a `revocationDateMs`) in ascending order of revocation, 20 a page, a
    /// `revision` to pass back for the next page, as Apple documents it.
    func refundHistory(
        of transaction: FakeServerTransaction, bundleId: String, environment: String, query: [String: String]
    ) throws -> HTTPResponse {
        var refunded = customerGroup(of: transaction, bundleId: bundleId, environment: environment)
            .filter { $0.revocationDateMs != nil }
        refunded.sort { left, right in
            let (l, r) = (left.revocationDateMs ?? 0, right.revocationDateMs ?? 0)
            return l != r ? l < r : left.id < right.id
        }
        guard let page = Self.page(refunded, after: query["revision"], letter: "f") else {
            return Self.error(400, 4_000_005, "Invalid request revision.")
        }
        return .json(
            200,
            "{\"revision\":\"\(page.next)\",\"hasMore\":\(page.hasMore),"
                + "\"signedTransactions\":\(try signedTransactionsJSON(page.items))}")
    }
}
