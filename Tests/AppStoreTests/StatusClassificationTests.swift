@testable import HTTPClient
import ReceiptModel
import Testing

@testable import AppStore

@Suite struct StatusClassificationTests {
    @Test(arguments: [
        (0, StatusClassification.success),
        (21006, .success),
        (21000, .configurationError),
        (21004, .configurationError),
        (21001, .permanent(.invalidReceipt)),
        (21003, .permanent(.invalidReceipt)),
        (21010, .permanent(.invalidReceipt)),
        (21002, .retry(.malformedReceipt)),
        (21005, .retry(.transient)),
        (21009, .retry(.transient)),
        (21007, .redirect(to: .sandbox)),
        (21008, .redirect(to: .production)),
        (12345, .retry(.transient)),
    ])
    func classifiesEveryDocumentedStatus(status: Int, expected: StatusClassification) {
        #expect(StatusClassification.of(status: status, isRetryable: nil) == expected)
    }

    @Test(arguments: [21100, 21150, 21199])
    func internalErrorsAreRetriedOnlyWhenAppleSaysSo(status: Int) {
        #expect(StatusClassification.of(status: status, isRetryable: true) == .retry(.transient))
        #expect(StatusClassification.of(status: status, isRetryable: false) == .permanent(.invalidReceipt))
        #expect(StatusClassification.of(status: status, isRetryable: nil) == .permanent(.invalidReceipt))
    }

    @Test func everyHTTPStatusButSuccessIsRetried() {
        #expect(StatusClassification.of(httpStatus: 200) == nil)
        for status in [301, 400, 403, 404, 429, 500, 502, 503, 504] {
            #expect(StatusClassification.of(httpStatus: status) == .retry(.transient))
        }
    }

    typealias Interpret = VerifyReceiptBackend
    static func interpret(_ status: Int, _ body: String) -> BackendAnswer {
        Interpret.interpret(
            .success(HTTPClientResponse(status: status, body: Array(body.utf8))), environment: .production, calls: 1
        ).backendAnswer
    }

    @Test func nonJSONAndEmptyBodiesAreRetryableWhateverTheHTTPStatus() {
        #expect(Self.interpret(503, "<html>Service Unavailable</html>").result == .retryable(.transient))
        #expect(Self.interpret(200, "").result == .retryable(.transient))
        #expect(Self.interpret(200, "OK").result == .retryable(.transient))
        #expect(
            Self.interpret(500, #"{"status":0,"receipt":{"bundle_id":"b","in_app":[]}}"#).result
                == .retryable(.transient))
    }

    @Test func transportErrorsAreRetryable() {
        for kind in [HTTPClientError.Kind.timeout, .connectionFailed, .tls, .responseTooLarge, .shutdown] {
            let answer = Interpret.interpret(
                .failure(HTTPClientError(kind: kind, message: "x")), environment: .sandbox, calls: 1
            ).backendAnswer
            #expect(answer.result == .retryable(.transient))
            #expect(answer.appleStatus == nil)
        }
    }

    @Test func aValidAnswerBecomesAReceiptOfTheAnsweringEnvironment() {
        let answer = Interpret.interpret(
            .success(
                HTTPClientResponse(
                    status: 200,
                    body: Array(
                        #"{"status":0,"environment":"Sandbox","receipt":{"bundle_id":"b","in_app":[]}}"#.utf8))),
            environment: .sandbox, calls: 2
        ).backendAnswer
        #expect(answer.result == .receipt(AppleReceipt(environment: .sandbox, bundleId: "b", inApp: [])))
        #expect(answer.calls == 2)
        #expect(answer.appleStatus == 0)
    }
}
