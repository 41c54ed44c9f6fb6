import ServiceRuntime
import ServiceSupport
import Testing

/// One bearer-key syntax for `INGEST_API_KEYS` and `LEDGER_API_KEYS` (issue 24 item 10: the ledger used to cut a
/// key at its colon), and one constant-time check.
@Suite struct BearerKeyTests {
    func parse(_ entries: [String]) throws(ConfigurationError) -> [BearerKey] {
        try BearerKey.parseList(entries, variable: "LEDGER_API_KEYS")
    }

    @Test func aBareKeyIsTakenWhole() throws {
        #expect(try parse(["k1", "k-2.x_y"]) == [BearerKey(key: "k1"), BearerKey(key: "k-2.x_y")])
    }

    @Test func aNamedKeyKeepsEveryColonAfterTheName() throws {
        #expect(try parse(["ops:a:b:c"]) == [BearerKey(name: "ops", key: "a:b:c")])
        #expect(try parse(["ops:k1", "k2"]) == [BearerKey(name: "ops", key: "k1"), BearerKey(key: "k2")])
    }

    @Test("a bare key containing ':' is refused with a settings error, never cut at the colon")
    func aBareKeyWithAColonIsRefusedNotCut() {
        for entry in ["s3cr3t/+=:tail", ":leading", "with space:x"] {
            #expect(throws: ConfigurationError.self) { try parse([entry]) }
            do {
                _ = try parse([entry])
            } catch {
                #expect(error.variable == "LEDGER_API_KEYS")
                #expect(error.problem.contains("entry 1"))
                #expect(!error.problem.contains("tail"))  // never the key itself
            }
        }
        // The key such an operator meant is accepted once named.
        #expect((try? parse(["ops:s3cr3t/+=:tail"])) == [BearerKey(name: "ops", key: "s3cr3t/+=:tail")])
    }

    @Test func anEmptyKeyAfterANameAndOneKeyUnderTwoNamesAreRefused() {
        #expect(throws: ConfigurationError.self) { try parse(["ops:"]) }
        #expect(throws: ConfigurationError.self) { try parse(["a:k", "b:k"]) }
        #expect((try? parse(["a:k", "a:k"])) == [BearerKey(name: "a", key: "k")])
    }

    @Test func matchingNeedsTheWholeKeyAndTheBearerScheme() {
        let keys = BearerKeys([BearerKey(name: "ops", key: "a:b"), BearerKey(key: "k2")])
        #expect(keys.match(authorizationHeader: "Bearer a:b") == .key(BearerKey(name: "ops", key: "a:b")))
        #expect(keys.match(authorizationHeader: "bearer k2") == .key(BearerKey(key: "k2")))
        #expect(keys.match(authorizationHeader: "Bearer b") == nil)
        #expect(keys.match(authorizationHeader: "Bearer a") == nil)
        #expect(keys.match(authorizationHeader: "Basic k2") == nil)
        #expect(keys.match(authorizationHeader: nil) == nil)
        #expect(BearerKeys([]).match(authorizationHeader: nil) == .open)
        #expect(BearerKeys.constantTimeEqual(Array("abc".utf8), Array("abc".utf8)) == 1)
        #expect(BearerKeys.constantTimeEqual(Array("abcd".utf8), Array("abc".utf8)) == 0)
    }
}
