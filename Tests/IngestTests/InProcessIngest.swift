import Foundation
import Ingest
import Kafka
import ReceiptModel
import ServiceSupport
import TestSupport

/// The ingest service in this process on an ephemeral loopback port, over a fake publisher and a fake result feed.
struct InProcessIngest {
    let service: IngestService
    let publisher: FakePublisher
    let feed: FakeResultFeed
    let metrics: MetricsRegistry

    var port: UInt16 { service.port }

    static func start(
        _ publisher: FakePublisher = FakePublisher(), feed: FakeResultFeed = FakeResultFeed(),
        configure: (inout IngestSettings) -> Void = { _ in }
    ) throws -> InProcessIngest {
        var settings = IngestSettings(
            kafka: KafkaConfiguration(), listen: ListenAddress(host: "127.0.0.1", port: 0), httpThreads: 1)
        configure(&settings)
        let metrics = MetricsRegistry()
        let service = IngestService(
            settings: settings, publisher: publisher, resultFeed: feed,
            logger: Logger(label: "ingest-test", threshold: .error, sink: DiscardingSink()), metrics: metrics)
        try service.start()
        return InProcessIngest(service: service, publisher: publisher, feed: feed, metrics: metrics)
    }

    /// POSTs `json` to `target` with `Content-Type: application/json` and `headers`.
    func post(_ json: String, _ target: String = "/v1/receipts", headers: [(String, String)] = [])
        throws -> HTTPTestResponse
    {
        try HTTPTestConnection(port: port).request(
            "POST", target, headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8))
    }

    func get(_ target: String, headers: [(String, String)] = []) throws -> HTTPTestResponse {
        try HTTPTestConnection(port: port).request("GET", target, headers: headers)
    }

    /// The submissions written so far, decoded as the verifier decodes them.
    func writtenSubmissions() throws -> [Submission] {
        try publisher.published.filter { $0.topic == ServiceTopic.receipts.defaultName }.map {
            try Submission.decodeValidated(from: $0.value)
        }
    }

    func scrape() -> String { metrics.render() }
}

extension HTTPTestResponse {
    var errorCode: String? { (jsonObject?["error"] as? [String: Any])?["code"] as? String }
    var errorMessage: String? { (jsonObject?["error"] as? [String: Any])?["message"] as? String }
}

/// App Store Server Notifications V2 bodies as Apple posts them (unsigned: the ingest checks only their shape).
enum NotificationFixtures {
    static func base64URL(_ json: String) -> String {
        Base64URL.encode(Array(json.utf8))
    }

    static let header = base64URL(#"{"alg":"ES256","x5c":["MIIB","MIIC","MIID"]}"#)
    static let signature = Base64URL.encode((0..<64).map { UInt8($0) })

    /// A compact JWS with an ES256 header around `payload` (JSON).
    static func jws(_ payload: String) -> String {
        "\(header).\(base64URL(payload)).\(signature)"
    }

    /// `signedPayload` naming `uuid`, with a nested `signedTransactionInfo` naming `originalTransactionId`.
    static func signedPayload(
        uuid: String = "0b4a3e5f-7c11-4a8e-9d3c-2f6b8e1a9c01", originalTransactionId: String? = "2000000111"
    ) -> String {
        let transaction = originalTransactionId.map {
            jws(#"{"transactionId":"2000000999","originalTransactionId":"\#($0)","bundleId":"com.example.app"}"#)
        }
        let data = transaction.map { #","data":{"bundleId":"com.example.app","signedTransactionInfo":"\#($0)"}"# } ?? ""
        return jws(#"{"notificationType":"REFUND","notificationUUID":"\#(uuid)","signedDate":1764489600000\#(data)}"#)
    }

    static func body(_ signedPayload: String) -> String {
        #"{"signedPayload":"\#(signedPayload)"}"#
    }
}
