import Foundation
import SignedData
import Testing
import TestPKI

/// `appTransactionId` on transactions and renewal info, and the app transaction payload itself (issue 29 item 2),
/// through the real decoder.
@Suite("App transaction payloads")
struct AppTransactionPayloadTests {
    private func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try SignedPayloadDecoder.decode(type, from: Array(json.utf8))
    }

    @Test("a transaction and a renewal carry appTransactionId when Apple gives it, nil when not")
    func appTransactionIdOnTransactionsAndRenewals() throws {
        let with = try decode(JWSTransactionPayload.self, #"{"transactionId":"1","appTransactionId":"705000000000001"}"#)
        #expect(with.appTransactionId == "705000000000001")
        // A number (an id written by a tool as JSON integer) is read as its digits.
        #expect(try decode(JWSTransactionPayload.self, #"{"appTransactionId":705000000000002}"#).appTransactionId
            == "705000000000002")
        #expect(try decode(JWSTransactionPayload.self, #"{"transactionId":"1"}"#).appTransactionId == nil)
        #expect(try decode(JWSTransactionPayload.self, #"{"appTransactionId":null}"#).appTransactionId == nil)
        let renewal = try decode(JWSRenewalInfoPayload.self, #"{"originalTransactionId":"1","appTransactionId":"7"}"#)
        #expect(renewal.appTransactionId == "7")
        #expect(try decode(JWSRenewalInfoPayload.self, #"{"originalTransactionId":"1"}"#).appTransactionId == nil)
    }

    @Test("decodes every app transaction field Apple documents; its environment is receiptType; unknown fields ignored")
    func everyField() throws {
        let decoded = try decode(
            JWSAppTransactionPayload.self,
            """
            {"receiptType":"Production","appAppleId":1234567890,"bundleId":"com.example","applicationVersion":"42",
            "versionExternalIdentifier":834289191,"receiptCreationDate":1764489600000,
            "originalPurchaseDate":1600000000000.5,"originalApplicationVersion":"1.0",
            "deviceVerification":"ZmFrZQ==","deviceVerificationNonce":"9f3e2c1a-4b5d-4e6f-8a7b-0c1d2e3f4a5b",
            "preorderDate":"1590000000000","appTransactionId":"705000000000001","originalPlatform":"iOS",
            "someFutureField":{"a":1}}
            """)
        #expect(decoded.receiptType == "Production")
        #expect(decoded.appAppleId == 1_234_567_890)
        #expect(decoded.bundleId == "com.example")
        #expect(decoded.applicationVersion == "42")
        #expect(decoded.versionExternalIdentifier == 834_289_191)
        #expect(decoded.receiptCreationDate == 1_764_489_600_000)
        #expect(decoded.originalPurchaseDate == 1_600_000_000_000)
        #expect(decoded.originalApplicationVersion == "1.0")
        #expect(decoded.deviceVerification == "ZmFrZQ==")
        #expect(decoded.deviceVerificationNonce == "9f3e2c1a-4b5d-4e6f-8a7b-0c1d2e3f4a5b")
        #expect(decoded.preorderDate == 1_590_000_000_000)
        #expect(decoded.appTransactionId == "705000000000001")
        #expect(decoded.originalPlatform == "iOS")
        #expect(decoded.environment == .production)
        #expect(decoded.signedDate == 1_764_489_600_000)
        #expect(decoded.validationDateMs == 1_764_489_600_000)
    }

    @Test("members Apple never writes in an app transaction (environment, signedDate) are not read")
    func onlyApplesMembersAreRead() throws {
        // Issue 41 item 5: the fake App Store used to add both, and the decoder relied on `environment`.
        let invented = try decode(
            JWSAppTransactionPayload.self,
            #"{"receiptCreationDate":1700000000000,"environment":"Production","signedDate":1700000000999}"#)
        #expect(invented.environment == nil && invented.receiptType == nil)
        #expect(invented.validationDateMs == 1_700_000_000_000)
        let sandbox = try decode(JWSAppTransactionPayload.self, #"{"receiptType":"Sandbox"}"#)
        #expect(sandbox.environment == .sandbox && sandbox.validationDateMs == nil)
        #expect(try decode(JWSAppTransactionPayload.self, #"{"receiptType":"Xcode"}"#).environment == .xcode)
    }

    @Test("a signed app transaction verifies with the same verifier, chain and roots as a signed transaction")
    func verifiedLikeATransaction() throws {
        let pki = try TestSigningPKI.mint()
        let payload = #"{"bundleId":"com.example","appTransactionId":"9","receiptType":"Sandbox","receiptCreationDate":"#
            + "\(pki.signedDateMs)}"
        let jws = try pki.sign(payload: Array(payload.utf8))
        let verified = try pki.verifier().verify(jws, as: JWSAppTransactionPayload.self, signedDate: \.validationDateMs)
        #expect(verified.payload.appTransactionId == "9" && verified.payload.environment == .sandbox)
        for defect in TestSigningPKI.Defect.allCases {
            let broken = try pki.sign(payload: Array(payload.utf8), defect: defect)
            #expect(throws: SignedDataError.self, "\(defect)") {
                try pki.verifier().verify(broken, as: JWSAppTransactionPayload.self, signedDate: \.validationDateMs)
            }
        }
    }
}
