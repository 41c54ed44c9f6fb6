import Foundation
import Testing

/// Issue 29 item 5: docs/clients/ios.md names only what the ingest's API defines. `scripts/check-client-guide.py`
/// reads the guide's JSON and Swift blocks and its snake_case terms and finds each in schemas/openapi.yaml or the
/// schemas it refers to; here it runs on the guide, and on a copy with a misspelt field, which it must refuse.
@Suite("docs/clients/ios.md against schemas/openapi.yaml")
struct ClientGuideTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let guide = root.appendingPathComponent("docs/clients/ios.md").path

    private func check(_ guide: String) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", Self.root.appendingPathComponent("scripts/check-client-guide.py").path, guide,
            SchemaValidator.schemasDirectory,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test("every field, parameter, header, outcome, reason and error code the guide names is in the API's schemas")
    func theGuideNamesOnlyDefinedFields() throws {
        let (status, output) = try check(Self.guide)
        #expect(status == 0, "\(output)")
        #expect(output.contains("all defined"), "\(output)")
    }

    @Test("a field the API does not have, in a JSON block, a Swift CodingKey or the prose, is refused and named")
    func aMisspeltFieldIsRefused() throws {
        let text = try String(contentsOfFile: Self.guide, encoding: .utf8)
        let mutations = [
            (#""expected_transaction_id": "1000000460004095", "submission_id""#,
             #""expected_transaction": "1000000460004095", "submission_id""#, "expected_transaction"),
            (#"case creditKey = "credit_key""#, #"case creditKey = "creditKey""#, "creditKey"),
            ("`not_creditable_reason` `upgraded`", "`not_creditable_cause` `upgraded`", "not_creditable_cause"),
            (#"URLQueryItem(name: "wait_ms""#, #"URLQueryItem(name: "wait""#, "wait"),
        ]
        for (original, misspelt, name) in mutations {
            #expect(text.contains(original), "the guide no longer contains \(original)")
            let copy = FileManager.default.temporaryDirectory
                .appendingPathComponent("ios-guide-\(UUID().uuidString).md")
            try text.replacingOccurrences(of: original, with: misspelt).write(
                to: copy, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: copy) }
            let (status, output) = try check(copy.path)
            #expect(status == 1, "\(name): \(output)")
            #expect(output.contains("'\(name)'"), "\(name): \(output)")
        }
    }
}
