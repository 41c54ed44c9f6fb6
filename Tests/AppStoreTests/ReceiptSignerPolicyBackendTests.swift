import AppStore
import Crypto
import FakeAppStore
import Foundation
import ReceiptModel
import SignedData
import Testing
import TestPKI

/// `RECEIPT_BACKEND=server-api`: a receipt is judged on Apple's receipt-signer policy before Apple is asked anything.
@Suite("Receipt signer policy through the Server API backend")
struct ReceiptSignerPolicyBackendTests {
    @Test func aReceiptSignedByAnythingButApplesReceiptSignerIsInvalidSignatureWithoutAnyCall() async throws {
        let harness = try ServerAPIHarness()
        let receiptPKI = try TestSigningPKI.mint()
        let id = "1000000000000951"
        harness.fake.register(FakeServerTransaction(id: id))
        let payload = MintedReceipt.payload(
            bundleId: ServerAPIHarness.bundleId, receiptType: "Production",
            creationDate: MintedReceipt.rfc3339(receiptPKI.referenceTime), transactions: [(id, "gems_100")])
        let backend = harness.backend(receiptRoots: [receiptPKI.rootCertificate])

        for defect in TestSigningPKI.ReceiptSignerDefect.allCases {
            let forged = Data(try receiptPKI.signReceipt(content: payload, defect: defect)).base64EncodedString()
            let verdict = try #require(await harness.verify(.receipt(forged), with: backend).verdict, "\(defect)")
            #expect(verdict.outcome == .rejected && verdict.reason == .invalidSignature, "\(defect)")
            #expect(verdict.attempts == 0, "\(defect)")
            let policyRule = defect == .untrustedRoot ? "receipt signer: certificate chain rejected" : "receipt signer policy: "
            #expect(verdict.message?.hasPrefix("the receipt was refused: " + policyRule) == true, "\(verdict.message ?? "")")
            #expect(verdict.message?.contains(id) == false, "\(defect): the message quotes the receipt")
        }
        #expect(harness.fake.serverAPICalls(transaction: id) == (0, 0))

        // The same content signed the way Apple signs receipts is verified through Apple's history.
        let genuine = Data(try receiptPKI.signReceipt(content: payload)).base64EncodedString()
        let verdict = try #require(await harness.verify(.receipt(genuine), with: backend).verdict)
        #expect(verdict.outcome == .verified && verdict.transactions.map(\.transactionId) == [id])
        #expect(harness.fake.serverAPICalls(transaction: id) == (1, 0))
    }

    @Test func anXcodeReceiptIsRefusedEvenWhenItsStoreKitCertificateIsConfiguredAsTheRoot() async throws {
        let harness = try ServerAPIHarness(allowedBundleIds: ["com.example.naturelab.backyardbirds.example"])
        let storeKit = try Certificate.load(path: MintedReceipt.signedDataFixturePath("storekit-testing-certificate.cer"))
        let receipt = try MintedReceipt.signedDataFixture("receipt-xcode-with-purchases.b64")
        for roots in [storeKit, try Certificate.load(path: try #require(AppleRootCertificates.defaultReceiptRootsPath))] {
            let verdict = try #require(await harness.verify(.receipt(receipt), with: harness.backend(receiptRoots: roots)).verdict)
            #expect(verdict.outcome == .rejected && verdict.reason == .invalidSignature)
            #expect(verdict.attempts == 0)
        }
        let configured = try #require(
            await harness.verify(.receipt(receipt), with: harness.backend(receiptRoots: storeKit)).verdict)
        #expect(configured.message?.contains("as Xcode's StoreKit testing receipts are") == true)
    }
}
