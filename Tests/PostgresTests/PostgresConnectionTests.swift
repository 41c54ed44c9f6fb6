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

    @Test func rowsReadByColumnNameWhateverTheOrderOfTheSelectList() throws {
        let connection = try PostgresConnection(connectionString: try TestPostgresServer.freshDatabase("pg_names"))
        try connection.execute("CREATE TABLE notes (id bigint PRIMARY KEY, body text, flag boolean, raw bytea)")
        try connection.execute(
            "INSERT INTO notes VALUES ($1, $2, $3, $4)", [.int(1), .text("one"), .bool(true), .bytes([0, 255, 10])])
        try connection.execute("INSERT INTO notes VALUES ($1, $2, $3, $4)", [.int(2), .null, .null, .null])
        for sql in [
            "SELECT id, body, flag, raw FROM notes ORDER BY id", "SELECT raw, flag, body, id FROM notes ORDER BY id",
        ] {
            let result = try connection.execute(sql)
            #expect(Set(result.columns) == ["id", "body", "flag", "raw"])
            let rows = result.rows
            #expect(rows.count == 2)
            #expect(try rows[0].int64("id") == 1)
            #expect(try rows[0].optionalInt64("id") == 1)
            #expect(try rows[0].string("body") == "one")
            #expect(try rows[0].optionalString("body") == "one")
            #expect(try rows[0].bool("flag"))
            #expect(try rows[0].optionalBool("flag") == true)
            #expect(try rows[0].bytes("raw") == [0, 255, 10])
            #expect(try rows[0].optionalBytes("raw") == [0, 255, 10])
            #expect(try !rows[0].isNull("raw"))
            #expect(try rows[1].int64("id") == 2)
            #expect(try rows[1].optionalString("body") == nil)
            #expect(try rows[1].optionalBool("flag") == nil)
            #expect(try rows[1].optionalBytes("raw") == nil)
            #expect(try rows[1].isNull("body"))
            #expect(try rows[1].isNull("flag"))
            #expect(try rows[1].isNull("raw"))
        }
        let empty = try connection.execute("SELECT NULL::bigint AS n").rows[0]
        #expect(try empty.optionalInt64("n") == nil)
    }

    @Test func aColumnNameTheResultLacksOrHoldsTwiceIsAnErrorNamingIt() throws {
        let connection = try PostgresConnection(connectionString: try TestPostgresServer.freshDatabase("pg_missing"))
        let row = try connection.execute("SELECT 1::bigint AS id, 'x' AS body, NULL::bigint AS gone").rows[0]
        let missing = PostgresError(
            sqlState: nil, message: "no column \"user_id\" in the result (its columns: id, body, gone)",
            isConnectionBroken: false)
        #expect(throws: missing) { try row.string("user_id") }
        #expect(throws: missing) { try row.optionalString("user_id") }
        #expect(throws: missing) { try row.int64("user_id") }
        #expect(throws: missing) { try row.optionalInt64("user_id") }
        #expect(throws: missing) { try row.bool("user_id") }
        #expect(throws: missing) { try row.optionalBool("user_id") }
        #expect(throws: missing) { try row.bytes("user_id") }
        #expect(throws: missing) { try row.optionalBytes("user_id") }
        #expect(throws: missing) { try row.isNull("user_id") }
        // A value of another type, or NULL where a value is required, names the column too.
        #expect(throws: PostgresError(
            sqlState: nil, message: "column \"body\" is not a bigint (other text)", isConnectionBroken: false)
        ) { try row.int64("body") }
        #expect(throws: PostgresError(
            sqlState: nil, message: "column \"gone\" is not a bigint (null)", isConnectionBroken: false)
        ) { try row.int64("gone") }
        #expect(throws: PostgresError(
            sqlState: nil, message: "column \"gone\" is not a text (null)", isConnectionBroken: false)
        ) { try row.string("gone") }
        #expect(throws: PostgresError(
            sqlState: nil, message: "column \"id\" is not a boolean (other text)", isConnectionBroken: false)
        ) { try row.bool("id") }
        #expect(throws: PostgresError(
            sqlState: nil, message: "column \"body\" is not a bytea (null)", isConnectionBroken: false)
        ) { try row.bytes("body") }
        // Positional reads keep their messages.
        #expect(throws: PostgresError(
            sqlState: nil, message: "column 1 is not a bigint (other text)", isConnectionBroken: false)
        ) { try row.int64(1) }
        // Two columns of one name: reading it by name is refused rather than guessed.
        let twice = try connection.execute("SELECT 1::bigint AS id, 2::bigint AS id, 3::bigint AS other").rows[0]
        #expect(throws: PostgresError(
            sqlState: nil, message: "column \"id\" stands more than once in the result (give it an alias)",
            isConnectionBroken: false)
        ) { try twice.int64("id") }
        #expect(try twice.int64("other") == 3)
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
        #expect(try connection.execute("SELECT count(*) AS n FROM keys").rows[0].int64("n") == 1)
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
        #expect(try connection.execute("SELECT count(*) AS n FROM entries").rows[0].int64("n") == 0)
        try connection.transaction { session throws(PostgresError) in
            for n in 1...3 { try session.execute("INSERT INTO entries VALUES ($1)", [.int(Int64(n))]) }
        }
        #expect(try connection.execute("SELECT sum(n) AS total FROM entries").rows[0].int64("total") == 6)
    }

    @Test func aStoppedServerIsABrokenConnectionAndReconnectWorksOnceItIsBack() throws {
        let server = try TestPostgresServer.start()
        defer { server.stop() }
        let connection = try PostgresConnection(connectionString: server.connectionString())
        #expect(try connection.execute("SELECT 1 AS one").rows[0].int64("one") == 1)
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
        #expect(try connection.execute("SELECT 2 AS two").rows[0].int64("two") == 2)
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
