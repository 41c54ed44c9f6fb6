import Foundation
@_spi(Testing) import Postgres
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

    /// A checkout or TMPDIR in a directory only its owner may enter (`mktemp -d`, /root/...): as root the server runs
    /// as the `postgres` user, which could not reach a cluster made there; the cluster goes where it can.
    @Test func aServerStartsFromADirectoryThePostgresUserCannotEnter() throws {
        let parent = NSTemporaryDirectory() + "receipts-private-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let server = try TestPostgresServer.start(under: parent)
        defer { server.stop() }
        let connection = try PostgresConnection(connectionString: server.connectionString())
        #expect(try connection.execute("SELECT 1 AS one").rows[0].int64("one") == 1)
        if geteuid() == 0 {
            #expect(!server.directory.hasPrefix(parent))
        } else {
            #expect(server.directory.hasPrefix(parent))
        }
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

extension PostgresConnectionTests {
    /// Arrays of text, bigint, integer and boolean travel in binary format (`BinaryArray`): every element arrives as
    /// it was, NULLs and empty arrays included, alone and in a pipeline; an element that is not a value of its type
    /// is sent as text, so the server refuses it with the same data exception as before.
    @Test func arraysArriveElementForElement() throws {
        let connection = try PostgresConnection(connectionString: try TestPostgresServer.freshDatabase("pg_arrays"))
        let texts = ["", "plain", #"quote " and backslash \ "#, "{braces,comma}", "NULL", "ünïcødé ✓", " spaced "]
        let row = try #require(
            try connection.execute(
                """
                SELECT $1::text[] = ARRAY['', 'plain', 'quote " and backslash \\ ', '{braces,comma}', 'NULL',
                                          'ünïcødé ✓', ' spaced ']::text[],
                       array_length($1::text[], 1), $2::bigint[] IS NOT DISTINCT FROM ARRAY[-9223372036854775808, NULL,
                           0, 9223372036854775807]::bigint[],
                       $3::int[] = ARRAY[-2147483648, 7]::int[], $4::boolean[] IS NOT DISTINCT FROM ARRAY[true, false, NULL],
                       cardinality($5::text[]), $6::text[] IS NOT DISTINCT FROM ARRAY['a', NULL]::text[]
                """,
                [
                    .textArray(texts), .nullableArray(["-9223372036854775808", nil, "0", "9223372036854775807"]),
                    .textArray(["-2147483648", "7"]), .nullableArray(["true", "f", nil]), .textArray([]),
                    .nullableArray(["a", nil]),
                ]
            ).rows.first)
        #expect(try row.bool(0))
        #expect(try row.int64(1) == Int64(texts.count))
        #expect(try row.bool(2))
        #expect(try row.bool(3))
        #expect(try row.bool(4))
        #expect(try row.int64(5) == 0)
        #expect(try row.bool(6))
        // Through unnest and a pipeline, as the ledger writes its batches.
        try connection.execute("CREATE TABLE pairs (k text PRIMARY KEY, n bigint)")
        let results = try connection.withSession { session throws(PostgresError) in
            try session.pipeline([
                ("INSERT INTO pairs SELECT * FROM unnest($1::text[], $2::bigint[])",
                 [.textArray(["a", "b\"c"]), .nullableArray(["1", nil])]),
                ("SELECT k, n FROM pairs WHERE k = ANY($1::text[]) ORDER BY k", [.textArray(["b\"c", "a"])]),
            ])
        }
        #expect(results[0].affectedRows == 2)
        #expect(try results[1].rows.map { try $0.string(0) } == ["a", "b\"c"])
        #expect(try results[1].rows[0].int64(1) == 1)
        #expect(results[1].rows[1].isNull(1))
        // Not a bigint: refused by the server as a data exception (22P02), as the text format always was.
        do {
            try connection.execute("SELECT $1::bigint[]", [.nullableArray(["12", "twelve"])])
            Issue.record("a non-number was accepted as a bigint")
        } catch {
            #expect(error.isDataException)
        }
        // A NUL inside a text element is refused as a data exception too (the ledger dead-letters such a message).
        do {
            try connection.execute("SELECT $1::text[]", [.textArray(["nul\u{0}inside"])])
            Issue.record("a NUL byte was accepted in text")
        } catch {
            #expect(error.isDataException)
        }
    }
}

extension PostgresConnectionTests {
    /// `copy` stores rows in binary COPY format, NULLs included; a duplicate key or a field of the wrong type fails
    /// the copy as a statement would (nothing of it kept) and the connection stays usable.
    @Test func copiedRowsArriveAndAFailedCopyKeepsNothing() throws {
        let connection = try PostgresConnection(connectionString: try TestPostgresServer.freshDatabase("pg_copy"))
        try connection.execute("CREATE TABLE items (k text PRIMARY KEY, n bigint, flag boolean, note text)")
        var rows = PostgresCopyRows()
        for (key, number, flag, note) in [("a", Int64.min, true, "ünï \"q\" \\ ,"), ("b", nil, false, nil)] as [(String, Int64?, Bool, String?)] {
            rows.startRow(fields: 4)
            rows.text(key)
            rows.int64(number)
            rows.bool(flag)
            rows.text(note)
        }
        #expect(rows.count == 2)
        let copied = try connection.withSession { session throws(PostgresError) in
            try session.copy("COPY items (k, n, flag, note) FROM STDIN (FORMAT binary)", rows)
        }
        #expect(copied == 2)
        let stored = try connection.execute("SELECT k, n, flag, note FROM items ORDER BY k").rows
        #expect(try stored[0].int64(1) == Int64.min)
        #expect(try stored[0].bool(2))
        #expect(try stored[0].string(3) == "ünï \"q\" \\ ,")
        #expect(stored[1].isNull(1) && stored[1].isNull(3))
        #expect(try !stored[1].bool(2))

        var again = PostgresCopyRows()
        for key in ["c", "a"] {
            again.startRow(fields: 4)
            again.text(key)
            again.int64(1)
            again.bool(nil)
            again.text(nil)
        }
        do {
            _ = try connection.withSession { session throws(PostgresError) in
                try session.copy("COPY items (k, n, flag, note) FROM STDIN (FORMAT binary)", again)
            }
            Issue.record("a duplicate key was copied")
        } catch {
            #expect(error.isUniqueViolation)
            #expect(!error.isConnectionBroken)
        }
        var mistyped = PostgresCopyRows()
        mistyped.startRow(fields: 4)
        mistyped.text("d")
        mistyped.bool(true)  // n is a bigint: eight bytes expected
        mistyped.bool(true)
        mistyped.text(nil)
        do {
            _ = try connection.withSession { session throws(PostgresError) in
                try session.copy("COPY items (k, n, flag, note) FROM STDIN (FORMAT binary)", mistyped)
            }
            Issue.record("a boolean was copied into a bigint column")
        } catch {
            #expect(!error.isConnectionBroken)
        }
        #expect(try connection.execute("SELECT count(*) FROM items").rows[0].int64(0) == 2)
    }
}

extension PostgresConnectionTests {
    /// A `bigint[]` read in one value: every element, the extremes and the empty array as the server wrote them;
    /// NULL elements and anything else are a mismatch, not a guess.
    @Test func bigintArraysReadElementForElement() throws {
        let connection = try PostgresConnection(connectionString: try TestPostgresServer.freshDatabase("pg_int_arrays"))
        let row = try #require(
            try connection.execute(
                """
                SELECT ARRAY[-9223372036854775808, -1, 0, 7, 9223372036854775807]::bigint[] AS extremes,
                    '{}'::bigint[] AS empty, ARRAY[42]::bigint[] AS one, ARRAY[1, NULL]::bigint[] AS with_null,
                    NULL::bigint[] AS absent, 'x' AS text
                """
            ).rows.first)
        #expect(try row.int64Array(0) == [.min, -1, 0, 7, .max])
        #expect(try row.int64Array(1) == [])
        #expect(try row.int64Array(2) == [42])
        for column in 3...5 {
            #expect(throws: PostgresError.self) { try row.int64Array(column) }
        }
        let malformed = [
            "{1,}", "{,1}", "{-}", "{1-2}", "{9223372036854775808}", "{-9223372036854775809}", "{1 ,2}", "1,2", "{1}2}",
            "{", "}", "{{1}}",
        ]
        for text in malformed {
            #expect(throws: PostgresError.self, "\(text)") {
                try PostgresRow(values: [text]).int64Array(0)
            }
        }
        // Many numbers, as the ledger's batches take them from a sequence.
        try connection.execute("CREATE SEQUENCE numbers")
        let numbers = try connection.execute(
            "SELECT array_agg(nextval('numbers')) FROM generate_series(1, $1::int)", [.int(500)]
        ).rows[0].int64Array(0)
        #expect(numbers.sorted() == Array(1...500))
    }
}
