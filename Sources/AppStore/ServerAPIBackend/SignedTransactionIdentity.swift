import SignedData

/// The three fields of a signed transaction needed to ask Apple about it (`transactionId`, `bundleId`,
/// `environment`), decoded without the rest: a confirmed signed transaction is judged on Apple's answer, so its
/// local copy is only verified and identified. Read as tolerantly as `JWSTransactionPayload` reads them.
struct SignedTransactionIdentity: Decodable {
    let transactionId: String?
    let bundleId: String?
    let environment: SignedEnvironment?

    enum CodingKeys: String, CodingKey {
        case transactionId, bundleId, environment
    }

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        if let text = try? fields.decodeIfPresent(String.self, forKey: .transactionId) {
            transactionId = text
        } else if let number = try? fields.decodeIfPresent(Int64.self, forKey: .transactionId) {
            transactionId = String(number)
        } else {
            transactionId = nil
        }
        bundleId = try? fields.decodeIfPresent(String.self, forKey: .bundleId)
        environment = (try? fields.decodeIfPresent(String.self, forKey: .environment)).flatMap { $0 }
            .map(SignedEnvironment.init(rawValue:))
    }
}
