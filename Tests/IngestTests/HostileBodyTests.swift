import Ingest
import ReceiptModel
import Testing

/// Bodies built to hurt a JSON parser, at the size the body limits let through: each is a clean 400 in linear time.
@Suite("hostile request bodies")
struct HostileBodyTests {
    /// A million `[`, a number as long as the default body limit (1 MiB), invalid UTF-8, a raw NUL byte.
    static let bodies: [(name: String, bytes: [UInt8])] = [
        ("deep", [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)),
        ("huge number", Array(#"{"receipt_data":"AAAA","order_id":"#.utf8) + [UInt8](repeating: 0x37, count: 1 << 20)),
        ("invalid UTF-8", Array(#"{"receipt_data":"AAAA","signedPayload":""#.utf8) + [0xFF, 0xFE, 0x22, 0x7D]),
        ("raw NUL", Array(#"{"receipt_data":"AA\#u{0}AA","signedPayload":"a.b\#u{0}.c"}"#.utf8)),
    ]

    @Test("POST /v1/receipts and POST /v1/apple/notifications refuse each with 400 in linear time")
    func cleanRefusals() {
        for (name, body) in Self.bodies {
            let started = ContinuousClock.now
            #expect(throws: APIError.self, "\(name)") { try SubmissionRequest.parse(body) }
            #expect(throws: NotificationRequest.Invalid.self, "\(name)") { try NotificationRequest.parse(body) }
            do {
                _ = try SubmissionRequest.parse(body)
            } catch {
                #expect(error.status == 400, "\(name): \(error)")
            }
            do {
                _ = try NotificationRequest.parse(body)
            } catch {
                let error = APIError(error)
                #expect(error.status == 400 && error.code == "invalid_notification", "\(name): \(error)")
            }
            // Well under a second each; a generous bound for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(10), "\(name)")
        }
    }
}
