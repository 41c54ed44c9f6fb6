import Foundation
import ReceiptModel
import Testing

/// The shape check of `signed_transaction` values (no signature check): what it keeps, trims and refuses.
@Suite struct SignedTransactionTextTests {
    static func jws(header: String = #"{"alg":"ES256","x5c":["AAAA"]}"#) -> String {
        Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(#"{"a":1}"#.utf8)) + ".c2ln"
    }

    @Test func aWellFormedJWSIsKeptAsItIsAndSurroundingWhitespaceOfAnyKindIsTrimmed() throws {
        let text = Self.jws()
        #expect(try SignedTransactionText.normalize(text) == text)
        #expect(try SignedTransactionText.normalize("  \n\t" + text + "\r\n") == text)
        #expect(try SignedTransactionText.normalize("\u{00A0}\u{2003}" + text + "\u{3000}") == text)
    }

    @Test func anythingElseIsRefusedWithItsReason() {
        #expect(throws: SignedTransactionProblem.empty) { try SignedTransactionText.normalize(" \n ") }
        #expect(throws: SignedTransactionProblem.notCompactJWS) { try SignedTransactionText.normalize("a.b") }
        #expect(throws: SignedTransactionProblem.notCompactJWS) { try SignedTransactionText.normalize("a b.c.d") }
        #expect(throws: SignedTransactionProblem.unreadableHeader) { try SignedTransactionText.normalize("AAAA.b.c") }
        #expect(throws: SignedTransactionProblem.unreadableHeader) {
            try SignedTransactionText.normalize(Self.jws(header: "[1,2]"))
        }
        #expect(throws: SignedTransactionProblem.unsupportedAlgorithm("none")) {
            try SignedTransactionText.normalize(Self.jws(header: #"{"alg":"none"}"#))
        }
        #expect(throws: SignedTransactionProblem.unsupportedAlgorithm(nil)) {
            try SignedTransactionText.normalize(Self.jws(header: #"{"alg":256}"#))
        }
        let huge = String(repeating: "A", count: SignedTransactionText.maximumBytes) + ".b.c"
        #expect(throws: SignedTransactionProblem.tooLarge(bytes: huge.utf8.count, limit: SignedTransactionText.maximumBytes)) {
            try SignedTransactionText.normalize(huge)
        }
    }
}
