import FakeAppStore
import Foundation
import ServiceSupport

// The fake App Store as a process, for tests, benchmarks and `make dev`. See Sources/FakeAppStore/README.md.

let usage = """
    Usage: fake-appstore [--host H] [--port P] [--latency-ms N] [--jitter-ms N] [--shared-secret S] [--threads N]
                         [--hang-seconds N] [--signing-dir DIR] [--notification-retry-seconds 1,12,24|apple|none]
           fake-appstore send-notification --url URL --type TYPE [...]   (see fake-appstore send-notification --help)

    Serves verifyReceipt at /verifyReceipt (production) and /sandbox/verifyReceipt, with behaviour chosen per
    receipt (base64 of a scenario JSON; see Sources/FakeAppStore/README.md), and admin endpoints:
      GET  /admin/counters[?receipt=<id or receipt data>]   calls per environment
      POST /admin/outage?on=1[&mode=http503|status21005|status21002|hang] / ?on=0
      POST /admin/latency?fixed_ms=N&jitter_ms=N
      POST /admin/reset
      POST /admin/notifications/send?url=URL&type=TYPE[&subtype=S&transaction_id=ID&...]   sign and POST a
           notification (retried on the retry schedule until answered 200-206; parameters as the flags of
           send-notification, with _ for -; deliver=0 only records it for Get Notification History)
      GET  /admin/notifications[?uuid=U]                   notifications signed so far and their attempts
      GET  /admin/signing/root                             the root certificate to trust (PEM)
    Notifications are signed with the keys in --signing-dir (minted there when missing; default a new temporary
    directory); verifiers trust DIR/apple-root.pem (APPLE_ROOT_CERTIFICATES). --notification-retry-seconds: waits
    between delivery attempts after failures (default apple: 1, 12, 24, 48, 72 hours; Production only, as Apple).
    Prints FAKE_APPSTORE_ROOT_CERTIFICATE=<path> then FAKE_APPSTORE_URL=http://127.0.0.1:<port> on stdout (the URL
    line last). Logs JSON on stderr.

    Environment (flags win): FAKE_APPSTORE_HOST (127.0.0.1), FAKE_APPSTORE_PORT (0 = ephemeral),
    FAKE_APPSTORE_LATENCY_MS (0), FAKE_APPSTORE_JITTER_MS (0), FAKE_APPSTORE_SHARED_SECRET, FAKE_APPSTORE_THREADS (2),
    FAKE_APPSTORE_SIGNING_DIR, FAKE_APPSTORE_NOTIFICATION_RETRY_SECONDS (apple), LOG_LEVEL (info).
    """

struct CommandLineError: Error, CustomStringConvertible {
    let description: String
}

func parseConfiguration(_ arguments: [String], settings: Settings) throws -> FakeAppStoreServer.Configuration {
    var values: [String: String] = [:]
    var index = 0
    let flags = [
        "--host", "--port", "--latency-ms", "--jitter-ms", "--shared-secret", "--threads", "--hang-seconds",
        "--signing-dir", "--notification-retry-seconds",
    ]
    while index < arguments.count {
        let argument = arguments[index]
        if argument == "--help" || argument == "-h" {
            print(usage)
            exit(0)
        }
        guard flags.contains(argument) else { throw CommandLineError(description: "unknown argument \(argument)") }
        guard index + 1 < arguments.count else { throw CommandLineError(description: "\(argument) needs a value") }
        values[argument] = arguments[index + 1]
        index += 2
    }
    func number(_ flag: String, _ variable: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        if let raw = values[flag] {
            guard let parsed = Int(raw), range.contains(parsed) else {
                throw CommandLineError(description: "\(flag): '\(raw)' is not a whole number in \(range)")
            }
            return parsed
        }
        return try settings.int(variable, default: value, range: range)
    }
    let host = values["--host"] ?? settings.string("FAKE_APPSTORE_HOST", default: "127.0.0.1")
    let port = try number("--port", "FAKE_APPSTORE_PORT", default: 0, range: 0...65_535)
    let signingDirectory =
        values["--signing-dir"] ?? settings.string("FAKE_APPSTORE_SIGNING_DIR")
        ?? (NSTemporaryDirectory() + "fake-appstore-signing-" + UUID().uuidString.prefix(8))
    let schedule = values["--notification-retry-seconds"]
        ?? settings.string("FAKE_APPSTORE_NOTIFICATION_RETRY_SECONDS", default: "apple")
    var configuration = FakeAppStoreServer.Configuration(
        listen: ListenAddress(host: host, port: UInt16(port)),
        latencyMs: try number("--latency-ms", "FAKE_APPSTORE_LATENCY_MS", default: 0, range: 0...600_000),
        jitterMs: try number("--jitter-ms", "FAKE_APPSTORE_JITTER_MS", default: 0, range: 0...600_000),
        sharedSecret: values["--shared-secret"] ?? settings.string("FAKE_APPSTORE_SHARED_SECRET"),
        threadCount: try number("--threads", "FAKE_APPSTORE_THREADS", default: 2, range: 1...64),
        hangSeconds: try number("--hang-seconds", "FAKE_APPSTORE_HANG_SECONDS", default: 60, range: 1...3_600))
    configuration.signingDirectory = signingDirectory
    do {
        configuration.notificationRetrySchedule = try FakeNotificationRequest.retrySchedule(schedule)
    } catch {
        throw CommandLineError(description: "--notification-retry-seconds: \(error.description)")
    }
    return configuration
}

if CommandLine.arguments.dropFirst().first == "send-notification" {
    exit(SendNotificationCommand.run(Array(CommandLine.arguments.dropFirst(2))))
}

let logger = Logger.fromEnvironment(label: "fake-appstore")
let configuration: FakeAppStoreServer.Configuration
do {
    configuration = try parseConfiguration(Array(CommandLine.arguments.dropFirst()), settings: Settings())
} catch {
    FileHandle.standardError.write(Data("fake-appstore: \(error)\n\n\(usage)\n".utf8))
    exit(2)
}

let server = FakeAppStoreServer(configuration: configuration, logger: logger)
do {
    try server.start()
} catch {
    logger.error("cannot start", ["error": .string(String(describing: error))])
    exit(1)
}
// Unbuffered, so a parent process sees the lines at once; the URL line comes last (parents wait for it).
if let keys = server.signingKeys, let directory = configuration.signingDirectory {
    FileHandle.standardOutput.write(Data("FAKE_APPSTORE_ROOT_CERTIFICATE=\(keys.rootPath(in: directory))\n".utf8))
}
FileHandle.standardOutput.write(Data("FAKE_APPSTORE_URL=\(server.baseURL)\n".utf8))
logger.info(
    "fake App Store ready",
    [
        "url": .string(server.baseURL), "latency_ms": .int(configuration.latencyMs),
        "jitter_ms": .int(configuration.jitterMs), "shared_secret": .bool(configuration.sharedSecret != nil),
    ])

let stopped = DispatchSemaphore(value: 0)
let signals = ShutdownSignal { name in
    logger.info("stopping", ["signal": .string(name)])
    stopped.signal()
}
stopped.wait()
server.stop()
withExtendedLifetime(signals) {}
exit(0)
