import AppStoreServerAPI
import Foundation
import HTTPClient
import ReceiptModel
import ServiceSupport
import SignedData

/// `receipt-admin`: parses the command line, reads the settings, builds the App Store Server API client (the
/// verifier's settings and pacing) and runs one subcommand. Returns the exit status.
public enum AdminTool {
    public static let usage = """
        Usage: receipt-admin SUBCOMMAND ARGUMENTS [--json] [--environment production|sandbox] [--bundle-id B]
                             [--deadline-seconds N] [--ledger-url URL]

        Support and operations calls to the App Store Server API (docs/OPERATIONS.md, receipt-admin):
          lookup-order ORDER_ID                  Look Up Order ID: the order's transactions (verified), each one's
                                                 credit_key and, with LEDGER_URL, its state and owner in the ledger
          subscription-status TRANSACTION_ID [--status 1..5]
                                                 Get All Subscription Statuses
          refund-history TRANSACTION_ID          Get Refund History (every page)
          set-account-token ORIGINAL_TRANSACTION_ID TOKEN [--user USER_ID]
                                                 Set App Account Token (TOKEN a UUID); with LEDGER_URL, the ledger's
                                                 owner and how to move it; --user: once Apple accepted, tell the
                                                 ledger TOKEN is USER_ID's (PUT /v1/users/{user_id}/app-account-token:
                                                 renewals carrying it, and those already waiting, go to USER_ID)
          extend-renewal ORIGINAL_TRANSACTION_ID --days 1..90 --reason 0..3 --request-id ID [--dry-run]
                                                 Extend a Subscription Renewal Date (reason 0 undeclared, 1 customer
                                                 satisfaction, 2 other, 3 service issue or outage)
          mass-extend --product P --days 1..90 --reason 0..3 [--storefront USA,CAN] [--request-id ID] [--dry-run]
                                                 extend every active subscriber of P (request id default a new UUID)
          mass-extend-status PRODUCT_ID REQUEST_ID
                                                 how far a mass extension got
          test-notification [--wait-seconds N]   Request a Test Notification and poll its status (default 30 s)
          finish-transaction TRANSACTION_ID [--force]
                                                 Finish Transaction (a purchase its app cannot finish); with
                                                 LEDGER_URL only one the ledger delivered, unless --force

        Prints a summary (or one JSON object with --json) on stdout and one audit line per App Store call on stderr
        (endpoint, method, environment, attempt, HTTP status, Apple error code, duration; never tokens or signed
        data). 429 is retried after its Retry-After, 5xx and timeouts with a backoff, within --deadline-seconds
        (default 60) per call. --dry-run prints the request and sends nothing.

        Exit status: 0 ok; 1 not found or nothing matched (or the test notification was not delivered, or the ledger
        has not delivered the purchase to finish); 2 bad usage or settings; 3 Apple refused the request (4xx), or the
        ledger refused the declaration (the token is another user's); 4 Apple or the ledger unavailable after retries;
        5 Apple's answer did not verify.

        Environment:
          APPLE_ISSUER_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE   the App Store Server API key (required)
          APPLE_SERVER_API_URL, APPLE_SERVER_API_SANDBOX_URL      the API (default Apple's)
          APPLE_ROOT_CERTIFICATES   roots signed answers must chain to (default the shipped Apple Root CA - G3)
          APPLE_SERVER_API_MAX_RPS  this process's pace per endpoint (never above Apple's limit)
          APPLE_TIMEOUT_MS          per-request timeout (default 30000)
          APPLE_REVOCATION_CHECK    ocsp (default: signed answers' certificates are checked with Apple's OCSP
                                    responder; no answer is exit 4) or off; APPLE_OCSP_RESPONDER_URL,
                                    APPLE_OCSP_MAX_AGE_SECONDS, APPLE_OCSP_TIMEOUT_MS, APPLE_CA_BUNDLE as the verifier's
          ALLOWED_BUNDLE_IDS        the app (when it names one; else --bundle-id)
          LEDGER_URL, LEDGER_API_KEY  the ledger's HTTP API (--ledger-url stands for LEDGER_URL; the key is one of
                                    the ledger's LEDGER_API_KEYS), to show a purchase's state and owner (and let
                                    finish-transaction finish only what the ledger delivered), and for
                                    set-account-token --user (required then)
          LOG_LEVEL                 debug, info, warning (default), error
        """

    /// Runs `arguments` (without the program name) with `environment`; `standardOutput` receives the report.
    public static func run(
        arguments: [String], environment: [String: String],
        standardOutput: @escaping @Sendable (String) -> Void = { FileHandle.standardOutput.write(Data($0.utf8)) },
        audit: AuditLog = .standardError
    ) async -> Int32 {
        let options: AdminOptions
        switch CommandLineTool(name: "receipt-admin", usage: usage).parse(
            arguments, with: { reader throws(CommandLineError) in try AdminOptions.parse(&reader) })
        {
        case .exit(let status): return status
        case .run(let parsed): options = parsed
        }
        var logEnvironment = environment
        if logEnvironment["LOG_LEVEL"] == nil { logEnvironment["LOG_LEVEL"] = "warning" }
        let logger = Logger.fromEnvironment(label: "receipt-admin", environment: logEnvironment)
        let settings: AdminSettings
        let bundleId: String
        do throws(ConfigurationError) {
            settings = try AdminSettings.fromEnvironment(Settings(environment: environment), ledgerURL: options.ledgerURL)
            bundleId = try settings.bundleId(options.bundleId)
            if case .setAccountToken(_, _, .some) = options.command, settings.ledger == nil {
                throw ConfigurationError(
                    variable: "LEDGER_URL",
                    problem: "is required with --user (or --ledger-url): the declaration goes to the ledger's API")
            }
        } catch {
            logger.error("invalid configuration: \(error.description)", ["variable": .string(error.variable)])
            standardOutput(
                AdminReport.failure(options.command.name, .usage, message: "\(error.variable) \(error.problem)")
                    .rendered(json: options.json))
            return AdminExitCode.usage.rawValue
        }
        let http: CurlHTTPClient
        do {
            http = try CurlHTTPClient(
                configuration: AppStoreServerAPIClient.occasionalHTTPConfiguration(requestTimeoutMs: settings.timeoutMs))
        } catch {
            logger.error("cannot create the HTTP client", ["error": .string("\(error)")])
            return AdminExitCode.unavailable.rawValue
        }
        defer { http.close() }
        let revocation: RevocationClient
        do {
            revocation = try RevocationClient(
                settings: settings.revocation, trustedRoots: settings.serverAPI.rootCertificates,
                caBundlePath: settings.caBundlePath, logger: logger.named("ocsp"))
        } catch {
            logger.error("cannot create the OCSP client", ["error": .string("\(error)")])
            return AdminExitCode.unavailable.rawValue
        }
        defer { revocation.close() }
        let client = AppStoreServerAPIClient.make(
            settings: settings.serverAPI, credentials: settings.credentials, http: http,
            requestTimeoutMs: settings.timeoutMs, logger: logger)
        let context = AdminContext(
            client: client,
            caller: AppleCaller(
                environment: options.environment, deadlineSeconds: options.deadlineSeconds, audit: audit),
            signed: SignedAnswers(
                verifier: AppleSignedDataVerifier(
                    trustedRoots: settings.serverAPI.rootCertificates, revocation: revocation.checker),
                bundleId: bundleId, environment: options.environment),
            ledger: settings.ledger.map { LedgerLookup(settings: $0, http: http) }, bundleId: bundleId)
        let report = await run(options.command, context)
        standardOutput(report.rendered(json: options.json))
        return report.exitCode.rawValue
    }

    /// Runs one subcommand.
    public static func run(_ command: AdminCommand, _ context: AdminContext) async -> AdminReport {
        switch command {
        case .lookupOrder(let orderId):
            await LookupOrder.run(orderId: orderId, context)
        case .subscriptionStatus(let transactionId, let status):
            await SubscriptionStatus.run(transactionId: transactionId, status: status, context)
        case .refundHistory(let transactionId):
            await RefundHistory.run(transactionId: transactionId, context)
        case .setAccountToken(let originalTransactionId, let token, let user):
            await SetAccountToken.run(originalTransactionId: originalTransactionId, token: token, user: user, context)
        case .extendRenewal(let originalTransactionId, let request, let dryRun):
            await RenewalExtensions.extendOne(
                originalTransactionId: originalTransactionId, request, dryRun: dryRun, context)
        case .massExtend(let request, let dryRun):
            await RenewalExtensions.extendMany(request, dryRun: dryRun, context)
        case .massExtendStatus(let productId, let requestIdentifier):
            await RenewalExtensions.status(productId: productId, requestIdentifier: requestIdentifier, context)
        case .testNotification(let waitSeconds):
            await TestNotification.run(waitSeconds: waitSeconds, context)
        case .finishTransaction(let transactionId, let force):
            await FinishTransaction.run(transactionId: transactionId, force: force, context)
        }
    }
}
