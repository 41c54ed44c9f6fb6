import Crypto
import FakeAppStore
import Foundation
import ServiceRuntime
import ServiceSupport

// The fake App Store as a process, for tests, benchmarks and `make dev`. See Sources/FakeAppStore/README.md.

let usage = """
    Usage: fake-appstore [--host H] [--port P] [--latency-ms N] [--jitter-ms N] [--shared-secret S] [--threads N]
                         [--hang-seconds N] [--signing-key FILE --signing-chain FILE] [--api-key FILE]
                         [--issuer-id ID] [--key-id ID] [--bundle-id B] [--default-product P]
                         [--notification-retry-seconds 1,12,24|apple|none] [--notification-url URL]
           fake-appstore mint-pki --out DIR
           fake-appstore send-notification --url URL --type TYPE [...]   (see fake-appstore send-notification --help)

    Serves verifyReceipt at /verifyReceipt (production) and /sandbox/verifyReceipt, with behaviour chosen per
    receipt (base64 of a scenario JSON), and the App Store Server API at /inApps/... and /sandbox/inApps/...
    (Get Transaction Info, Get Transaction History v2, Get Notification History; bearer tokens checked against
    --api-key, a .p8 or public key PEM; transactions signed with --signing-key and --signing-chain, or with a
    test PKI minted at start). See Sources/FakeAppStore/README.md. Admin endpoints:
      GET  /admin/counters[?receipt=<id or receipt data>]   verifyReceipt calls per environment
      GET  /admin/server-api/counters[?transaction=<id>]     Server API calls per environment
      POST /admin/transactions                              register transactions (JSON object or array)
      GET  /admin/signed-transaction?id=<id>                the signed transaction a device would hold
      POST /admin/notification-history                     add a Get Notification History entry
      GET  /admin/signing-root                              the root certificate (PEM) transactions chain to
      POST /admin/outage?on=1[&mode=http503|status21005|status21002|hang] / ?on=0
      POST /admin/latency?fixed_ms=N&jitter_ms=N
      POST /admin/reset
      POST /admin/notifications/send?url=URL&type=TYPE[&subtype=S&transaction_id=ID&...]   sign an App Store Server
           Notification with the signing identity and POST it like Apple (retried on the retry schedule until
           answered 200-206; parameters as the flags of send-notification, with _ for -; deliver=0 only records
           it); each one is also a Get Notification History entry, its send attempts kept up to date
      GET  /admin/notifications[?uuid=U]                   notifications signed so far and their attempts
      POST /admin/notification-url?url=U                   where Request a Test Notification sends (no url: none)
      POST /ocsp                                            OCSP responder for the signing chain's leaf and
           intermediate (application/ocsp-request; the verifier's APPLE_OCSP_RESPONDER_URL)
      GET  /admin/ocsp                                      its mode, requests received, revoked certificates
      POST /admin/ocsp?mode=answer|fail|try-later|hold&revoked=leaf,intermediate   switch it (fail: 503; hold:
           no answer; revoked= with nothing: none revoked)
    --notification-retry-seconds: waits between delivery attempts after failures (default apple: 1, 12, 24, 48,
    72 hours; Production notifications only, as Apple: a Sandbox one is sent once).
    --notification-url: the app's notification URL (App Store Connect's), where Request a Test Notification
    (POST /inApps/v1/notifications/test) sends its signed TEST notification; unset: 404 / 4040007.
    Prints FAKE_APPSTORE_URL=http://127.0.0.1:<port> as the first stdout line. Logs JSON on stderr.

    mint-pki writes root.pem, intermediate.pem, leaf.pem, chain.pem, signing-key.pem, intermediate-key.pem and
    root-key.pem (the CA keys /ocsp signs with, read from next to --signing-chain), api-key.p8 and settings.env
    (the verifier's APPLE_ROOT_CERTIFICATES, APPLE_ISSUER_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE) into DIR and
    prints the fake's arguments as FAKE_APPSTORE_ARGS=... and each setting as a KEY=value line.

    Environment (flags win): FAKE_APPSTORE_HOST (127.0.0.1), FAKE_APPSTORE_PORT (0 = ephemeral),
    FAKE_APPSTORE_LATENCY_MS (0), FAKE_APPSTORE_JITTER_MS (0), FAKE_APPSTORE_SHARED_SECRET, FAKE_APPSTORE_THREADS (2),
    FAKE_APPSTORE_NOTIFICATION_RETRY_SECONDS (apple), FAKE_APPSTORE_NOTIFICATION_URL, LOG_LEVEL (info).
    """

/// A flag value or setting the fake cannot run with (bad usage: exit 2).
struct ConfigurationProblem: Error, CustomStringConvertible {
    let description: String
}

/// The serving command's flags: each takes a value.
let servingFlags: Set<String> = [
        "--host", "--port", "--latency-ms", "--jitter-ms", "--shared-secret", "--threads", "--hang-seconds",
        "--signing-key", "--signing-chain", "--api-key", "--issuer-id", "--key-id", "--bundle-id", "--default-product",
    "--notification-retry-seconds", "--notification-url",
]

func parseConfiguration(
    _ arguments: inout CommandLineArguments, settings: Settings
) throws(CommandLineError) -> FakeAppStoreServer.Configuration {
    var values: [String: String] = [:]
    while let flag = try arguments.nextFlag() {
        guard servingFlags.contains(flag) else { throw .usage("unknown argument \(flag)") }
        values[flag] = try arguments.value(for: flag)
    }
    do {
        return try configuration(from: values, settings: settings)
    } catch {
        throw .usage("\(error)")
    }
}

/// The configuration from the flags' `values` and, where a flag is absent, the `FAKE_APPSTORE_*` settings.
func configuration(from values: [String: String], settings: Settings) throws -> FakeAppStoreServer.Configuration {
    func number(_ flag: String, _ variable: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        if let raw = values[flag] {
            guard let parsed = Int(raw), range.contains(parsed) else {
                throw ConfigurationProblem(description: "\(flag): '\(raw)' is not a whole number in \(range)")
            }
            return parsed
        }
        return try settings.int(variable, default: value, range: range)
    }
    let host = values["--host"] ?? settings.string("FAKE_APPSTORE_HOST", default: "127.0.0.1")
    let port = try number("--port", "FAKE_APPSTORE_PORT", default: 0, range: 0...65_535)
    var signing: FakeSigningIdentity?
    switch (values["--signing-key"], values["--signing-chain"]) {
    case (let key?, let chain?):
        do {
            signing = try FakeSigningIdentity.load(keyPath: key, chainPath: chain)
        } catch {
            throw ConfigurationProblem(description: "--signing-key/--signing-chain: \(error.message)")
        }
    case (nil, nil):
        signing = nil
    default:
        throw ConfigurationProblem(description: "--signing-key and --signing-chain go together")
    }
    var apiKey: ECPublicKey?
    if let path = values["--api-key"] {
        do {
            apiKey = try FakeAppStoreServer.apiPublicKey(path: path)
        } catch {
            throw ConfigurationProblem(description: "--api-key: \(error)")
        }
    }
    let schedule =
        values["--notification-retry-seconds"]
        ?? settings.string("FAKE_APPSTORE_NOTIFICATION_RETRY_SECONDS", default: "apple")
    var configuration = FakeAppStoreServer.Configuration(
        listen: ListenAddress(host: host, port: UInt16(port)),
        latencyMs: try number("--latency-ms", "FAKE_APPSTORE_LATENCY_MS", default: 0, range: 0...600_000),
        jitterMs: try number("--jitter-ms", "FAKE_APPSTORE_JITTER_MS", default: 0, range: 0...600_000),
        sharedSecret: values["--shared-secret"] ?? settings.string("FAKE_APPSTORE_SHARED_SECRET"),
        threadCount: try number("--threads", "FAKE_APPSTORE_THREADS", default: 2, range: 1...64),
        hangSeconds: try number("--hang-seconds", "FAKE_APPSTORE_HANG_SECONDS", default: 60, range: 1...3_600),
        signing: signing, apiPublicKey: apiKey, apiIssuerId: values["--issuer-id"], apiKeyId: values["--key-id"],
        defaultBundleId: values["--bundle-id"] ?? "com.example.game",
        defaultProductId: values["--default-product"] ?? "gems_100")
    configuration.notificationURL =
        values["--notification-url"] ?? settings.string("FAKE_APPSTORE_NOTIFICATION_URL")
    do {
        configuration.notificationRetrySchedule = try FakeNotificationRequest.retrySchedule(schedule)
    } catch {
        throw ConfigurationProblem(description: "--notification-retry-seconds: \(error.description)")
    }
    return configuration
}

/// `fake-appstore mint-pki --out DIR`.
func mintPKI(_ arguments: [String]) -> Never {
    let tool = CommandLineTool(name: "fake-appstore mint-pki", usage: "Usage: fake-appstore mint-pki --out DIR")
    let directory: String
    switch tool.parse(arguments, with: { arguments throws(CommandLineError) -> String in
        var directory: String?
        while let flag = try arguments.nextFlag() {
            guard flag == "--out" else { throw .unknownArgument(flag) }
            directory = try arguments.value(for: flag)
        }
        guard let directory else { throw .usage("--out DIR is required") }
        return directory
    }) {
    case .exit(let status): exit(status)
    case .run(let parsed): directory = parsed
    }
    do {
        let minted = try FakePKIFiles.mint(into: directory)
        var lines = ["FAKE_APPSTORE_ARGS=" + minted.fakeArguments.joined(separator: " ")]
        lines += minted.verifierSettings.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        print(lines.joined(separator: "\n"))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("fake-appstore mint-pki: \(error)\n".utf8))
        exit(1)
    }
}

if CommandLine.arguments.dropFirst().first == "mint-pki" {
    mintPKI(Array(CommandLine.arguments.dropFirst(2)))
}

if CommandLine.arguments.dropFirst().first == "send-notification" {
    exit(SendNotificationCommand.run(Array(CommandLine.arguments.dropFirst(2))))
}

let logger = Logger.fromEnvironment(label: "fake-appstore")
let configuration: FakeAppStoreServer.Configuration
switch CommandLineTool(name: "fake-appstore", usage: usage).parse(
    Array(CommandLine.arguments.dropFirst()), with: { arguments throws(CommandLineError) in
        try parseConfiguration(&arguments, settings: Settings())
    })
{
case .exit(let status): exit(status)
case .run(let parsed): configuration = parsed
}

let server = FakeAppStoreServer(configuration: configuration, logger: logger)
do {
    try server.start()
} catch {
    logger.error("cannot start", ["error": .string(String(describing: error))])
    exit(1)
}
// Unbuffered, so a parent process sees the line at once.
FileHandle.standardOutput.write(Data("FAKE_APPSTORE_URL=\(server.baseURL)\n".utf8))
logger.info(
    "fake App Store ready",
    [
        "url": .string(server.baseURL), "latency_ms": .int(configuration.latencyMs),
        "jitter_ms": .int(configuration.jitterMs), "shared_secret": .bool(configuration.sharedSecret != nil),
        "signing": .string(configuration.signing == nil ? "minted test PKI" : "loaded from files"),
        "api_key_checked": .bool(configuration.apiPublicKey != nil),
    ])

let shutdown = ShutdownWaiter()
logger.info("stopping", ["signal": .string(shutdown.wait())])
server.close()
exit(0)
