import Dispatch
import FakeAppStore
import Foundation
import ServiceSupport
import Synchronization

/// `fake-appstore send-notification`: signs one App Store Server Notification V2 with the signing identity in
/// `--signing-key` / `--signing-chain` (as a running fake does) and POSTs it to `--url` as Apple does, retrying
/// failures on the retry schedule. Prints one JSON line per attempt and a summary; exits 0 when it was delivered, 1
/// when every attempt failed, 2 on bad usage.
enum SendNotificationCommand {
    static let usage = """
        Usage: fake-appstore send-notification --url URL --type TYPE [--subtype S] [--transaction-id ID]
                                               [--original-transaction-id ID] [--product-id P]
                                               [--product-type consumable|non_consumable|auto_renewable|non_renewing]
                                               [--bundle-id B] [--environment Production|Sandbox|Xcode|LocalTesting]
                                               [--app-apple-id N|none] [--notification-uuid U]
                                               [--ownership PURCHASED|FAMILY_SHARED] [--revocation-percentage N]
                                               [--revocation-type T] [--status 1..5]
                                               [--retry-schedule-seconds 1,12,24|apple|none]
                                               --signing-key FILE --signing-chain FILE

        Signs the notification with the leaf key and chain `fake-appstore mint-pki --out DIR` wrote
        (DIR/signing-key.pem, DIR/chain.pem; verifiers trust DIR/root.pem with APPLE_ROOT_CERTIFICATES) and POSTs
        {"signedPayload": ...} to --url. An answer 200-206 is a delivery;
        anything else is retried after each wait of the schedule (default apple: 1, 12, 24, 48, 72 hours; Apple
        retries Production notifications only, so a Sandbox one is sent once). Types: \(
            FakeNotificationTypes.subtypes.keys.sorted().joined(separator: ", ")).
        """

    /// What the command line asks for.
    struct Options {
        let request: FakeNotificationRequest
        let url: String
        let signingKey: String
        let signingChain: String
    }

    static func parse(_ arguments: inout CommandLineArguments) throws(CommandLineError) -> Options {
        var values: [String: String] = [:]
        var signingKey: String?
        var signingChain: String?
        while let flag = try arguments.nextFlag() {
            let value = try arguments.value(for: flag, problem: "\(flag) is not a flag with a value")
            guard flag.hasPrefix("--") else { throw .usage("\(flag) is not a flag with a value") }
            switch flag {
            case "--signing-key": signingKey = value
            case "--signing-chain": signingChain = value
            default: values[String(flag.dropFirst(2)).replacingOccurrences(of: "-", with: "_")] = value
            }
        }
        let request: FakeNotificationRequest
        do {
            request = try FakeNotificationRequest.parse(values)
        } catch {
            throw .usage(error.description.replacingOccurrences(of: "_", with: "-"))
        }
        guard let url = request.url else { throw .usage("--url is required") }
        guard let signingKey, let signingChain else {
            throw .usage(
                "--signing-key and --signing-chain are required (fake-appstore mint-pki --out DIR writes them)")
        }
        return Options(request: request, url: url, signingKey: signingKey, signingChain: signingChain)
    }

    static func run(_ arguments: [String]) -> Int32 {
        let options: Options
        switch CommandLineTool(name: "fake-appstore send-notification", usage: usage).parse(arguments, with: parse) {
        case .exit(let status): return status
        case .run(let parsed): options = parsed
        }
        let (request, url, signingKey, signingChain) =
            (options.request, options.url, options.signingKey, options.signingChain)
        let logger = Logger.fromEnvironment(label: "fake-appstore")
        let signing: FakeSigningIdentity
        let sender: FakeNotificationSender
        let signedPayload: String
        do {
            signing = try FakeSigningIdentity.load(keyPath: signingKey, chainPath: signingChain)
            sender = try FakeNotificationSender(history: FakeNotificationHistory(), logger: logger)
            signedPayload = try request.notification.signedPayload(signer: signing.signer)
        } catch {
            logger.error("cannot sign the notification", ["error": .string("\(error)")])
            return 1
        }
        let notification = request.notification
        sender.history.add(notification, signedPayload: signedPayload, url: url)
        let done = DispatchSemaphore(value: 0)
        let delivered = Locked(false)
        sender.deliver(
            notification, signedPayload: signedPayload, to: url,
            retrySchedule: request.retrySchedule ?? FakeNotificationSender.appleRetrySchedule,
            finished: { attempts in
                delivered.withLock { $0 = attempts.contains(where: \.succeeded) }
                done.signal()
            })
        done.wait()
        sender.close()
        let entry = sender.history.entry(uuid: notification.notificationUUID)
        for attempt in entry?.attempts ?? [] {
            print(
                "{\"attempt\":{\"date_ms\":\(attempt.dateMs),\"result\":\(JSONText.quoted(attempt.result)),"
                    + "\"http_status\":\(attempt.httpStatus.map(String.init) ?? "null")}}")
        }
        let ok = delivered.withLock { $0 }
        print(
            "{\"notification_uuid\":\(JSONText.quoted(notification.notificationUUID)),"
                + "\"notification_type\":\(JSONText.quoted(notification.notificationType)),"
                + "\"subtype\":\(notification.subtype.map(JSONText.quoted) ?? "null"),"
                + "\"transaction_id\":\(notification.transaction.map { JSONText.quoted($0.transactionId) } ?? "null"),"
                + "\"delivered\":\(ok),\"attempts\":\(entry?.attempts.count ?? 0)}")
        return ok ? 0 : 1
    }
}
