import Foundation
import FuzzSupport
import NotificationFuzzSupport
import ReceiptModel
import SignedData

// What a notification says once its signature verified: the input is a notification payload's JSON, which this
// target signs with the fixed PKI's key (so mutations get past the signature check, which they never do in
// fuzz-notification-record), wrapped in a record and run through the verifier's processing. A `signedTransactionInfo`
// or `signedRenewalInfo` given as a JSON object is signed too and put in as its JWS. Seeds: the fake App Store's
// notifications of every type, decoded.
// Properties: those of NotificationHarness.check, and a notification signed by a trusted key at a signedDate inside
// its chain's validity (nested ones too) is never refused as invalid_signature.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzDriver.bytes(data, size)
    var payload = input
    // Whether every JWS in it is one this target signed with a signedDate its chain was valid at.
    var expectVerifies = true
    if var object = (try? JSONSerialization.jsonObject(with: Data(input))) as? [String: Any],
        var app = object["data"] as? [String: Any]
    {
        var signedNested = false
        for field in ["signedTransactionInfo", "signedRenewalInfo"] {
            guard let nested = app[field] else { continue }
            guard let fields = nested as? [String: Any],
                let json = try? JSONSerialization.data(withJSONObject: fields), let jws = sign(Array(json))
            else {
                // A string is a JWS this target did not sign: it may verify or not.
                expectVerifies = false
                continue
            }
            let nestedVerifies =
                field == "signedTransactionInfo"
                ? signable(Array(json), as: JWSTransactionPayload.self) { $0.signedDate }
                : signable(Array(json), as: JWSRenewalInfoPayload.self) { $0.signedDate }
            expectVerifies = expectVerifies && nestedVerifies && jws.utf8.count <= CompactJWS.maximumLength
            app[field] = jws
            signedNested = true
        }
        if signedNested {
            object["data"] = app
            guard let rewritten = try? JSONSerialization.data(withJSONObject: object) else { return 0 }
            payload = Array(rewritten)
        }
    }
    expectVerifies = expectVerifies && signable(payload, as: NotificationPayload.self) { $0.signedDate }
    guard let signedPayload = sign(payload) else { return 0 }
    expectVerifies = expectVerifies && signedPayload.utf8.count <= CompactJWS.maximumLength
    guard let record = try? MessageCoding.encode(
        NotificationRecord(signedPayload: signedPayload, receivedAtMs: 1_764_489_600_000))
    else {
        FuzzDriver.violated("a notification record does not encode")
    }
    if case .failure(let rejection) = NotificationHarness.check(record), rejection.reason == .invalidSignature,
        expectVerifies
    {
        FuzzDriver.violated("a notification signed by a trusted key within its validity is refused: \(rejection)")
    }
    return 0
}

/// A JWS of `payload` by the fixed PKI's leaf; nil when the payload is not a JSON object (a payload must be one).
func sign(_ payload: [UInt8]) -> String? {
    guard (try? JSONSerialization.jsonObject(with: Data(payload))) is [String: Any] else { return nil }
    do {
        return try NotificationHarness.signer.sign(payload: payload)
    } catch {
        FuzzDriver.violated("signing failed: \(error)")
    }
}

/// Whether `payload` decodes as `type` with a signedDate inside the chain's validity (so its JWS must verify).
func signable<Payload: Decodable>(_ payload: [UInt8], as type: Payload.Type, signedDate: (Payload) -> Int64?) -> Bool {
    guard let decoded = try? SignedPayloadDecoder.decode(type, from: payload), let date = signedDate(decoded) else {
        return false
    }
    return NotificationHarness.validWindowMs.contains(date)
}

FuzzDriver.run(testOneInput)
