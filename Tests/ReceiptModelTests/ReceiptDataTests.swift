import Testing

@testable import ReceiptModel

@Suite struct ReceiptDataTests {
    @Test func lineBreaksAndSpacesAreRemoved() throws {
        #expect(try ReceiptData.normalize("TUlJ\r\nVGFn\n Zz09\t") == "TUlJVGFnZz09")
    }

    @Test func paddedBase64IsAccepted() throws {
        #expect(try ReceiptData.normalize("YQ==") == "YQ==")
        #expect(try ReceiptData.normalize("YWI=") == "YWI=")
        #expect(try ReceiptData.normalize("a+b/") == "a+b/")
    }

    @Test(arguments: ["YQ=", "Y===", "YQ==YQ==", "a-b_", "abc", "ab$d", "=abc", "A=B=", "AB=A", "YQ==\n=="])
    func invalidBase64IsRefused(_ text: String) {
        #expect(throws: ReceiptDataProblem.notBase64) { try ReceiptData.normalize(text) }
    }

    @Test func emptyIsRefused() {
        #expect(throws: ReceiptDataProblem.empty) { try ReceiptData.normalize(" \n") }
    }

    @Test func storeKit2TransactionIsRecognized() {
        let jws = "eyJhbGciOiJFUzI1NiIsIng1YyI6WyJ.eyJ0cmFuc2FjdGlvbklkIjoiMjAwMDAwMDAw.c2lnbmF0dXJl"
        #expect(throws: ReceiptDataProblem.storeKit2Transaction) { try ReceiptData.normalize(jws) }
        #expect(ReceiptDataProblem.storeKit2Transaction.description.contains("app receipt"))
    }
}
