import Foundation
import Postgres
import XCTest

/// Query building and value decoding without a server, including malformed bytes (never a trap).
final class EncodingTests: XCTestCase {
    func testInterpolationBuildsPlaceholdersAndBinds() {
        let name = "x'; DROP TABLE t; --"
        let missing: Int? = nil
        let q: Query = "SELECT * FROM \(unsafeSQL: "projects") WHERE id = \(Int64(1)) AND name = \(name) OR n = \(missing)"
        XCTAssertEqual(q.sql, "SELECT * FROM projects WHERE id = $1 AND name = $2 OR n = $3")
        XCTAssertEqual(q.binds.count, 3)
        XCTAssertEqual(q.binds[0], PostgresValue(typeOID: 20, isBinary: true, bytes: [0, 0, 0, 0, 0, 0, 0, 1]))
        XCTAssertEqual(q.binds[1], PostgresValue(typeOID: 0, isBinary: false, bytes: Array(name.utf8)))
        XCTAssertEqual(q.binds[2], .null)
        XCTAssertEqual(Query(unsafeSQL: "SELECT 1").binds, [])
        XCTAssertEqual(Date(timeIntervalSince1970: 946_684_800.000_001).postgresValue.bytes, [0, 0, 0, 0, 0, 0, 0, 1])
        XCTAssertEqual(["a"].postgresValue.bytes, [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 25, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 97])
    }

    func testMalformedValuesThrowDecodingErrors() {
        func fails<T: PostgresDecodable>(_ type: T.Type, _ bytes: [UInt8], oid: UInt32, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertThrowsError(try T.decode(from: bytes[...], typeOID: oid, column: "c"), file: file, line: line) { error in
                XCTAssertEqual((error as? PGError)?.code, .decoding, file: file, line: line)
            }
        }
        fails([String].self, [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 25, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 9, 65], oid: 1009)  // element overruns
        fails([String].self, [0, 0, 0, 1, 0, 0, 0, 0], oid: 1009)                                                        // header cut short
        fails([String].self, [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 25, 0, 0, 0, 1, 0, 0, 0, 1, 255, 255, 255, 255], oid: 1009) // NULL element
        fails([String].self, [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 25], oid: 1009)                                          // 2-D
        fails(Date.self, [0, 0, 1], oid: 1184)
        fails(UUID.self, Array(repeating: 0, count: 15), oid: 2950)
        fails(Int64.self, [0, 0, 0], oid: 20)
        fails(Int.self, [0, 0, 0, 1], oid: 25)
        fails(Bool.self, [], oid: 16)
        fails(Double.self, [0, 0, 0, 0], oid: 701)
        fails(String.self, [2, 123, 125], oid: 3802)  // unknown jsonb version
        fails(String.self, [0, 0, 0, 1], oid: 23)
    }

    func testErrorDescriptionsAreClientSafe() {
        let e = PGError(code: .server, message: "duplicate key value violates unique constraint", sqlState: "23505",
                        detail: "Key (public_key)=(pk_secret) already exists.", constraint: "projects_public_key_key")
        XCTAssertEqual(e.description, "database error server (SQLSTATE 23505)")
        XCTAssertFalse(e.description.contains("pk_secret"))
        XCTAssertEqual(e.debugDescription, "PGError(server, sqlState: 23505, message: duplicate key value violates unique constraint, detail: Key (public_key)=(pk_secret) already exists., constraint: projects_public_key_key)")
        XCTAssertEqual(PGError(code: .server, message: "x", sqlState: "57P01").isUnavailable, true)
        XCTAssertEqual(PGError(code: .server, message: "x", sqlState: "40P01").isRetryable, true)
        XCTAssertEqual(PGError(code: .poolTimeout, message: "x").description, "database unavailable (poolTimeout)")
    }
}
