import AppStoreServerAPI
import Foundation
import ReceiptModel
import ServiceSupport

/// One `receipt-admin` subcommand with its arguments, checked against Apple's documented limits before anything is
/// sent.
public enum AdminCommand: Sendable, Equatable {
    case lookupOrder(orderId: String)
    /// `status`: only subscriptions in that status (1 active ... 5 revoked).
    case subscriptionStatus(transactionId: String, status: Int?)
    case refundHistory(transactionId: String)
    /// `token` lower-cased; `user` (`--user`): after Apple accepted, the ledger is told the token is that user's
    /// (`PUT /v1/users/{user_id}/app-account-token`).
    case setAccountToken(originalTransactionId: String, token: String, user: String? = nil)
    case extendRenewal(originalTransactionId: String, ExtendRenewalDateRequest, dryRun: Bool)
    case massExtend(MassExtendRenewalDateRequest, dryRun: Bool)
    case massExtendStatus(productId: String, requestIdentifier: String)
    /// `waitSeconds`: how long to poll Get Test Notification Status for a send attempt.
    case testNotification(waitSeconds: Int)
    /// `force`: finish without asking the ledger whether the purchase was delivered.
    case finishTransaction(transactionId: String, force: Bool)

    public static let names = [
        "lookup-order", "subscription-status", "refund-history", "set-account-token", "extend-renewal", "mass-extend",
        "mass-extend-status", "test-notification", "finish-transaction",
    ]

    /// The subcommand's name, as typed.
    public var name: String {
        switch self {
        case .lookupOrder: "lookup-order"
        case .subscriptionStatus: "subscription-status"
        case .refundHistory: "refund-history"
        case .setAccountToken: "set-account-token"
        case .extendRenewal: "extend-renewal"
        case .massExtend: "mass-extend"
        case .massExtendStatus: "mass-extend-status"
        case .testNotification: "test-notification"
        case .finishTransaction: "finish-transaction"
        }
    }
}

/// Everything the command line says: the subcommand and the options every subcommand takes.
public struct AdminOptions: Sendable, Equatable {
    public var command: AdminCommand
    /// `--json`: one JSON object on stdout instead of the summary.
    public var json = false
    /// `--environment production|sandbox`.
    public var environment: AppStoreEnvironment = .production
    /// `--bundle-id` (default: `ALLOWED_BUNDLE_IDS` when it names exactly one app).
    public var bundleId: String?
    /// `--deadline-seconds`: how long one call may take, its retries included.
    public var deadlineSeconds = 60
    /// `--ledger-url`: the ledger's HTTP API (instead of `LEDGER_URL`).
    public var ledgerURL: String?

    public static let defaultWaitSeconds = 30

    public init(command: AdminCommand) {
        self.command = command
    }

    /// Reads `receipt-admin SUBCOMMAND ARGUMENTS... [OPTIONS]`; options may come anywhere after the subcommand.
    ///
    /// - Parameter makeRequestId: the mass extension's `requestIdentifier` when `--request-id` is not given.
    /// - Throws: `CommandLineError.usage` naming what is wrong (exit 2), `.helpRequested` on `--help`.
    public static func parse(
        _ arguments: inout CommandLineArguments,
        makeRequestId: () -> String = { UUID().uuidString.lowercased() }
    ) throws(CommandLineError) -> AdminOptions {
        guard let name = try arguments.nextFlag() else {
            throw .usage("a subcommand is required: \(AdminCommand.names.joined(separator: ", "))")
        }
        guard AdminCommand.names.contains(name) else {
            throw .usage("unknown subcommand '\(name)'; one of \(AdminCommand.names.joined(separator: ", "))")
        }
        var parsed = Parsed()
        while let argument = try arguments.nextFlag() {
            if !argument.hasPrefix("--") || argument == "--" {
                parsed.positional.append(argument)
                continue
            }
            try parsed.read(argument, from: &arguments)
        }
        var options = AdminOptions(command: try parsed.command(name, makeRequestId: makeRequestId))
        options.json = parsed.json
        options.environment = parsed.environment
        options.bundleId = parsed.bundleId
        options.deadlineSeconds = parsed.deadlineSeconds
        options.ledgerURL = parsed.ledgerURL
        return options
    }

    /// The flags as read, before they are checked against the subcommand.
    private struct Parsed {
        var positional: [String] = []
        var json = false
        var environment: AppStoreEnvironment = .production
        var bundleId: String?
        var deadlineSeconds = 60
        var days: Int?
        var reason: Int?
        var requestId: String?
        var product: String?
        var storefronts: [String]?
        var dryRun = false
        var force = false
        var status: Int?
        var waitSeconds: Int?
        var user: String?
        var ledgerURL: String?
        /// Flags given, to refuse those the subcommand does not take.
        var given: [String] = []

        mutating func read(_ flag: String, from arguments: inout CommandLineArguments) throws(CommandLineError) {
            given.append(flag)
            switch flag {
            case "--json": json = true
            case "--dry-run": dryRun = true
            case "--force": force = true
            case "--environment":
                let value = try arguments.value(for: flag).lowercased()
                switch value {
                case "production": environment = .production
                case "sandbox": environment = .sandbox
                default: throw .usage("--environment takes production or sandbox, not '\(value)'")
                }
            case "--bundle-id": bundleId = try arguments.value(for: flag)
            case "--deadline-seconds": deadlineSeconds = try arguments.int(for: flag, in: 1...3_600)
            case "--days":
                days = try arguments.int(
                    for: flag, in: ExtendRenewalDateRequest.days,
                    problem: "--days takes a whole number of days from 1 to 90 (Apple's limit)")
            case "--reason":
                reason = try arguments.int(
                    for: flag, in: ExtendRenewalDateRequest.reasonCodes,
                    problem: "--reason takes Apple's extendReasonCode: 0 undeclared, 1 customer satisfaction, "
                        + "2 other, 3 service issue or outage")
            case "--request-id":
                let value = try arguments.value(for: flag)
                guard !value.isEmpty, value.count <= ExtendRenewalDateRequest.maximumRequestIdentifierLength else {
                    throw .usage("--request-id takes 1 to 128 characters")
                }
                requestId = value
            case "--product":
                let value = try arguments.value(for: flag)
                guard !value.isEmpty else { throw .usage("--product takes a product id") }
                product = value
            case "--storefront":
                let codes = try arguments.value(for: flag).split(separator: ",").map { String($0).uppercased() }
                guard !codes.isEmpty, codes.allSatisfy(Self.isCountryCode) else {
                    throw .usage("--storefront takes ISO 3166-1 alpha-3 country codes, e.g. USA or USA,CAN")
                }
                storefronts = (storefronts ?? []) + codes
            case "--status":
                status = try arguments.int(
                    for: flag, in: 1...5,
                    problem: "--status takes 1 active, 2 expired, 3 billing retry, 4 grace period or 5 revoked")
            case "--wait-seconds": waitSeconds = try arguments.int(for: flag, in: 1...600)
            case "--user":
                let value = try arguments.value(for: flag)
                guard !value.isEmpty else { throw .usage("--user takes the ledger's user id") }
                if let problem = IdentifierText.problem(field: "--user", value) { throw .usage(problem) }
                user = value
            case "--ledger-url":
                let value = try arguments.value(for: flag)
                guard LedgerSettings.isURL(value) else { throw .usage("--ledger-url takes an http(s) URL, not '\(value)'") }
                ledgerURL = value
            default:
                throw .unknownArgument(flag)
            }
        }

        static func isCountryCode(_ code: String) -> Bool {
            code.utf8.count == 3 && code.utf8.allSatisfy { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        }

        /// The subcommand, its positional arguments counted and its flags checked.
        func command(_ name: String, makeRequestId: () -> String) throws(CommandLineError) -> AdminCommand {
            let common: Set<String> = ["--json", "--environment", "--bundle-id", "--deadline-seconds", "--ledger-url"]
            func only(_ allowed: Set<String>) throws(CommandLineError) {
                if let stray = given.first(where: { !common.contains($0) && !allowed.contains($0) }) {
                    throw .usage("\(name) does not take \(stray)")
                }
            }
            func arguments(_ names: String...) throws(CommandLineError) -> [String] {
                guard positional.count == names.count else {
                    throw .usage(
                        "\(name) takes \(names.isEmpty ? "no arguments" : names.joined(separator: " "))"
                            + (positional.count > names.count ? "; unexpected '\(positional[names.count])'" : ""))
                }
                if let empty = zip(names, positional).first(where: { $0.1.isEmpty }) {
                    throw .usage("\(empty.0) must not be empty")
                }
                return positional
            }
            switch name {
            case "lookup-order":
                try only([])
                return .lookupOrder(orderId: try arguments("ORDER_ID")[0])
            case "subscription-status":
                try only(["--status"])
                return .subscriptionStatus(transactionId: try arguments("TRANSACTION_ID")[0], status: status)
            case "refund-history":
                try only([])
                return .refundHistory(transactionId: try arguments("TRANSACTION_ID")[0])
            case "set-account-token":
                try only(["--user"])
                let values = try arguments("ORIGINAL_TRANSACTION_ID", "TOKEN")
                guard let uuid = UUID(uuidString: values[1]) else {
                    throw .usage(
                        "TOKEN must be a UUID (the app's account token), like 7e3fb20b-4cdb-47cc-936d-99d65f608138")
                }
                return .setAccountToken(
                    originalTransactionId: values[0], token: uuid.uuidString.lowercased(), user: user)
            case "extend-renewal":
                try only(["--days", "--reason", "--request-id", "--dry-run"])
                let id = try arguments("ORIGINAL_TRANSACTION_ID")[0]
                let (days, reason) = try extensionTerms()
                guard let requestId else {
                    throw .usage("--request-id is required: Apple keeps it with the extension (reuse it to retry)")
                }
                return .extendRenewal(
                    originalTransactionId: id,
                    ExtendRenewalDateRequest(
                        extendByDays: days, extendReasonCode: reason, requestIdentifier: requestId),
                    dryRun: dryRun)
            case "mass-extend":
                try only(["--product", "--days", "--reason", "--request-id", "--storefront", "--dry-run"])
                _ = try arguments()
                guard let product else { throw .usage("--product is required: the subscription product to extend") }
                let (days, reason) = try extensionTerms()
                return .massExtend(
                    MassExtendRenewalDateRequest(
                        extendByDays: days, extendReasonCode: reason, requestIdentifier: requestId ?? makeRequestId(),
                        productId: product, storefrontCountryCodes: storefronts),
                    dryRun: dryRun)
            case "mass-extend-status":
                try only([])
                let values = try arguments("PRODUCT_ID", "REQUEST_ID")
                return .massExtendStatus(productId: values[0], requestIdentifier: values[1])
            case "finish-transaction":
                try only(["--force"])
                return .finishTransaction(transactionId: try arguments("TRANSACTION_ID")[0], force: force)
            default:  // test-notification (the names were checked before)
                try only(["--wait-seconds"])
                _ = try arguments()
                return .testNotification(waitSeconds: waitSeconds ?? AdminOptions.defaultWaitSeconds)
            }
        }

        private func extensionTerms() throws(CommandLineError) -> (days: Int, reason: Int) {
            guard let days else { throw .usage("--days is required (1 to 90)") }
            guard let reason else { throw .usage("--reason is required (0 to 3)") }
            return (days, reason)
        }
    }
}
