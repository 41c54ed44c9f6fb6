import Foundation
import Ingest
import ReceiptModel
import ServiceSupport

// The ingest's results follower in process, without Kafka: COUNT result messages as the verifiers write them (a
// verified result of one consumable with its catalog credit, price and storefront, about 1.1 KB, each for a new
// submission), each copied from one template with its own ids, handed one by one to the result index exactly as
// `KafkaResultFeed` delivers them (`ResultIndex.record(value:timestampMs:)`: the index's read of the message and its
// bookkeeping). Every ingest instance pays this for every result on the topic. `valgrind --tool=callgrind` counts it
// repeatably (bench/follower-callgrind.sh): the difference of two counts is the instructions per result.
// Prints the outcomes by kind; exits 1 unless every message was indexed.
//
//   follower-path-bench COUNT

guard CommandLine.arguments.count == 2, let count = Int(CommandLine.arguments[1]), count > 0 else {
    FileHandle.standardError.write(Data("usage: follower-path-bench COUNT\n".utf8))
    exit(2)
}

let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
/// Ten digits that each message overwrites with its number (its submission, order and transaction ids).
let placeholder = "0000000000"
let template: [UInt8] = {
    let id = "20" + placeholder
    let transaction = VerifiedTransaction(
        TransactionFields(
            transactionId: id, originalTransactionId: id, productId: "com.example.game.gems100", quantity: 1,
            purchaseDateMs: nowMs - 1_000, inAppOwnershipType: "PURCHASED", productType: .consumable, price: 990_000,
            currency: "USD", transactionReason: "PURCHASE", appTransactionId: "704289572311"),
        credit: .object(["item": .string("gems"), "amount": .integer(100)]), environment: .production)
    let result = VerificationResult(
        submissionId: "submission-" + placeholder, orderId: "order-" + placeholder, userId: "user-0042",
        clientId: nil, outcome: .verified, reason: nil, source: .signedTransaction, message: nil, appleStatus: nil,
        environment: .production, bundleId: "com.example.game", transactions: [transaction],
        submissionFingerprint: String(repeating: "ab", count: 32), attempts: 1, verifiedAtMs: nowMs)
    return VerificationResultJSON.encode(result)
}()
/// Where the placeholder's digits are in the template.
let digitRuns: [Range<Int>] = {
    let pattern = Array(placeholder.utf8)
    var runs: [Range<Int>] = []
    var start = 0
    while start + pattern.count <= template.count {
        if template[start..<start + pattern.count].elementsEqual(pattern) {
            runs.append(start..<start + pattern.count)
            start += pattern.count
        } else {
            start += 1
        }
    }
    return runs
}()

/// Message `n`: the template's bytes (copied, as the follower copies each payload out of librdkafka) with `n` in
/// every id.
func message(_ n: Int) -> [UInt8] {
    var value = template
    var digits = n
    var place = placeholder.utf8.count
    var written = [UInt8](repeating: UInt8(ascii: "0"), count: place)
    while place > 0 {
        place -= 1
        written[place] = UInt8(ascii: "0") + UInt8(digits % 10)
        digits /= 10
    }
    for run in digitRuns { value.replaceSubrange(run, with: written) }
    return value
}

let index = ResultIndex()
var indexed = 0
var other: [String: Int] = [:]
for n in 0..<count {
    switch index.record(value: message(n), timestampMs: nowMs + Int64(n)) {
    case .indexed: indexed += 1
    case let outcome: other[String(describing: outcome).prefix { $0 != "(" }.description, default: 0] += 1
    }
}
print("\(count) results of \(template.count) bytes: \(indexed) indexed\(other.isEmpty ? "" : ", others \(other)")")
exit(indexed == count ? 0 : 1)
