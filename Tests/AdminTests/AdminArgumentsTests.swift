import Admin
import AppStoreServerAPI
import ServiceSupport
import Testing

/// The command line: each subcommand's arguments, Apple's limits checked before anything is sent, and the exit
/// status of bad usage.
@Suite struct AdminArgumentsTests {
    private func parse(_ arguments: [String]) throws(CommandLineError) -> AdminOptions {
        var reader = CommandLineArguments(arguments)
        return try AdminOptions.parse(&reader, makeRequestId: { "generated-id" })
    }

    private func problem(_ arguments: [String]) -> String? {
        do throws(CommandLineError) {
            _ = try parse(arguments)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func everySubcommandReadsItsArgumentsAndTheCommonOptions() throws {
        #expect(try parse(["lookup-order", "MK5TTTVWJH"]).command == .lookupOrder(orderId: "MK5TTTVWJH"))
        let status = try parse(["subscription-status", "2000000000000001", "--status", "1", "--json"])
        #expect(status.command == .subscriptionStatus(transactionId: "2000000000000001", status: 1))
        #expect(status.json)
        let refunds = try parse(["refund-history", "--environment", "sandbox", "2000000000000002"])
        #expect(refunds.command == .refundHistory(transactionId: "2000000000000002"))
        #expect(refunds.environment == .sandbox)
        #expect(
            try parse(["set-account-token", "2000000000000003", "7E3FB20B-4CDB-47CC-936D-99D65F608138"]).command
                == .setAccountToken(
                    originalTransactionId: "2000000000000003", token: "7e3fb20b-4cdb-47cc-936d-99d65f608138"))
        let declare = try parse([
            "set-account-token", "2000000000000003", "7e3fb20b-4cdb-47cc-936d-99d65f608138", "--user", "u-42",
            "--ledger-url", "http://receipt-ledger:8081",
        ])
        #expect(
            declare.command
                == .setAccountToken(
                    originalTransactionId: "2000000000000003", token: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
                    user: "u-42"))
        #expect(declare.ledgerURL == "http://receipt-ledger:8081")
        #expect(try parse(["lookup-order", "A", "--ledger-url", "https://ledger.example"]).ledgerURL == "https://ledger.example")
        let extend = try parse([
            "extend-renewal", "2000000000000004", "--days", "7", "--reason", "3", "--request-id", "outage-1",
            "--dry-run", "--bundle-id", "com.example.other", "--deadline-seconds", "5",
        ])
        #expect(
            extend.command
                == .extendRenewal(
                    originalTransactionId: "2000000000000004",
                    ExtendRenewalDateRequest(extendByDays: 7, extendReasonCode: 3, requestIdentifier: "outage-1"),
                    dryRun: true))
        #expect(extend.bundleId == "com.example.other" && extend.deadlineSeconds == 5)
        #expect(
            try parse([
                "mass-extend", "--product", "monthly", "--days", "90", "--reason", "0", "--storefront", "usa,CAN",
                "--storefront", "DEU",
            ]).command
                == .massExtend(
                    MassExtendRenewalDateRequest(
                        extendByDays: 90, extendReasonCode: 0, requestIdentifier: "generated-id", productId: "monthly",
                        storefrontCountryCodes: ["USA", "CAN", "DEU"]), dryRun: false))
        #expect(
            try parse(["mass-extend-status", "monthly", "req-1"]).command
                == .massExtendStatus(productId: "monthly", requestIdentifier: "req-1"))
        #expect(try parse(["test-notification"]).command == .testNotification(waitSeconds: 30))
        #expect(try parse(["test-notification", "--wait-seconds", "5"]).command == .testNotification(waitSeconds: 5))
        #expect(
            try parse(["finish-transaction", "2000000000000005"]).command
                == .finishTransaction(transactionId: "2000000000000005", force: false))
        #expect(
            try parse(["finish-transaction", "--force", "2000000000000005", "--environment", "sandbox"]).command
                == .finishTransaction(transactionId: "2000000000000005", force: true))
    }

    @Test func applesLimitsAndMissingArgumentsAreUsageErrors() {
        let cases: [([String], String)] = [
            ([], "a subcommand is required"),
            (["refund"], "unknown subcommand 'refund'"),
            (["lookup-order"], "lookup-order takes ORDER_ID"),
            (["lookup-order", "A", "B"], "unexpected 'B'"),
            (["lookup-order", "A", "--days", "3"], "lookup-order does not take --days"),
            (["lookup-order", "A", "--verbose"], "unknown argument '--verbose'"),
            (["set-account-token", "1", "not-a-uuid"], "TOKEN must be a UUID"),
            (["set-account-token", "1", "7e3fb20b-4cdb-47cc-936d-99d65f608138", "--user", ""], "--user takes"),
            (["set-account-token", "1", "7e3fb20b-4cdb-47cc-936d-99d65f608138", "--user", "u\u{7}"], "control character"),
            (["lookup-order", "A", "--user", "u1"], "lookup-order does not take --user"),
            (["lookup-order", "A", "--ledger-url", "ledger:8081"], "--ledger-url takes an http(s) URL"),
            (["extend-renewal", "1", "--days", "91", "--reason", "1", "--request-id", "r"], "from 1 to 90"),
            (["extend-renewal", "1", "--days", "0", "--reason", "1", "--request-id", "r"], "from 1 to 90"),
            (["extend-renewal", "1", "--days", "5", "--reason", "4", "--request-id", "r"], "extendReasonCode"),
            (["extend-renewal", "1", "--days", "5", "--reason", "1"], "--request-id is required"),
            (["extend-renewal", "1", "--reason", "1", "--request-id", "r"], "--days is required"),
            (["extend-renewal", "1", "--days", "5", "--reason", "1", "--request-id",
              String(repeating: "x", count: 129)], "1 to 128 characters"),
            (["mass-extend", "--days", "5", "--reason", "1"], "--product is required"),
            (["mass-extend", "--product", "p", "--days", "5", "--reason", "1", "--storefront", "US"], "alpha-3"),
            (["subscription-status", "1", "--status", "6"], "--status takes"),
            (["refund-history", "1", "--environment", "xcode"], "production or sandbox"),
            (["test-notification", "extra"], "test-notification takes no arguments"),
            (["finish-transaction"], "finish-transaction takes TRANSACTION_ID"),
            (["finish-transaction", "1", "--dry-run"], "finish-transaction does not take --dry-run"),
            (["lookup-order", "A", "--force"], "lookup-order does not take --force"),
        ]
        for (arguments, expected) in cases {
            let message = problem(arguments)
            #expect(message?.contains(expected) == true, "\(arguments): \(message ?? "parsed")")
        }
    }

    @Test func helpExitsZeroAndBadUsageTwoThroughTheToolsOneWay() async {
        let help = await AdminTool.run(arguments: ["--help"], environment: [:], standardOutput: { _ in })
        #expect(help == 0)
        let bad = await AdminTool.run(arguments: ["lookup-order"], environment: [:], standardOutput: { _ in })
        #expect(bad == AdminExitCode.usage.rawValue)
    }
}
