import FuzzSupport
import ReceiptModel

// The body of POST /v1/apple/notifications (no API key: anyone can post): the shape check and the unverified
// reading of originalTransactionId and notificationUUID for the Kafka key and header.
// Properties: no crash, no leak; an accepted body has a signedPayload of three base64url segments, a key and a
// notification-uuid header of 1 to 128 visible ASCII characters (or none), and the record the ingest writes for it
// reads back unchanged as the verifier decodes it (so its only possible refusals are about the signature and what it
// signs, never the record).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let request = try? NotificationRequest.parse(FuzzDriver.bytes(data, size)) else { return 0 }
    let segments = request.signedPayload.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    guard segments.count == 3, segments.allSatisfy({ !$0.isEmpty && $0.allSatisfy(isBase64URL) }) else {
        FuzzDriver.violated("an accepted notification whose signedPayload is not three base64url segments")
    }
    for text in [request.originalTransactionId, request.notificationUUID].compactMap({ $0 }) {
        guard (1...128).contains(text.utf8.count), text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            FuzzDriver.violated("a Kafka key or header read from an accepted notification is not short visible ASCII")
        }
    }
    if request.partitionKey != (request.originalTransactionId ?? request.notificationUUID) {
        FuzzDriver.violated("the partition key is not the original transaction id, else the notification UUID")
    }
    let record = NotificationRecord(signedPayload: request.signedPayload, receivedAtMs: 1_764_489_600_000)
    guard let value = try? MessageCoding.encode(record),
        let read = try? MessageCoding.decode(NotificationRecord.self, from: value), read == record,
        read.schemaVersion == NotificationRecord.currentSchemaVersion
    else {
        FuzzDriver.violated("the record written for an accepted notification does not read back unchanged")
    }
    return 0
}

func isBase64URL(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
        true
    default:
        false
    }
}

FuzzDriver.run(testOneInput)
