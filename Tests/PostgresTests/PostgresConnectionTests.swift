import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct PostgresConnectionTests {
    @Test func parametersTravelAsValuesNotSQL() throws {
        let connection = try PostgresConnection(connectionString: try TestPostgresServer.freshDatabase("pg_params"))
        try connection.execute("CREATE TABLE notes (id bigint PRIMARY KEY, body text, flag boolean, raw bytea)")
        let hostile = "'); DROP TABLE notes; --"
        try connection.execute(
            "INSERT INTO notes VALUES ($1, $2, $3, $4)", [.int(1), .text(hostile), .bool(true), .bytes([0, 255, 10])])
        try connection.execute("INSERT INTO notes VALUES ($1, $2, $3, $4)", [.int(2), .null, .bool(false), .null])
        let rows = try connection.execute("SELECT id, body, flag, raw FROM notes ORDER BY id").rows
        #expect(rows.count == 2)
        #expect(try rows[0].int64(0) == 1)
        #expect(try rows[0].string(1) == hostile)
        #expect(try rows[0].bool(2))
        #expect(try rows[0].bytes(3) == [0, 255, 10])
        #expect(rows[1].optionalString(1) == nil)
        #expect(try !rows[1].bool(2))
        #expect(rows[1].isNull(3))
    }

    @Test func errorsCarryTheSQLState() throws {
        let connection = try PostgresConnection(connectionString: try TestPostgresServer.freshDatabase("pg_errors"))
        try connection.execute("CREATE TABLE keys (k text PRIMARY KEY)")
        try connection.execute("INSERT INTO keys VALUES ($1)", ["a"])
        do {
            try connection.execute("INSERT INTO keys VALUES ($1)", ["a"])
            Issue.record("a duplicate key was accepted")
        } catch {
            #expect(error.isUniqueViolation)
            #expect(!error.isConnectionBroken)
        }
        #expect(throws: PostgresError.self) { try connection.execute("SELECT $1::bigint", ["not a number"]) }
        // The connection is still usable after errors.
        #expect(try connection.execute("SELECT count(*) FROM keys").rows[0].int64(0) == 1)
    }

    @Test func aFailedTransactionKeepsNothingAndACommittedOneKeepsAll() throws {
        let connection = try PostgresConnection(connectionString: try TestPostgresServer.freshDatabase("pg_txn"))
        try connection.execute("CREATE TABLE entries (n bigint PRIMARY KEY)")
        #expect(throws: PostgresError.self) {
            try connection.transaction { session throws(PostgresError) in
                try session.execute("INSERT INTO entries VALUES ($1)", [.int(1)])
                try session.execute("INSERT INTO entries VALUES ($1)", [.int(1)])
            }
        }
        #expect(try connection.execute("SELECT count(*) FROM entries").rows[0].int64(0) == 0)
        try connection.transaction { session throws(PostgresError) in
            for n in 1...3 { try session.execute("INSERT INTO entries VALUES ($1)", [.int(Int64(n))]) }
        }
        #expect(try connection.execute("SELECT sum(n) FROM entries").rows[0].int64(0) == 6)
    }

    @Test func aStoppedServerIsABrokenConnectionAndReconnectWorksOnceItIsBack() throws {
        let server = try TestPostgresServer.start()
        defer { server.stop() }
        let connection = try PostgresConnection(connectionString: server.connectionString())
        #expect(try connection.execute("SELECT 1").rows[0].int64(0) == 1)
        server.stop()
        do {
            try connection.execute("SELECT 1")
            Issue.record("a statement succeeded on a stopped server")
        } catch {
            #expect(error.isConnectionBroken)
        }
        #expect(!connection.isUsable)
        #expect(throws: PostgresError.self) { try connection.reconnect() }
        try server.startServer()
        try connection.reconnect()
        #expect(try connection.execute("SELECT 2").rows[0].int64(0) == 2)
    }

    @Test func anUnreachableServerFailsToConnectWithAClearError() throws {
        let server = try TestPostgresServer.start()
        let connectionString = server.connectionString()
        server.stop()
        do {
            _ = try PostgresConnection(connectionString: connectionString, connectTimeoutSeconds: 2)
            Issue.record("connected to a stopped server")
        } catch {
            #expect(error.isConnectionBroken)
            #expect(error.sqlState == nil)
            #expect(!error.message.isEmpty)
        }
    }
}
