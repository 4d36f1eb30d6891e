import Foundation
import Postgres
import Synchronization
import TestSupport
import XCTest

/// Pool behaviour against a real server: transactions, retries, exhaustion, concurrency, restarts.
final class PoolTests: XCTestCase {
    var settings: ConnectionSettings!

    override func setUpWithError() throws {
        settings = try TestDatabase.create(label: name)
    }

    /// Runs `body` on `count` threads at once and waits for all of them.
    private func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for i in 0..<count {
            group.enter()
            Thread.detachNewThread {
                body(i)
                group.leave()
            }
        }
        group.wait()
    }

    func testTransactionCommitsOnReturnAndRollsBackOnThrow() throws {
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 2))
        defer { pool.shutdown() }
        try pool.withConnection { try $0.execute("CREATE TABLE t (id int PRIMARY KEY)") }
        struct Boom: Error {}
        XCTAssertThrowsError(try pool.transaction { c in
            try c.execute("INSERT INTO t VALUES (\(1))")
            throw Boom()
        }) { XCTAssertTrue($0 is Boom) }
        let committed = try pool.transaction { c -> Int in
            try c.execute("INSERT INTO t VALUES (\(2))")
        }
        XCTAssertEqual(committed, 1)
        // A failing statement aborts the transaction; the connection goes back clean.
        XCTAssertThrowsError(try pool.transaction { c in
            try c.execute("INSERT INTO t VALUES (\(3))")
            try c.execute("INSERT INTO t VALUES (\(2))")
        }) { XCTAssertEqual(($0 as? PGError)?.sqlState, "23505") }
        let ids = try pool.withConnection { c in
            try c.query("SELECT id FROM t ORDER BY id").map { try $0.decode("id", as: Int.self) }
        }
        XCTAssertEqual(ids, [2])
        XCTAssertEqual(pool.statistics.inUse, 0)
    }

    func testSerializationFailureIsRetried() throws {
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 2))
        defer { pool.shutdown() }
        try pool.withConnection { c in
            try c.execute("CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL)")
            try c.execute("INSERT INTO counter VALUES (1, 0)")
        }
        let other = try Connection(settings: settings)
        var attempts = 0
        let result = try pool.transaction(isolation: .repeatableRead) { c -> Int in
            attempts += 1
            let n = try c.query("SELECT n FROM counter WHERE id = 1")[0].decode("n", as: Int.self)
            if attempts == 1 {
                // A concurrent committed update after our snapshot: our UPDATE must fail with 40001.
                try other.execute("UPDATE counter SET n = n + 100 WHERE id = 1")
            }
            try c.execute("UPDATE counter SET n = \(n + 1) WHERE id = 1")
            return n + 1
        }
        XCTAssertEqual(attempts, 2)
        XCTAssertEqual(result, 101)
        XCTAssertEqual(try other.query("SELECT n FROM counter")[0].decode("n", as: Int.self), 101)

        // Bounded: a conflict on every attempt gives up after maxTransactionRetries reruns.
        let bounded = ConnectionPool(settings: settings, configuration: .init(size: 1, maxTransactionRetries: 2))
        defer { bounded.shutdown() }
        var runs = 0
        XCTAssertThrowsError(try bounded.transaction(isolation: .repeatableRead) { c in
            runs += 1
            _ = try c.query("SELECT n FROM counter WHERE id = 1")
            try other.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
            try c.execute("UPDATE counter SET n = 0 WHERE id = 1")
        }) { XCTAssertEqual(($0 as? PGError)?.sqlState, "40001") }
        XCTAssertEqual(runs, 3)
    }

    /// `autocommit` runs one statement as its own transaction: committed when it returns, rerun on 40001/40P01,
    /// any other error thrown after one attempt; a round trip each, no BEGIN/COMMIT.
    func testAutocommitCommitsOneStatementAndRetriesSerializationFailures() throws {
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 1))
        defer { pool.shutdown() }
        // nextval is not rolled back, so the sequence counts attempts across the failed transactions.
        try pool.withConnection { c in
            try c.executeScript(unsafeSQL: """
                CREATE TABLE t (id bigint PRIMARY KEY);
                CREATE SEQUENCE attempts;
                CREATE FUNCTION flaky(failures int, code text) RETURNS bigint LANGUAGE plpgsql AS $$
                DECLARE n bigint := nextval('attempts');
                BEGIN
                    INSERT INTO t VALUES (n);
                    IF n <= failures THEN RAISE EXCEPTION USING ERRCODE = code; END IF;
                    RETURN n;
                END $$;
                """)
        }
        let before = try pool.withConnection { $0.roundTrips }
        // (XCTUnwrap would record the failures the pool is expected to retry.)
        let n = try pool.autocommit { c in
            try c.query("SELECT flaky(\(Int32(2)), \("40001"))").map { try $0.decode(at: 0, as: Int.self) }
        }
        XCTAssertEqual(n, [3], "two serialization failures, then success")
        XCTAssertEqual(try pool.withConnection { $0.roundTrips } - before, 4, "3 runs + the statement's first prepare")
        XCTAssertFalse(try pool.withConnection { $0.isInTransaction })
        XCTAssertThrowsError(try pool.autocommit { c in
            try c.query("SELECT flaky(\(Int32(100)), \("22012"))")
        }) { XCTAssertEqual(($0 as? PGError)?.sqlState, "22012") }
        // Only the successful run's row was committed; the failed runs (and the final error) rolled back.
        let ids = try pool.withConnection { try $0.query("SELECT id FROM t ORDER BY id").map { try $0.decode(at: 0, as: Int.self) } }
        XCTAssertEqual(ids, [3])
        let attempts = try pool.withConnection {
            try XCTUnwrap($0.query("SELECT last_value FROM attempts").first).decode(at: 0, as: Int.self)
        }
        XCTAssertEqual(attempts, 4, "the non-retryable error ran once")
    }

    /// A migration that adds a column under a session's cached prepared statement (`SELECT *`, a composite's `.*`)
    /// makes the server refuse to run it again: SQLSTATE 0A000, "cached plan must not change result type". The
    /// session forgets that statement and prepares it anew: outside a transaction block at once, inside one the pool
    /// reruns the transaction. A `bouncer migrate` beside serving processes costs no request.
    func testStatementCachedAcrossAColumnAddedIsPreparedAgain() throws {
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 1))
        defer { pool.shutdown() }
        try pool.withConnection { try $0.execute("CREATE TABLE t (id int PRIMARY KEY)") }
        try pool.withConnection { try $0.execute("INSERT INTO t VALUES (\(1))") }
        let select: Query = "SELECT * FROM t WHERE id = \(1)"
        XCTAssertEqual(try pool.withConnection { try $0.query(select) }.columns, ["id"])
        try pool.withConnection { try $0.executeScript(unsafeSQL: "ALTER TABLE t ADD COLUMN note text") }
        XCTAssertEqual(try pool.withConnection { try $0.query(select) }.columns, ["id", "note"])
        try pool.withConnection { try $0.executeScript(unsafeSQL: "ALTER TABLE t ADD COLUMN more int") }
        XCTAssertEqual(try pool.autocommit { try $0.query(select) }.columns, ["id", "note", "more"])
        // Inside a transaction block the first attempt is aborted; the pool reruns the block once.
        try pool.withConnection { try $0.executeScript(unsafeSQL: "ALTER TABLE t ADD COLUMN last int") }
        let attempts = Mutex(0)
        XCTAssertEqual(try pool.transaction { c -> [String] in
            attempts.withLock { $0 += 1 }
            return try c.query(select).columns
        }, ["id", "note", "more", "last"])
        XCTAssertEqual(attempts.withLock { $0 }, 2)
        // Outside the pool's transaction the caller sees the error, marked retryable; the next run prepares anew.
        try pool.withConnection { try $0.executeScript(unsafeSQL: "ALTER TABLE t ADD COLUMN final int") }
        try pool.withConnection { c in
            XCTAssertThrowsError(try c.transaction { try $0.query(select) }) {
                XCTAssertEqual(($0 as? PGError)?.sqlState, "0A000")
                XCTAssertEqual(($0 as? PGError)?.isRetryable, true)
            }
            XCTAssertEqual(try c.query(select).columns, ["id", "note", "more", "last", "final"])
            // The stale server-side statements were dropped: one statement of this text is left.
            XCTAssertEqual(try c.query("""
                SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement = 'SELECT * FROM t WHERE id = $1'
                """).first?.decode("n", as: Int.self), 1)
        }
    }

    func testExhaustedPoolGivesATimelyTypedError() throws {
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 1, acquireTimeout: .milliseconds(300)))
        defer { pool.shutdown() }
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? pool.withConnection { _ in
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
        let start = Date()
        XCTAssertThrowsError(try pool.withConnection { _ in }) { error in
            XCTAssertEqual((error as? PGError)?.code, .poolTimeout)
            XCTAssertEqual((error as? PGError)?.isUnavailable, true)
        }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertGreaterThanOrEqual(elapsed, 0.29)
        XCTAssertLessThan(elapsed, 2.0)
        XCTAssertEqual(pool.statistics.timeouts, 1)
        release.signal()
        // The connection comes back and serves the next caller.
        XCTAssertEqual(try pool.withConnection { try $0.query("SELECT 1 AS one")[0].decode("one", as: Int.self) }, 1)
        XCTAssertEqual(pool.statistics.opened, 1)
    }

    func testSixteenThreadsUpsertingOneKeyLeaveOneRow() throws {
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 8))
        defer { pool.shutdown() }
        try pool.withConnection { try $0.execute("CREATE TABLE kv (k text PRIMARY KEY, n int NOT NULL)") }
        let failures = Mutex(0)
        concurrently(16) { _ in
            for _ in 0..<25 {
                do {
                    try pool.withConnection { c in
                        try c.execute("INSERT INTO kv (k, n) VALUES (\("same"), 1) ON CONFLICT (k) DO UPDATE SET n = kv.n + 1")
                    }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, 0)
        let rows = try pool.withConnection { try $0.query("SELECT k, n FROM kv") }
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(try rows[0].decode("n", as: Int.self), 16 * 25)
        XCTAssertLessThanOrEqual(pool.statistics.opened, 8)
        XCTAssertEqual(pool.statistics.inUse, 0)
    }

    func testPoolRecoversAfterPostgresRestart() throws {
        let cluster = try TestDatabase.cluster()
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 3))
        defer { pool.shutdown() }
        // Open three idle connections, and keep one checked out across the restart.
        concurrently(3) { _ in _ = try? pool.withConnection { c in _ = try c.query("SELECT pg_sleep(0.05)") } }
        XCTAssertEqual(pool.statistics.idle, 3)

        try pool.withConnection { c in
            XCTAssertEqual(try c.query("SELECT 1 AS one")[0].decode("one", as: Int.self), 1)
            try cluster.restart()
            // The session held across the restart is dead: a typed "unavailable" error, no crash.
            XCTAssertThrowsError(try c.query("SELECT 1")) { error in
                XCTAssertEqual((error as? PGError)?.isUnavailable, true, "\(error)")
            }
            XCTAssertTrue(c.isBroken)
        }
        // Every later checkout gets a working connection: dead idle ones are noticed and replaced.
        for i in 0..<6 {
            XCTAssertEqual(try pool.withConnection { try $0.query("SELECT \(i) AS n")[0].decode("n", as: Int.self) }, i)
        }
        concurrently(3) { _ in _ = try? pool.withConnection { c in _ = try c.query("SELECT pg_sleep(0.05)") } }
        XCTAssertTrue(pool.ping())
        XCTAssertGreaterThanOrEqual(pool.statistics.discarded, 3)
        XCTAssertEqual(pool.statistics.inUse, 0)

        // Idle connections across a second restart: the very first transaction afterwards succeeds.
        try cluster.restart()
        XCTAssertEqual(try pool.transaction { try $0.query("SELECT 2 AS n")[0].decode("n", as: Int.self) }, 2)
        XCTAssertEqual(pool.statistics.inUse, 0)
    }

    func testShutdownFailsCheckoutsWithClosed() throws {
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 1))
        XCTAssertTrue(pool.ping())
        pool.shutdown()
        XCTAssertThrowsError(try pool.withConnection { _ in }) { XCTAssertEqual(($0 as? PGError)?.code, .closed) }
        XCTAssertFalse(pool.ping())
        XCTAssertEqual(pool.statistics.idle, 0)
    }

    func testUnreachableServerIsUnavailableAndPingFalse() {
        let pool = ConnectionPool(settings: .init(parameters: [("host", "/nonexistent-socket-dir"), ("user", "postgres")]),
                                  configuration: .init(size: 1))
        defer { pool.shutdown() }
        XCTAssertFalse(pool.ping())
        XCTAssertThrowsError(try pool.withConnection { _ in }) { error in
            XCTAssertEqual((error as? PGError)?.code, .connectionFailed)
            XCTAssertEqual((error as? PGError)?.isUnavailable, true)
        }
        XCTAssertEqual(pool.statistics.inUse, 0)
    }
}

/// The self-starting cluster: reuse and stale lock files.
final class LocalClusterTests: XCTestCase {
    func testStartOrReuseIsIdempotent() throws {
        let cluster = try TestDatabase.cluster()
        let again = try LocalCluster.startOrReuse(directory: cluster.directory, durable: false)
        XCTAssertFalse(again.startedByThisProcess)
        XCTAssertEqual(again.socketDirectory, cluster.socketDirectory)
        let c = try Connection(settings: again.settings)
        XCTAssertEqual(try c.query("SELECT current_user::text AS u")[0].decode("u", as: String.self), "postgres")
    }

    func testStalePostmasterPidIsRecovered() throws {
        let directory = NSTemporaryDirectory() + "bouncer-stale-\(getpid())-\(UInt32.random(in: 0...UInt32.max))/pg"
        defer { try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent) }
        let lines = Mutex<[String]>([])
        let first = try LocalCluster.startOrReuse(directory: directory, durable: false) { line in lines.withLock { $0.append(line) } }
        XCTAssertTrue(first.startedByThisProcess)
        let pidFile = first.dataDirectory + "/postmaster.pid"
        let original = try String(contentsOfFile: pidFile, encoding: .utf8)
        try first.stop()
        // Simulate a crash whose PID was reused by an unrelated live process (this test process).
        var pidLines = original.split(separator: "\n", omittingEmptySubsequences: false)
        pidLines[0] = Substring(String(getpid()))
        try pidLines.joined(separator: "\n").write(toFile: pidFile, atomically: false, encoding: .utf8)
        let second = try LocalCluster.startOrReuse(directory: directory, durable: false) { line in lines.withLock { $0.append(line) } }
        defer { try? second.stop(immediate: true) }
        XCTAssertTrue(second.startedByThisProcess)
        XCTAssertTrue(lines.withLock { $0 }.contains { $0.hasPrefix("postgres: removing stale") })
        try second.createDatabase("after_stale")
        let c = try Connection(settings: second.settings.database("after_stale"))
        XCTAssertEqual(try c.query("SELECT current_database()::text AS d")[0].decode("d", as: String.self), "after_stale")
    }
}
