import Crypto
import FuzzSupport
import Foundation
@_spi(Testing) import SignedData

// Compact JWS parsing and Apple's chain policy (the signed transactions, Server API answers and notifications the
// verifier checks), anchored to Apple's test CA so the seeds (Apple's mock signed data) verify.
// Properties: no crash, no leak; a cached verifier and one without a cache always agree (the cache never widens
// what is accepted), and what verifies has a payload that decodes.
let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Tests/SignedDataTests/Fixtures/apple-mock-signed-data")
let testRoot: [Certificate] = {
    do {
        return [try Certificate(der: Array(try Data(contentsOf: fixtures.appendingPathComponent("testCA.der"))))]
    } catch {
        FuzzDriver.violated("Apple's test CA fixture is unreadable: \(error)")
    }
}()
let cached = AppleSignedDataVerifier(trustedRoots: testRoot)
let uncached = AppleSignedDataVerifier(trustedRoots: testRoot, cacheCapacity: 0)

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: FuzzDriver.bytes(data, size), as: UTF8.self)
    _ = CompactJWS.looksLikeES256(text)
    let first = Result { () throws(SignedDataError) in try cached.verify(text) }
    let second = Result { () throws(SignedDataError) in try uncached.verify(text) }
    switch (first, second) {
    case (.success(let a), .success(let b)):
        guard a.payload == b.payload, a.signedDateMs == b.signedDateMs else {
            FuzzDriver.violated("cached and uncached verification return different payloads")
        }
        _ = try? SignedPayloadDecoder.decode(JWSTransactionPayload.self, from: a.payload)
        _ = try? SignedPayloadDecoder.decode(NotificationPayload.self, from: a.payload)
    case (.failure, .failure):
        break
    default:
        FuzzDriver.violated("cached and uncached verification disagree on whether the JWS verifies")
    }
    return 0
}

FuzzDriver.run(testOneInput)
