import CPostgres
import Foundation
import Primitives

/// Owns one `PGconn`: `PQfinish` runs in `deinit` unconditionally, also after a failed connect
/// (libpq allocates the object even then and requires it to be freed).
final class ConnectionHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { PQfinish(pointer) }
}

/// Owns one `PGresult`: `PQclear` in `deinit`. Lives only while a result is copied out.
final class ResultHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { PQclear(pointer) }

    var status: ExecStatusType { PQresultStatus(pointer) }

    func field(_ code: UInt8) -> String? {
        guard let c = PQresultErrorField(pointer, Int32(code)) else { return nil }
        return String(cString: c)
    }

    /// Copies every cell into one byte buffer so the `PGresult` can be freed right away.
    func copyRows() -> ResultStorage {
        let columnCount = Int(PQnfields(pointer))
        let rowCount = Int(PQntuples(pointer))
        let affected = PQcmdTuples(pointer).flatMap { Int(String(cString: $0)) } ?? rowCount
        if columnCount == 0 {
            return ResultStorage(columns: [], types: [], rowCount: 0, affectedRows: affected, data: [], starts: [], lengths: [])
        }
        var columns: [String] = []
        var types: [UInt32] = []
        columns.reserveCapacity(columnCount)
        types.reserveCapacity(columnCount)
        for c in 0..<Int32(columnCount) {
            columns.append(PQfname(pointer, c).map { String(cString: $0) } ?? "?column?")
            types.append(PQftype(pointer, c))
        }
        let cells = rowCount * columnCount
        var starts: [Int] = []
        var lengths: [Int32] = []
        starts.reserveCapacity(cells)
        lengths.reserveCapacity(cells)
        var size = 0
        for r in 0..<Int32(rowCount) {
            for c in 0..<Int32(columnCount) { size &+= Int(max(0, PQgetlength(pointer, r, c))) }
        }
        var data: [UInt8] = []
        data.reserveCapacity(size)
        for r in 0..<Int32(rowCount) {
            for c in 0..<Int32(columnCount) {
                starts.append(data.count)
                if PQgetisnull(pointer, r, c) != 0 {
                    lengths.append(-1)
                    continue
                }
                let length = PQgetlength(pointer, r, c)
                lengths.append(length)
                if length > 0, let value = PQgetvalue(pointer, r, c) {
                    // A typed buffer: `append(contentsOf:)` copies it in one memcpy (a raw buffer went byte by byte).
                    value.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
                        data.append(contentsOf: UnsafeBufferPointer(start: $0, count: Int(length)))
                    }
                }
            }
        }
        return ResultStorage(columns: columns, types: types, rowCount: rowCount, affectedRows: affected,
                             data: data, starts: starts, lengths: lengths)
    }
}

/// Transaction isolation levels (PostgreSQL docs, "Transaction Isolation").
public struct IsolationLevel: Sendable, Hashable {
    let sql: String
    /// PostgreSQL's default.
    public static let readCommitted = IsolationLevel(sql: "BEGIN")
    /// Snapshot per transaction; concurrent updates of the same row fail with 40001.
    public static let repeatableRead = IsolationLevel(sql: "BEGIN ISOLATION LEVEL REPEATABLE READ")
    /// True serializability; anomalies fail with 40001 and are retried by `ConnectionPool.transaction`.
    public static let serializable = IsolationLevel(sql: "BEGIN ISOLATION LEVEL SERIALIZABLE")
}

/// One PostgreSQL session over libpq.
///
/// Not thread-safe: use it from one thread at a time (it may move between threads, which is why it
/// is `@unchecked Sendable`; the pool hands it to exactly one borrower at a time). Every call blocks
/// the calling thread, so call it from our own worker threads, never from Swift's cooperative pool.
public final class Connection: @unchecked Sendable {
    let handle: ConnectionHandle
    private var conn: OpaquePointer { handle.pointer }

    private struct StatementKey: Hashable {
        let sql: String
        let types: [UInt32]

        /// The text's length and its first and last 64 bytes: statements differ there, and hashing all of a
        /// statement's text (kilobytes) per lookup cost thousands of instructions on every request.
        func hash(into hasher: inout Hasher) {
            var sql = sql
            sql.withUTF8 { bytes in
                hasher.combine(bytes.count)
                hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.prefix(64))))
                hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(64))))
            }
            hasher.combine(types)
        }

        /// Byte equality of the texts (`String`'s `==` compares by Unicode rules: ~5,000 instructions a statement);
        /// texts equal only by those rules are prepared twice, which is harmless.
        static func == (a: StatementKey, b: StatementKey) -> Bool {
            guard a.types == b.types else { return false }
            var x = a.sql, y = b.sql
            return x.withUTF8 { p in y.withUTF8 { q in
                guard p.count == q.count, let pa = p.baseAddress, let qa = q.baseAddress else { return p.count == q.count }
                return memcmp(pa, qa, p.count) == 0
            } }
        }
    }
    /// Prepared statements of this session, by SQL text and parameter types (the types are part of
    /// the key because the server fixes them at prepare time).
    private var statements: [StatementKey: String] = [:]
    private var statementCounter = 0
    /// Server-side statements forgotten after SQLSTATE 0A000, dropped at the next chance.
    private var staleStatements: [String] = []
    /// Beyond this many distinct statements, further ones run unprepared (bounds server memory).
    static let statementCacheLimit = 256

    /// Messages this session has sent and waited for an answer to: one per statement run, one more the first
    /// time a statement is prepared, one per script. What a request costs the database in round trips.
    public private(set) var roundTrips = 0
    /// Prepared statements cached by this session (a hot statement that is missing runs unprepared).
    public var preparedStatementCount: Int { statements.count }

    /// Connects (blocking) and applies the session settings (`statement_timeout`).
    public init(settings: ConnectionSettings) throws(PGError) {
        var parameters = settings.resolvedParameters()
        parameters.append(("client_encoding", "UTF8"))
        let keys = parameters.map { strdup($0.0) }
        let values = parameters.map { strdup($0.1) }
        // The arrays and their strings must outlive PQconnectdbParams; they are freed right after it.
        defer {
            keys.forEach { free($0) }
            values.forEach { free($0) }
        }
        let keyPointers: [UnsafePointer<CChar>?] = keys.map { $0.map { UnsafePointer($0) } } + [nil]
        let valuePointers: [UnsafePointer<CChar>?] = values.map { $0.map { UnsafePointer($0) } } + [nil]
        guard let raw = PQconnectdbParams(keyPointers, valuePointers, settings.expandsDatabaseName ? 1 : 0) else {
            throw PGError(code: .connectionFailed, message: "libpq could not allocate a connection")
        }
        handle = ConnectionHandle(raw)
        guard PQstatus(raw) == CONNECTION_OK else {
            throw PGError(code: .connectionFailed, message: Self.trimmed(PQerrorMessage(raw)))
        }
        // Notices (e.g. "relation already exists, skipping") would go to stderr by default.
        PQsetNoticeProcessor(raw, { _, _ in }, nil)
        if let timeout = settings.statementTimeout {
            let ms = max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
            try executeScript(unsafeSQL: "SET statement_timeout = \(ms)")
        }
    }

    private static func trimmed(_ c: UnsafePointer<CChar>?) -> String {
        guard let c else { return "unknown libpq error" }
        return String(cString: c).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// True once the session is unusable (server gone, protocol failure); the pool discards it.
    public var isBroken: Bool { PQstatus(conn) != CONNECTION_OK }

    /// True while a transaction block is open (or aborted) on this session.
    public var isInTransaction: Bool { PQtransactionStatus(conn) != PQTRANS_IDLE }

    /// The server's version number, e.g. 150004.
    public var serverVersion: Int { Int(PQserverVersion(conn)) }

    /// A health check without a round trip: reads whatever the server sent while we were idle. A
    /// restarted server has closed the socket (after a FATAL 57P01), which this notices.
    func checkAlive() -> Bool {
        guard PQstatus(conn) == CONNECTION_OK, PQtransactionStatus(conn) == PQTRANS_IDLE else { return false }
        // Fast path, one syscall: nothing to read on an idle session means it is alive.
        let fd = PQsocket(conn)
        guard fd >= 0 else { return false }
        var byte: UInt8 = 0
        let peeked = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return true }
        if peeked == 0 { return false }  // EOF: the server closed the session
        // Data while idle (a goodbye FATAL, a notice, a parameter change): let libpq read it. Twice:
        // the first read may return the server's goodbye message, the second then sees EOF.
        for _ in 0..<2 {
            guard PQconsumeInput(conn) == 1, PQstatus(conn) == CONNECTION_OK else { return false }
            _ = PQisBusy(conn)
        }
        return PQstatus(conn) == CONNECTION_OK
    }

    /// Runs a statement and returns its rows (binary results, decoded on access).
    @discardableResult
    public func query(_ query: Query) throws(PGError) -> Rows {
        Rows(storage: try run(query).copyRows())
    }

    /// Runs a statement and returns the number of rows it affected.
    @discardableResult
    public func execute(_ query: Query) throws(PGError) -> Int {
        let result = try run(query)
        guard let c = PQcmdTuples(result.pointer) else { return 0 }
        return Int(String(cString: c)) ?? 0
    }

    /// Runs several `;`-separated statements with the simple query protocol (migrations, DDL).
    /// No parameters: the caller vouches the text holds nothing untrusted.
    public func executeScript(unsafeSQL sql: String) throws(PGError) {
        roundTrips &+= 1
        guard PQsendQuery(conn, sql) == 1 else { throw connectionError() }
        // Drain every result (one per statement) so the connection is ready for the next command.
        var firstError: PGError?
        while let raw = PQgetResult(conn) {
            let result = ResultHandle(raw)
            if firstError == nil, let error = error(from: result) { firstError = error }
        }
        if let firstError { throw firstError }
        if isBroken { throw connectionError() }
    }

    /// Runs `body` inside BEGIN … COMMIT; rolls back and rethrows when `body` throws. No retry here:
    /// `ConnectionPool.transaction` retries serialization failures on a fresh transaction.
    @discardableResult
    public func transaction<T>(isolation: IsolationLevel = .readCommitted, _ body: (Connection) throws -> T) throws -> T {
        try execute(Query(unsafeSQL: isolation.sql))
        let value: T
        do {
            value = try body(self)
        } catch {
            rollbackQuietly()
            throw error
        }
        do {
            try execute("COMMIT")
        } catch {
            rollbackQuietly()
            throw error
        }
        return value
    }

    /// Rolls back if a transaction is open, swallowing errors (the original error matters more; a
    /// broken connection is discarded by the pool anyway).
    func rollbackQuietly() {
        guard !isBroken, isInTransaction else { return }
        _ = try? execute("ROLLBACK")
    }

    // MARK: - Execution

    /// Runs `query`; a cached statement a migration made stale (SQLSTATE 0A000, `PGError.isStaleStatement`) is
    /// prepared anew and run once more when that is safe here, outside a transaction block (the refused statement
    /// never ran). Inside one the block is aborted: the error goes up and `ConnectionPool` reruns the transaction.
    private func run(_ query: Query) throws(PGError) -> ResultHandle {
        do {
            return try runOnce(query)
        } catch where error.isStaleStatement && !isInTransaction {
            return try runOnce(query)
        }
    }

    private func runOnce(_ query: Query) throws(PGError) -> ResultHandle {
        let binds = query.binds
        var types: [UInt32] = []
        var formats: [Int32] = []
        var lengths: [Int32] = []
        var offsets: [Int] = []
        types.reserveCapacity(binds.count)
        formats.reserveCapacity(binds.count)
        lengths.reserveCapacity(binds.count)
        offsets.reserveCapacity(binds.count)
        // All parameter bytes in one buffer, each value followed by a NUL (libpq reads text-format
        // parameters with strlen). A NUL inside text would silently truncate it, so it is refused.
        var blob: [UInt8] = []
        for (i, bind) in binds.enumerated() {
            types.append(bind.typeOID)
            formats.append(bind.isBinary ? 1 : 0)
            if let bytes = bind.bytes {
                if !bind.isBinary, bytes.offset(of: 0) != nil {
                    throw PGError(code: .server, message: "text parameter $\(i + 1) contains a NUL byte", sqlState: "22021")
                }
                offsets.append(blob.count)
                lengths.append(Int32(truncatingIfNeeded: bytes.count))
                blob.append(contentsOf: bytes)
            } else {
                offsets.append(-1)
                lengths.append(0)
            }
            blob.append(0)
        }
        blob.append(0)

        deallocateStaleStatements()
        let key = StatementKey(sql: query.sql, types: types)
        var name = statements[key]
        if name == nil && statements.count < Self.statementCacheLimit {
            statementCounter &+= 1
            let newName = "s\(statementCounter)"
            roundTrips &+= 1
            let prepared: OpaquePointer? = types.withUnsafeBufferPointer { t in
                PQprepare(conn, newName, query.sql, Int32(truncatingIfNeeded: t.count), t.baseAddress)
            }
            guard let prepared else { throw connectionError() }
            let result = ResultHandle(prepared)
            if let error = error(from: result) { throw error }
            statements[key] = newName
            name = newName
        }

        roundTrips &+= 1
        let raw: OpaquePointer? = blob.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            guard let base = buffer.baseAddress else { return nil }
            let values: [UnsafePointer<CChar>?] = offsets.map { offset in
                offset < 0 ? nil : UnsafeRawPointer(base + offset).assumingMemoryBound(to: CChar.self)
            }
            let count = Int32(truncatingIfNeeded: binds.count)
            if let name {
                return PQexecPrepared(conn, name, count, values, lengths, formats, 1)
            }
            return PQexecParams(conn, query.sql, count, types, values, lengths, formats, 1)
        }
        guard let raw else { throw connectionError() }
        let result = ResultHandle(raw)
        if var error = error(from: result) {
            if let name, error.sqlState == PGError.stalePlanState {
                // The statement was prepared before a migration changed what it returns (a `*` over a widened
                // table): the server will refuse it for the rest of the session. Forget it, so the next run prepares
                // it anew; the server-side statement goes at the next chance.
                statements[key] = nil
                staleStatements.append(name)
                error.isStaleStatement = true
            }
            throw error
        }
        return result
    }

    /// Drops the server-side statements forgotten after SQLSTATE 0A000 (outside a transaction block: an aborted
    /// one refuses every command). One round trip, once per migration that changed a cached statement's result.
    private func deallocateStaleStatements() {
        guard !staleStatements.isEmpty, !isInTransaction else { return }
        let names = staleStatements
        staleStatements = []
        roundTrips &+= 1
        // Our own names ("s" and a counter), never input.
        if let raw = PQexec(conn, names.map { "DEALLOCATE \($0);" }.joined()) { _ = ResultHandle(raw) }
    }

    /// The error carried by a result, or nil when it succeeded.
    private func error(from result: ResultHandle) -> PGError? {
        let status = result.status
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY {
            return nil
        }
        let sqlState = result.field(UInt8(ascii: "C"))
        let message = result.field(UInt8(ascii: "M")) ?? Self.trimmed(PQresultErrorMessage(result.pointer))
        let lost = PQstatus(conn) != CONNECTION_OK
        return PGError(code: lost ? .connectionLost : .server,
                       message: message,
                       sqlState: sqlState,
                       detail: result.field(UInt8(ascii: "D")),
                       constraint: result.field(UInt8(ascii: "n")),
                       hint: result.field(UInt8(ascii: "H")))
    }

    private func connectionError() -> PGError {
        PGError(code: isBroken ? .connectionLost : .server, message: Self.trimmed(PQerrorMessage(conn)))
    }
}
