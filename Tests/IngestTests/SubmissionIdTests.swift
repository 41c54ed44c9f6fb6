import Foundation
import Ingest
import Testing

@Suite("submission id resolution")
struct SubmissionIdTests {
    @Test("the body's id wins; the Idempotency-Key header is used otherwise")
    func precedence() throws {
        #expect(try SubmissionId.resolve(body: "from-body", idempotencyKey: nil) == "from-body")
        #expect(try SubmissionId.resolve(body: "same", idempotencyKey: "same") == "same")
        #expect(try SubmissionId.resolve(body: nil, idempotencyKey: "from-header") == "from-header")
    }

    @Test("without either, a fresh lower-case UUID")
    func generated() throws {
        let first = try SubmissionId.resolve(body: nil, idempotencyKey: nil)
        let second = try SubmissionId.resolve(body: nil, idempotencyKey: "")
        #expect(UUID(uuidString: first) != nil)
        #expect(first == first.lowercased())
        #expect(first != second)
    }

    @Test("body and header disagreeing is refused")
    func conflict() {
        #expect(throws: APIError.self) { try SubmissionId.resolve(body: "a", idempotencyKey: "b") }
    }

    @Test(
        "unusable ids are refused",
        arguments: ["has space", "a/b", "q?x", "50%", "frag#1", "ü", String(repeating: "x", count: 257)])
    func invalid(id: String) {
        #expect(throws: APIError.self) { try SubmissionId.resolve(body: id, idempotencyKey: nil) }
        #expect(throws: APIError.self) { try SubmissionId.resolve(body: nil, idempotencyKey: id) }
    }

    @Test("typical ids pass", arguments: ["order-123:attempt-2", "3F2504E0-4F89-11D3-9A0C-0305E82C3301", "a_b.c~d"])
    func valid(id: String) throws {
        #expect(try SubmissionId.resolve(body: id, idempotencyKey: nil) == id)
    }
}
