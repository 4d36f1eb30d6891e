import Foundation
import Postgres
import TestSupport
import XCTest

/// Values, decoding, errors and injection against a real server (a fresh database per test).
final class QueryTests: XCTestCase {
    var pool: ConnectionPool!

    override func setUpWithError() throws {
        pool = ConnectionPool(settings: try TestDatabase.create(label: name), configuration: .init(size: 4))
    }

    override func tearDown() {
        pool?.shutdown()
    }

    func testScalarTypesRoundTripIncludingNullsAndUnicode() throws {
        try pool.withConnection { c in
            try c.execute("""
                CREATE TABLE t (id int PRIMARY KEY, s text, i8 bigint, i4 int, b bool, d float8, u uuid,
                                ts timestamptz, arr text[], raw bytea, doc jsonb)
                """)
            let id = try XCTUnwrap(UUID(uuidString: "6F1C2E1A-4B5D-4C3E-9A8B-7C6D5E4F3A2B"))
            let date = Date(timeIntervalSince1970: 1_700_000_000.123456)
            let text = "héllo wörld ✓ 🍏 'quoted' \"double\" \\ back"
            let array = ["a", "with,comma", "{brace}", "quote\"", "", "ünï 🍏", "NULL"]
            let bytes: [UInt8] = [0, 1, 2, 255, 0, 39, 92]
            let inserted = try c.execute("""
                INSERT INTO t VALUES (1, \(text), \(Int64.max), \(Int32.min), \(true), \(-1.5e300), \(id),
                                      \(date), \(array), \(bytes), \("{\"k\": \"🍏\", \"n\": 1}"))
                """)
            XCTAssertEqual(inserted, 1)
            try c.execute("INSERT INTO t (id) VALUES (2)")

            let rows = try c.query("SELECT * FROM t ORDER BY id")
            XCTAssertEqual(rows.count, 2)
            XCTAssertEqual(rows.columns, ["id", "s", "i8", "i4", "b", "d", "u", "ts", "arr", "raw", "doc"])
            let r = rows[0]
            XCTAssertEqual(try r.decode("id", as: Int.self), 1)
            XCTAssertEqual(try r.decode("s", as: String.self), text)
            XCTAssertEqual(try r.decode("i8", as: Int64.self), Int64.max)
            XCTAssertEqual(try r.decode("i4", as: Int32.self), Int32.min)
            XCTAssertEqual(try r.decode("i4", as: Int64.self), Int64(Int32.min))
            XCTAssertEqual(try r.decode("b", as: Bool.self), true)
            XCTAssertEqual(try r.decode("d", as: Double.self), -1.5e300)
            XCTAssertEqual(try r.decode("u", as: UUID.self), id)
            let back = try r.decode("ts", as: Date.self)
            XCTAssertEqual(back.timeIntervalSince1970, 1_700_000_000.123456, accuracy: 0.000_000_5)
            XCTAssertEqual(try r.decode("arr", as: [String].self), array)
            XCTAssertEqual(try r.decode("raw", as: [UInt8].self), bytes)
            XCTAssertEqual(try r.decode("doc", as: String.self), "{\"k\": \"🍏\", \"n\": 1}")
            XCTAssertEqual(try r.decode("doc", as: [UInt8].self), Array("{\"k\": \"🍏\", \"n\": 1}".utf8))
            XCTAssertEqual(try r.decode(at: 1, as: String.self), text)

            let n = rows[1]
            XCTAssertNil(try n.decode("s", as: String?.self))
            XCTAssertNil(try n.decode("i8", as: Int64?.self))
            XCTAssertNil(try n.decode("b", as: Bool?.self))
            XCTAssertNil(try n.decode("u", as: UUID?.self))
            XCTAssertNil(try n.decode("ts", as: Date?.self))
            XCTAssertNil(try n.decode("arr", as: [String]?.self))
            XCTAssertNil(try n.decode("raw", as: [UInt8]?.self))
            XCTAssertEqual(try n.decode("id", as: Int?.self), 1 + 1)

            // NULL parameters and the server's own text rendering of our timestamp (UTC, microseconds).
            let none: String? = nil
            XCTAssertEqual(try c.query("SELECT \(none)::text IS NULL AS isnull")[0].decode("isnull", as: Bool.self), true)
            try c.execute("SET TimeZone = 'UTC'")
            XCTAssertEqual(try c.query("SELECT \(date)::text AS t")[0].decode("t", as: String.self),
                           "2023-11-14 22:13:20.123456+00")
            XCTAssertEqual(try c.query("SELECT \([String]())::text AS t")[0].decode("t", as: String.self), "{}")
            XCTAssertEqual(try c.query("SELECT 'infinity'::timestamptz AS t")[0].decode("t", as: Date.self), .distantFuture)
        }
    }

    func testDecodingErrorsNameColumnAndTypes() throws {
        let row = try pool.withConnection { try $0.query("SELECT 42::int4 AS answer, NULL::text AS nothing")[0] }
        XCTAssertThrowsError(try row.decode("answer", as: String.self)) { error in
            let e = error as? PGError
            XCTAssertEqual(e?.code, .decoding)
            XCTAssertEqual(e?.message, "column \"answer\" of type int4 cannot be decoded as String")
        }
        XCTAssertThrowsError(try row.decode("nothing", as: String.self)) { error in
            XCTAssertEqual((error as? PGError)?.message, "column \"nothing\" (text) is NULL; decode as String? to allow NULL")
        }
        XCTAssertThrowsError(try row.decode("missing", as: Int.self)) { error in
            XCTAssertEqual((error as? PGError)?.message, "no column \"missing\" in result (columns: answer, nothing)")
        }
        XCTAssertThrowsError(try pool.withConnection { try $0.query("SELECT 5000000000::int8 AS big")[0].decode("big", as: Int32.self) }) {
            XCTAssertEqual(($0 as? PGError)?.code, .decoding)
        }
    }

    func testInjectionAttemptsStayData() throws {
        try pool.withConnection { c in
            try c.execute("CREATE TABLE students (name text NOT NULL)")
            let attacks = ["Robert'); DROP TABLE students;--", "' OR '1'='1", "$1", "\\'; SELECT pg_sleep(10); --", "\"; DROP TABLE students; --"]
            for attack in attacks {
                XCTAssertEqual(try c.execute("INSERT INTO students (name) VALUES (\(attack))"), 1)
            }
            let names = try c.query("SELECT name FROM students ORDER BY name").map { try $0.decode("name", as: String.self) }
            XCTAssertEqual(names, attacks.sorted())
            XCTAssertEqual(try c.query("SELECT count(*) AS n FROM students WHERE name = \("' OR '1'='1")")[0].decode("n", as: Int.self), 1)
            XCTAssertEqual(try c.query("SELECT count(*) AS n FROM students WHERE name = \("x' OR 'a'='a")")[0].decode("n", as: Int.self), 0)
        }
    }

    func testNulByteInTextIsRefusedNotTruncated() throws {
        XCTAssertThrowsError(try pool.withConnection { try $0.query("SELECT \("a\u{0}b")::text") }) { error in
            XCTAssertEqual((error as? PGError)?.sqlState, "22021")
        }
    }

    func testServerErrorCarriesFieldsAndSafeDescription() throws {
        try pool.withConnection { c in
            try c.execute("CREATE TABLE k (id text CONSTRAINT k_pkey PRIMARY KEY)")
            try c.execute("INSERT INTO k VALUES (\("secret-value"))")
            XCTAssertThrowsError(try c.execute("INSERT INTO k VALUES (\("secret-value"))")) { error in
                guard let e = error as? PGError else { return XCTFail("\(error)") }
                XCTAssertEqual(e.code, .server)
                XCTAssertEqual(e.sqlState, "23505")
                XCTAssertTrue(e.isUniqueViolation)
                XCTAssertEqual(e.constraint, "k_pkey")
                XCTAssertEqual(e.detail, "Key (id)=(secret-value) already exists.")
                XCTAssertFalse(e.isUnavailable)
                XCTAssertFalse(e.isRetryable)
                XCTAssertEqual(e.description, "database error server (SQLSTATE 23505)")
                XCTAssertTrue(e.debugDescription.contains("secret-value"))
            }
            XCTAssertThrowsError(try c.execute("SELEC 1")) { XCTAssertEqual(($0 as? PGError)?.sqlState, "42601") }
            // The connection is still usable after errors.
            XCTAssertEqual(try c.query("SELECT 7 AS n")[0].decode("n", as: Int.self), 7)
        }
    }

    func testPreparedStatementIsReusedPerConnection() throws {
        try pool.withConnection { c in
            for i in 0..<20 {
                XCTAssertEqual(try c.query("SELECT \(i) + 1 AS n")[0].decode("n", as: Int.self), i + 1)
            }
            let count = try c.query("SELECT count(*) AS n FROM pg_prepared_statements WHERE statement = 'SELECT $1 + 1 AS n'")
            XCTAssertEqual(try count[0].decode("n", as: Int.self), 1)
        }
    }

    func testStatementTimeoutIsAServerErrorNotUnavailable() throws {
        let settings = try TestDatabase.create(label: "timeout")
        let slow = ConnectionPool(settings: settings, configuration: .init(size: 1, statementTimeout: .milliseconds(100)))
        defer { slow.shutdown() }
        XCTAssertThrowsError(try slow.withConnection { try $0.query("SELECT pg_sleep(2)") }) { error in
            XCTAssertEqual((error as? PGError)?.sqlState, "57014")
            XCTAssertEqual((error as? PGError)?.isUnavailable, false)
        }
    }

    func testSettingsFromURLAndBadURL() throws {
        XCTAssertThrowsError(try ConnectionSettings(url: "mysql://localhost/db")) {
            XCTAssertEqual(($0 as? PGError)?.code, .invalidSettings)
        }
        let cluster = try TestDatabase.cluster()
        let url = "postgresql:///postgres?host=\(cluster.socketDirectory)&port=\(cluster.port)&user=postgres&sslmode=disable"
        let c = try Connection(settings: ConnectionSettings(url: url).database("template1"))
        XCTAssertEqual(try c.query("SELECT current_database()::text AS db")[0].decode("db", as: String.self), "template1")
        let redacted = try ConnectionSettings(url: "postgres://me:hunter2@db.example/x").description
        XCTAssertEqual(redacted, "url=postgres://me:***@db.example/x")
        XCTAssertThrowsError(try Connection(settings: .init(parameters: [("host", "/nonexistent"), ("connect_timeout", "2")]))) {
            XCTAssertEqual(($0 as? PGError)?.code, .connectionFailed)
            XCTAssertEqual(($0 as? PGError)?.isUnavailable, true)
        }
    }
}
