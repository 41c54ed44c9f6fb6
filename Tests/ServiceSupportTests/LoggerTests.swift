import Foundation
import Synchronization
import Testing
import ServiceSupport

@testable import ServiceSupport

final class CapturingSink: LogSink {
    let lines = Locked<[String]>([])
    func write(line: String) { lines.withLock { $0.append(line) } }
}

@Suite struct LoggerTests {
    @Test func writesOneJSONObjectPerLineWithFields() throws {
        let sink = CapturingSink()
        let logger = Logger(label: "ingest", sink: sink).with(["instance": "a"])
        logger.info("accepted \"submission\"\n", ["submission_id": "s-1", "receipt_bytes": 2048, "ok": true])

        let lines = sink.lines.withLock { $0 }
        #expect(lines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["logger"] as? String == "ingest")
        #expect(object["msg"] as? String == "accepted \"submission\"\n")
        #expect(object["instance"] as? String == "a")
        #expect(object["submission_id"] as? String == "s-1")
        #expect(object["receipt_bytes"] as? Int == 2048)
        #expect(object["ok"] as? Bool == true)
        #expect((object["ts"] as? String)?.hasSuffix("Z") == true)
    }

    @Test func linesBelowTheThresholdAreDropped() {
        let sink = CapturingSink()
        let logger = Logger(label: "x", threshold: .warning, sink: sink)
        logger.info("quiet")
        logger.debug("quieter")
        logger.error("loud")
        #expect(sink.lines.withLock { $0.count } == 1)
    }

    @Test func controlCharactersAreEscaped() {
        #expect(JSONText.quoted("a\u{01}b\tc") == "\"a\\u0001b\\tc\"")
    }
}
