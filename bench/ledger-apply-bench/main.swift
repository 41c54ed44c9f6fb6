import Foundation
import Ledger
import LedgerRules
import Postgres

// In-process ledger apply: N verified results (one distinct consumable purchase each, 1,000 users, the shape
// bench/ledger.sh produces) applied through LedgerStore in batches, against the PostgreSQL at
// LEDGER_DATABASE_URL (a fresh database). No Kafka: what is measured is the ledger's own work per result
// (decoding, rules, statements built and read), so that `valgrind --tool=callgrind` counts it repeatably
// (bench/ledger-callgrind.sh). Prints results, batches, wall time and the balance check.
//
//   ledger-apply-bench COUNT [BATCH]

let arguments = CommandLine.arguments
let count = arguments.count > 1 ? Int(arguments[1]) ?? 10_000 : 10_000
let batchSize = arguments.count > 2 ? Int(arguments[2]) ?? 500 : 500
guard let url = ProcessInfo.processInfo.environment["LEDGER_DATABASE_URL"] else {
    FileHandle.standardError.write(Data("LEDGER_DATABASE_URL is required\n".utf8))
    exit(2)
}

func result(_ index: Int) -> [UInt8] {
    let key = "bench-\(index)"
    let user = "user-\(index % 1_000)"
    let text = """
        {"schema_version":1,"submission_id":"s-\(key)","user_id":"\(user)","client_id":null,"order_id":null,\
        "outcome":"verified","reason":null,"source":"signed_transaction","environment":"Production",\
        "bundle_id":"com.example.game","submission_fingerprint":"00","attempts":1,"verified_at_ms":0,\
        "transactions":[{"transaction_id":"\(key)","original_transaction_id":"\(key)","product_id":"gems_10",\
        "quantity":1,"purchase_date_ms":0,"expires_date_ms":null,"app_account_token":null,\
        "product_type":"consumable","credit_key":"apple:production:\(key)","creditable":true,\
        "credit":{"item":"gems","amount":10}}]}
        """
    return Array(text.utf8)
}

do throws(PostgresError) {
    let connection = try PostgresConnection(connectionString: url)
    try LedgerSchema.migrate(connection)
    let topics = LedgerTopics(results: "iap.receipts.results", events: "iap.purchase.events")
    let store = LedgerStore(topics: topics, policy: .keep)
    let records = (0..<count).map { index in
        LedgerRecord(topic: topics.results, partition: Int32(index % 8), offset: Int64(index / 8), value: result(index))
    }
    let started = Date()
    var batches = 0
    var start = 0
    while start < records.count {
        let batch = Array(records[start..<min(start + batchSize, records.count)])
        _ = try connection.transaction { session throws(PostgresError) in
            try store.apply(batch, in: session, nowMs: 1)
        }
        batches += 1
        start += batchSize
    }
    let seconds = Date().timeIntervalSince(started)
    let total = try connection.execute("SELECT coalesce(sum(amount), 0) AS total FROM balances").rows[0].int64("total")
    guard total == Int64(count) * 10 else {
        print("balances wrong: \(total) gems, expected \(count * 10)")
        exit(1)
    }
    print("\(count) results in \(batches) batches, \(String(format: "%.2f", seconds)) s (balances exact)")
} catch {
    print("database error: \(error)")
    exit(1)
}
