import Foundation
import ServiceSupport

/// A throwaway PostgreSQL server for tests: `initdb` into a temporary directory, `postgres` on a free loopback port
/// (unix socket in the same directory), durability off (`fsync=off`: nothing here must survive a power cut), trust
/// authentication for the `postgres` role. Stopped by `stop()` and when released.
///
/// PostgreSQL refuses to run as root: when the tests run as root (CI), the directory belongs to the `postgres` system
/// user (created by Debian's `postgresql` package) and the server binaries run through `runuser -u postgres --`.
public final class TestPostgresServer: Sendable {
    public let directory: String
    public let port: UInt16
    private let binDirectory: String
    private let running = Locked(false)

    /// A libpq connection string for database `database`.
    public func connectionString(database: String = "postgres") -> String {
        "host=127.0.0.1 port=\(port) user=postgres dbname=\(database)"
    }

    /// `initdb` and start, in a new directory under `parent`. Throws `TestSupportError` with the server's log tail
    /// when it does not come up.
    ///
    /// As root, the `postgres` user must reach the directory through every parent: where it cannot (a `TMPDIR` or
    /// checkout in a private directory, mode 0700), the cluster is made under /tmp instead, which every user may
    /// traverse.
    public static func start(under parent: String = NSTemporaryDirectory()) throws -> TestPostgresServer {
        let binDirectory = try findBinDirectory()
        let name = "receipts-pg-" + UUID().uuidString.prefix(8)
        var directory = (parent as NSString).appendingPathComponent(name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if geteuid() == 0 {
            try run("/bin/chown", ["postgres:postgres", directory], asPostgres: false)
            if (try? run("/usr/bin/test", ["-w", directory, "-a", "-x", directory], asPostgres: true)) == nil {
                try? FileManager.default.removeItem(atPath: directory)
                directory = "/tmp/" + name
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
                try run("/bin/chown", ["postgres:postgres", directory], asPostgres: false)
            }
        }
        try run(
            binDirectory + "/initdb",
            ["-D", directory + "/data", "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"],
            asPostgres: geteuid() == 0)
        var lastError: (any Error)?
        // A free port is found by binding port 0; another process may take it before the server binds it, so a
        // failed start is retried on another port.
        for _ in 0..<5 {
            let port = try freeLoopbackPort()
            let server = TestPostgresServer(directory: directory, port: port, binDirectory: binDirectory)
            do {
                try server.startServer()
                return server
            } catch {
                lastError = error
            }
        }
        throw lastError ?? TestSupportError("PostgreSQL did not start")
    }

    private init(directory: String, port: UInt16, binDirectory: String) {
        self.directory = directory
        self.port = port
        self.binDirectory = binDirectory
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts the server again after `stop()` (same data, same port).
    public func startServer() throws {
        let options =
            "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
            + "-c full_page_writes=off -c max_connections=50 -c shared_buffers=32MB"
        do {
            try Self.run(
                binDirectory + "/pg_ctl",
                ["-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "30", "-o", options, "start"],
                asPostgres: geteuid() == 0)
        } catch {
            let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
            throw TestSupportError("\(error)\nserver log tail:\n\(log.split(separator: "\n").suffix(10).joined(separator: "\n"))")
        }
        running.withLock { $0 = true }
    }

    /// Stops the server (fast shutdown: open transactions are rolled back). Idempotent.
    public func stop() {
        let wasRunning = running.withLock { state in
            defer { state = false }
            return state
        }
        guard wasRunning else { return }
        _ = try? Self.run(
            binDirectory + "/pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "-t", "30", "stop"],
            asPostgres: geteuid() == 0)
    }

    /// Creates database `name` (a plain identifier chosen by the test) and returns its connection string.
    public func createDatabase(_ name: String) throws -> String {
        precondition(name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }, "database names are identifiers")
        try Self.run(
            binDirectory + "/psql",
            ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", connectionString(), "-c", "CREATE DATABASE \(name)"],
            asPostgres: false)
        return connectionString(database: name)
    }

    /// The server binaries of the newest installed major version (`pg_config --bindir` names the client's, which
    /// on Debian has no `initdb`).
    private static func findBinDirectory() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        throw TestSupportError("no PostgreSQL server found under \(root)/*/bin: run scripts/install-deps.sh")
    }

    private static func freeLoopbackPort() throws -> UInt16 {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketDescriptor >= 0 else { throw TestSupportError("socket() failed") }
        defer { close(socketDescriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(socketDescriptor, generic, length) == 0 && getsockname(socketDescriptor, generic, &length) == 0
            }
        }
        guard bound else { throw TestSupportError("cannot bind a loopback port") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Runs a command to completion with its output in a file. `posix_spawn` and `waitpid`, not Foundation's
    /// `Process`: `Process` learns of a child's exit on Dispatch's worker pool, which Swift Testing's synchronous
    /// tests can occupy entirely (two workers on two cores), and then waits forever.
    @discardableResult
    private static func run(_ executable: String, _ arguments: [String], asPostgres: Bool) throws -> String {
        let argv = asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        let outputPath = NSTemporaryDirectory() + "receipts-pg-command-" + UUID().uuidString.prefix(8) + ".log"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else { throw TestSupportError("cannot run \(argv[0]): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        guard exitCode == 0 else {
            throw TestSupportError(
                "\(URL(fileURLWithPath: executable).lastPathComponent) \(arguments.prefix(3).joined(separator: " ")) "
                    + "exited \(exitCode): \(text)")
        }
        return text
    }
}

extension TestPostgresServer {
    private static let shared = Locked<TestPostgresServer?>(nil)
    private static let databaseCounter = Locked(0)

    /// One server per test process, started on first use and stopped when the process exits; each test takes a
    /// database of its own from it (`freshDatabase`).
    public static func sharedServer() throws -> TestPostgresServer {
        try shared.withLock { server in
            if let server { return server }
            let started = try TestPostgresServer.start()
            server = started
            atexit {
                TestPostgresServer.shared.withLock { server in
                    server?.stop()
                    server = nil
                }
            }
            return started
        }
    }

    /// A new empty database on the shared server (`<prefix>_<n>`), as a libpq connection string.
    public static func freshDatabase(_ prefix: String) throws -> String {
        let server = try sharedServer()
        let number = databaseCounter.withLock { counter in
            counter += 1
            return counter
        }
        return try server.createDatabase("\(prefix)_\(number)")
    }
}
