import Foundation
import ReceiptModel
import Testing

@testable import Ingest

/// The index's lean read of result messages against the full decoding (`MessageCoding.decode`, Foundation's
/// `JSONDecoder`) as the oracle: the same fields from every result the verifier writes, and the same refusals for
/// messages whose indexed members are missing or of the wrong type.
@Suite("indexed result (lean read)")
struct IndexedResultTests {
    static func fullyDecoded(_ bytes: [UInt8]) -> VerificationResult? {
        try? MessageCoding.decode(VerificationResult.self, from: bytes)
    }

    @Test("every outcome, with and without client id and fingerprint: the fields the full decoding gives")
    func sameFieldsAsTheFullDecoding() throws {
        for outcome in Outcome.allCases {
            for clientId in [nil, "game-server"] {
                for fingerprint in [nil, ResultFixtures.fingerprint] {
                    let bytes = try ResultFixtures.bytes(
                        "s-\(outcome.rawValue)", outcome: outcome, clientId: clientId, fingerprint: fingerprint)
                    let oracle = try #require(Self.fullyDecoded(bytes))
                    let lean = try #require(IndexedResult(bytes))
                    #expect(lean.submissionId == oracle.submissionId)
                    #expect(lean.outcome == oracle.outcome)
                    #expect(lean.clientId == oracle.clientId)
                    #expect(lean.fingerprint == oracle.submissionFingerprint)
                    #expect(lean.verifiedAtMs == oracle.verifiedAtMs)
                }
            }
        }
    }

    /// A valid result with one member changed (`nil`: removed), and whether the full decoding accepts it.
    static var mutations: [(member: String, value: Any?, accepted: Bool)] {
        [
            ("submission_id", nil, false), ("submission_id", 5, false), ("submission_id", NSNull(), false),
            ("outcome", nil, false), ("outcome", "maybe", false), ("outcome", 1, false),
            ("transactions", nil, false), ("transactions", "none", false),
            ("attempts", nil, false), ("attempts", "1", false),
            ("verified_at_ms", nil, false), ("verified_at_ms", "soon", false), ("verified_at_ms", 1.5, false),
            ("schema_version", nil, false), ("schema_version", "1", false),
            ("client_id", nil, true), ("client_id", NSNull(), true), ("client_id", 7, false),
            ("submission_fingerprint", nil, true), ("submission_fingerprint", NSNull(), true),
            ("submission_fingerprint", ["a"], false),
        ]
    }

    @Test("a result missing an indexed member or holding the wrong type: refused by both, as the table says")
    func refusalsAgreeWithTheFullDecoding() throws {
        let valid = try ResultFixtures.bytes("s-1", clientId: "game-server")
        for mutation in Self.mutations {
            var object = try #require(try JSONSerialization.jsonObject(with: Data(valid)) as? [String: Any])
            object[mutation.member] = mutation.value
            let bytes = [UInt8](try JSONSerialization.data(withJSONObject: object))
            #expect((Self.fullyDecoded(bytes) != nil) == mutation.accepted, "oracle: \(mutation.member)")
            #expect((IndexedResult(bytes) != nil) == mutation.accepted, "lean: \(mutation.member)")
        }
    }

    @Test("not a JSON object: refused by both")
    func notAnObject() {
        for text in ["", "[]", "\"s-1\"", "{", "null", "{\"submission_id\":\"s-1\"} trailing"] {
            let bytes = Array(text.utf8)
            #expect(Self.fullyDecoded(bytes) == nil, "oracle: \(text)")
            #expect(IndexedResult(bytes) == nil, "lean: \(text)")
        }
    }
}
