import Foundation
import FuzzSupport
import HTTPClient
import ReceiptModel

@testable import AppStoreServerAPI

// App Store Server API answers as the client reads them (AppStoreServerAPIClient.interpret): the input is a body,
// read as each endpoint's 2xx answer (Get Transaction Info, Get Transaction History, Get Notification History) and as
// an error body under every status class; its first line is also a 429's Retry-After.
// Properties: no crash, no leak; an unreadable 2xx is retryable, and so is one without the page's list (never an
// empty history); an error's kind is the classification of its status and Apple's errorCode, and its message is
// bounded whatever the body (it is logged); a 429 holds within RetryAfter's bounds, never longer for a later clock,
// and spaces or tabs around the value change nothing; the records the backfill writes from a history page read back
// unchanged.
let now: Int64 = 1_764_489_600_000

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let body = FuzzDriver.bytes(data, size)
    let key = ServerAPIPacing.Key(.transactionInfo, .production)

    let info: Result<TransactionInfoResponse, ServerAPIError> = interpret(200, body, key)
    let history: Result<HistoryResponse, ServerAPIError> = interpret(200, body, key)
    let notifications: Result<NotificationHistoryResponse, ServerAPIError> = interpret(201, body, key)
    for failure in [info.failure, history.failure, notifications.failure].compactMap({ $0 }) {
        guard failure.kind == .retryable, failure.message.utf8.count < 300 else {
            FuzzDriver.violated("an unreadable 2xx answer is not a retryable error with a short message")
        }
    }
    // A page without its list is unreadable, never an empty page (an empty history rejects a receipt).
    if let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] {
        if case .success = history, !(object["signedTransactions"] is [Any]) {
            FuzzDriver.violated("a 200 without signedTransactions is read as a history page")
        }
        if case .success = notifications, !(object["notificationHistory"] is [Any]) {
            FuzzDriver.violated("a 200 without notificationHistory is read as a notification history page")
        }
    }
    if case .success(let page) = notifications {
        for item in page.notificationHistory {
            let record = NotificationRecord(
                signedPayload: item.signedPayload, receivedAtMs: now, origin: .notificationHistory)
            guard let value = try? MessageCoding.encode(record),
                (try? MessageCoding.decode(NotificationRecord.self, from: value)) == record
            else {
                FuzzDriver.violated("a notification history item does not survive its record's encoding")
            }
        }
    }

    let errorBody = try? JSONDecoder().decode(ServerAPIErrorBody.self, from: Data(body))
    for status in [302, 400, 403, 404, 409, 500, 503] {
        let answer: Result<TransactionInfoResponse, ServerAPIError> = interpret(status, body, key)
        guard let error = answer.failure else { FuzzDriver.violated("HTTP \(status) read as a success") }
        guard error.kind == ServerAPIError.kind(httpStatus: status, errorCode: errorBody?.errorCode),
            error.errorCode == errorBody?.errorCode, error.httpStatus == status
        else {
            FuzzDriver.violated("HTTP \(status)'s error is not the classification of its status and errorCode")
        }
        // The prefix, the status, a 64-bit errorCode, 200 characters of errorMessage (each at most 4 UTF-8
        // bytes) and the advice.
        guard error.message.utf8.count <= 200 + 800 + 200 else {
            FuzzDriver.violated("an error message quotes more than 200 characters of the body")
        }
    }

    let firstLine = String(decoding: body.prefix { $0 != UInt8(ascii: "\n") }.prefix(64), as: UTF8.self)
    var response = HTTPClientResponse(status: 429, body: body, headers: ["retry-after": firstLine])
    let limited: Result<TransactionInfoResponse, ServerAPIError> = AppStoreServerAPIClient.interpret(
        response, key: key, nowWallMs: now)
    guard let error = limited.failure, error.kind == .rateLimited, let holdMs = error.retryAfterMs,
        (RetryAfter.minimumHoldMs...RetryAfter.maximumHoldMs).contains(Int64(holdMs))
    else {
        FuzzDriver.violated("a 429 is not rate limited with a hold within RetryAfter's bounds")
    }
    let hold = RetryAfter.holdMs(firstLine, nowWallMs: now)
    guard Int64(holdMs) == hold, RetryAfter.holdMs(firstLine, nowWallMs: now + 5_000) <= hold else {
        FuzzDriver.violated("a Retry-After holds longer when read later")
    }
    guard RetryAfter.holdMs(" \t" + firstLine + "\t ", nowWallMs: now) == hold else {
        FuzzDriver.violated("spaces or tabs around a Retry-After value change its hold")
    }
    response.headers = [:]
    let absent: Result<TransactionInfoResponse, ServerAPIError> = AppStoreServerAPIClient.interpret(
        response, key: key, nowWallMs: now)
    guard absent.failure?.retryAfterMs == Int(RetryAfter.defaultHoldMs) else {
        FuzzDriver.violated("a 429 without Retry-After does not hold for the default")
    }
    return 0
}

func interpret<Value: Decodable>(_ status: Int, _ body: [UInt8], _ key: ServerAPIPacing.Key)
    -> Result<Value, ServerAPIError>
{
    AppStoreServerAPIClient.interpret(HTTPClientResponse(status: status, body: body), key: key, nowWallMs: now)
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

FuzzDriver.run(testOneInput)
