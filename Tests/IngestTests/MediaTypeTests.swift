import Testing

@testable import Ingest

/// `POST /v1/receipts` takes `application/json` and `application/...+json`, parameters and case aside (415 otherwise).
struct MediaTypeTests {
    @Test(arguments: [
        ("application/json", true),
        ("Application/JSON", true),
        ("application/json; charset=utf-8", true),
        ("  application/json  ;charset=UTF-8", true),
        ("\tapplication/json\t", true),
        ("application/vnd.api+json", true),
        ("APPLICATION/PROBLEM+JSON; q=1", true),
        ("application/+json", false),
        ("application/jsonx", false),
        ("application/json5", false),
        ("text/json", false),
        ("application/x-www-form-urlencoded", false),
        ("application/", false),
        ("", false),
        ("json", false),
        ("applicätion/json", false),
    ])
    func isJSON(_ contentType: String, _ expected: Bool) {
        #expect(IngestHandler.isJSON(contentType) == expected)
    }
}
