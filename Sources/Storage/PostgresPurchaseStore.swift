public import Domain
public import Foundation
public import Postgres

/// What `PostgresPurchaseStore.recordRenewal` did with a renewal fact.
public enum RenewalOutcome: Sendable, Equatable {
    /// The purchase now carries the renewal info; its new state.
    case applied(PurchaseState)
    /// The purchase already had renewal info signed at the same time or later; its unchanged state.
    case unchanged(PurchaseState)
    /// No transaction of the purchase is known yet: the fact is kept and applied when the first
    /// transaction is recorded (`recordTransaction` adopts it in the same database transaction).
    case pending
}

/// Transactions, purchase state and user bindings in PostgreSQL.
///
/// Each write is one statement, a call of a PL/pgSQL function (`bouncer_record_transactions` for one or many
/// transactions, `bouncer_record_renewal`), run as its own database transaction (`ConnectionPool.autocommit`, which reruns it on
/// a serialization failure or deadlock): one round trip, where the same work as separate statements took 7–9 plus
/// BEGIN/COMMIT. The functions are the only live author of the write rules (newer facts win, the transfer policy,
/// the pending-renewal hand-over); `PurchaseState.applying` and `OwnershipRules.decide` in Tests/Specification are
/// their executable specification (`RuleTableTests`, `WriteRulesOracleTests`). Concurrency is handled by row locks,
/// always taken in the same order — the `transactions` row, the `purchases` row, then its `subscriptions` rows — so
/// concurrent posts of one purchase queue up instead of deadlocking.
///
/// A purchase is keyed by (project, environment, original transaction id) and a transaction by (project,
/// environment, transaction id): Xcode and LocalTesting data, which anyone can sign, reusing a real id is another
/// purchase, so it never replaces, revokes, extends or re-owns a Sandbox or Production one (nor the reverse).
/// A stored transaction's identity (`original_transaction_id`, `product_id`, `bundle_id`, and the environment in
/// its key) never changes: signed data that disagrees is refused with `.transactionConflict`, nothing written.
///
/// Xcode and LocalTesting transactions are capped per project (`xcodeTransactionLimit`): a write that would take the
/// project past it is refused with `.xcodeLimitReached` and rolled back, so forgeries cannot grow the tables without
/// bound.
///
/// Group commit (`receiptBatchMax` > 1): concurrent `recordTransaction` calls share one statement and one durable
/// commit (`GroupCommit`; see `commit`), each answered after the commit that holds its receipt, with its own outcome.
/// Xcode/LocalTesting transactions are never batched: their cap check needs a transaction of their own.
public final class PostgresPurchaseStore: PostgresStore, @unchecked Sendable, PurchaseStore {
    /// The default cap of Xcode/LocalTesting `transactions` rows per project: far above what StoreKit Testing makes.
    public static let defaultXcodeTransactionLimit = 10_000

    private let xcodeTransactionLimit: Int
    private let batches: GroupCommit<Recording, RecordedTransaction>?

    /// A store over `pool`; the pool's lifetime is the caller's. `xcodeTransactionLimit` caps the Xcode/LocalTesting
    /// transaction rows per project.
    ///
    /// `receiptBatchMax`: most `recordTransaction` calls committed together (1: each its own commit, as before).
    /// Batches form only while others run (at most `concurrentBatches` at once, each on its own connection; 1 by
    /// default, as `DatabaseSettings.receiptBatches`, which `serve` sets from the CPUs): a lone call starts at once.
    public init(pool: ConnectionPool, xcodeTransactionLimit: Int = PostgresPurchaseStore.defaultXcodeTransactionLimit,
                receiptBatchMax: Int = 1, concurrentBatches: Int = 1) {
        self.xcodeTransactionLimit = max(1, xcodeTransactionLimit)
        batches = receiptBatchMax > 1
            ? GroupCommit(maxBatch: receiptBatchMax, maxConcurrentBatches: concurrentBatches) { [pool] in
                Self.commit($0, pool: pool)
            }
            : nil
        super.init(pool: pool)
    }

    /// Records a verified transaction and, when `userId` is given, binds its purchase to the user.
    ///
    /// One statement, one database transaction: upsert `transactions` (refused with `.transactionConflict` when the
    /// stored row of the same environment and transaction id has another identity); ensure the `purchases` row
    /// (adopting renewal info that arrived first); lock it; update it when the fact is newer; lock the purchase's
    /// current holders; write the binding (plus the revocations and `ownership_events` of a transfer). Under the
    /// `block` policy a purchase held by another user throws `.purchaseOwnedByAnotherUser` and nothing at all is
    /// written. Returns after the commit.
    public func recordTransaction(
        _ transaction: TransactionFacts, userId: String?, deviceId: String?, project: Project, now: Date
    ) throws -> RecordedTransaction {
        let recording = Recording(transaction: transaction, userId: userId, deviceId: deviceId, project: project,
                                  now: now, source: .transaction)
        if transaction.environment.isLocalTesting {
            return try StorageErrors.mapping("record transaction") {
                try Self.write(pool, capping: xcodeTransactionLimit, project: project) { connection in
                    try Self.apply(single: recording, on: connection)
                }
            }
        }
        if let batches { return try batches.submit(recording) }
        return try Self.commitAlone(recording, pool: pool)
    }

    /// Records `transactions` (a receipt's in-app records, a lookup's answer) from `source` and binds each
    /// purchase to `userId`, when given, in ONE statement and so one database transaction and one round trip:
    /// `bouncer_record_transactions` over the records, which applies them in input order (a batch of new
    /// transactions — first posts, renewals their purchase's one holder posts — set-based, any other one
    /// `bouncer_record_transaction` call per record, each seeing what the previous wrote).
    /// A refusal of any element (`.transactionConflict`, `.purchaseOwnedByAnotherUser`) rolls the whole statement
    /// back. Results are in input order. Measured on the 187-record receipt of 2020: one round trip (see README,
    /// "StoreKit 1 receipts"). Never group-committed with other requests: the receipt is already one statement.
    public func recordTransactions(
        _ transactions: [TransactionFacts], source: TransactionSource, userId: String?, deviceId: String?,
        project: Project, now: Date
    ) throws -> [RecordedTransaction] {
        guard let first = transactions.first else { return [] }
        let recordings = transactions.map {
            Recording(transaction: $0, userId: userId, deviceId: deviceId, project: project, now: now, source: source)
        }
        let capped = transactions.contains { $0.environment.isLocalTesting }
        return try StorageErrors.mapping("record transactions") {
            do {
                return try Self.write(pool, capping: capped ? xcodeTransactionLimit : nil, project: project) { connection in
                    try Self.apply(recordings, on: connection)
                }
            } catch let error as PGError {
                throw Self.refusal(error, transaction: first, project: project)
            }
        }
    }

    /// The purchases bound to `userId` (not revoked), with the entitlements of each purchase's current product;
    /// a product without a mapping grants nothing. Sorted by original transaction id (then environment: a user may
    /// hold an Xcode purchase and a real one with the same id, each its own entry). See `holdings`.
    public func ownedPurchases(userId: String, project: Project) throws -> [OwnedPurchase] {
        try holdings(userId: userId, project: project).purchases
    }

    /// The user's purchases (as `ownedPurchases`, with the latest transaction's revocation type and percentage), app
    /// transactions and standing grants, in one prepared statement: one round trip, whatever the user holds.
    ///
    /// One `UNION ALL` of three scans, a row per fact: purchase rows carry the `purchases` columns, app transaction
    /// rows the `app_*` columns, grant rows the `grant_*` columns (the others NULL). One sort orders all of them:
    /// purchases first (the only rows with an original transaction id) by id then environment, then app transactions
    /// by id then environment, then grants by creation then id — each set in the order the API shows it.
    /// Aggregating the app transactions and grants into arrays instead (one row, nine `array_agg(… ORDER BY …)`)
    /// cost PostgreSQL an aggregate node, one sort per aggregate and the arrays repeated on every purchase row;
    /// see bench/README.md, "Read path".
    public func holdings(userId: String, project: Project) throws -> UserHoldings {
        try StorageErrors.mapping("owned purchases") {
            try pool.withConnection { connection in
                // Instants as epoch milliseconds computed here, as before (app transactions rounded, grants floored
                // as the admin routes render them), so the answer keeps every byte. NULLs in the purchase branch are
                // typed: it fixes the column types of the union.
                let rows = try connection.query("""
                    SELECT * FROM (
                        SELECT \(unsafeSQL: PurchaseRows.columns), pr.entitlements,
                            t.revocation_type AS latest_revocation_type,
                            t.revocation_percentage AS latest_revocation_percentage,
                            \(unsafeSQL: CommitmentRows.columns),
                            NULL::text AS app_id, NULL::text AS app_environment, NULL::text AS app_version,
                            NULL::bigint AS app_purchased_ms, NULL::bigint AS app_rescinded_ms,
                            NULL::uuid AS grant_id, NULL::text AS grant_entitlement, NULL::bigint AS grant_expires_ms,
                            NULL::bigint AS grant_created_ms, NULL::timestamptz AS grant_created_at
                        FROM subscriptions s
                        JOIN purchases p
                          ON p.project_id = s.project_id AND p.environment = s.environment
                         AND p.original_transaction_id = s.original_transaction_id
                        LEFT JOIN products pr ON pr.project_id = p.project_id AND pr.product_id = p.product_id
                        LEFT JOIN transactions t ON t.project_id = p.project_id AND t.environment = p.environment
                         AND t.transaction_id = p.latest_transaction_id
                        WHERE s.project_id = \(project.id) AND s.user_id = \(userId) AND s.revoked_at IS NULL
                      UNION ALL
                        SELECT \(unsafeSQL: Self.purchaseNulls), a.app_transaction_id, a.environment,
                            a.original_application_version, (extract(epoch FROM a.original_purchase_date) * 1000)::bigint,
                            (extract(epoch FROM a.consent_rescinded_at) * 1000)::bigint, NULL, NULL, NULL, NULL, NULL
                        FROM app_transactions a
                        WHERE a.project_id = \(project.id) AND a.user_id = \(userId)
                      UNION ALL
                        SELECT \(unsafeSQL: Self.purchaseNulls), NULL, NULL, NULL, NULL, NULL, g.id, g.entitlement,
                            floor(extract(epoch FROM g.expires_at) * 1000)::bigint,
                            floor(extract(epoch FROM g.created_at) * 1000)::bigint, g.created_at
                        FROM grants g
                        WHERE g.project_id = \(project.id) AND g.user_id = \(userId) AND g.revoked_at IS NULL
                          AND (g.expires_at IS NULL OR g.expires_at > now())
                    ) h
                    ORDER BY h.original_transaction_id COLLATE "C", h.environment COLLATE "C",
                        h.app_id COLLATE "C", h.app_environment COLLATE "C", h.grant_created_at, h.grant_id
                    """)
                var holdings = UserHoldings(purchases: [], appTransactions: [])
                func date(_ milliseconds: Int64?) -> Date? {
                    milliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000) }
                }
                for row in rows {
                    if try row.decode("original_transaction_id", as: String?.self) != nil {
                        var state = try PurchaseRows.state(from: row)
                        state.revocationType = try row.decode("latest_revocation_type", as: String?.self)
                            .map(RevocationType.init(rawValue:))
                        state.revocationPercentage = try row.decode("latest_revocation_percentage", as: Int64?.self)
                        try CommitmentRows.load(row, into: &state)
                        holdings.purchases.append(OwnedPurchase(
                            purchase: state, entitlements: try row.decode("entitlements", as: [String]?.self) ?? []))
                    } else if let appTransactionId = try row.decode("app_id", as: String?.self) {
                        holdings.appTransactions.append(StoredAppTransaction(
                            appTransactionId: appTransactionId,
                            environment: StoreEnvironment(rawValue: try row.decode("app_environment", as: String.self)),
                            // An empty stored version reads as none (as the API always showed it).
                            originalApplicationVersion: try row.decode("app_version", as: String?.self)
                                .flatMap { $0.isEmpty ? nil : $0 },
                            originalPurchaseDate: date(try row.decode("app_purchased_ms", as: Int64?.self)),
                            consentRescindedAt: date(try row.decode("app_rescinded_ms", as: Int64?.self))))
                    } else if let id = try row.decode("grant_id", as: UUID?.self) {
                        // The reason is not read: the public read path never shows it.
                        guard let createdAt = date(try row.decode("grant_created_ms", as: Int64?.self)) else {
                            throw PGError(code: .decoding, message: "grant row without creation date")
                        }
                        holdings.grants.append(Grant(
                            id: id, userId: userId, entitlement: try row.decode("grant_entitlement", as: String.self),
                            expiresAt: date(try row.decode("grant_expires_ms", as: Int64?.self)), reason: "",
                            createdAt: createdAt))
                    } else {
                        throw PGError(code: .decoding, message: "holdings row of no kind")
                    }
                }
                return holdings
            }
        }
    }

    /// The purchase columns of `holdings`' union as NULLs, for the app transaction and grant branches (one per
    /// name of `PurchaseRows.columns`, plus entitlements and the two revocation columns).
    private static let purchaseNulls: String = {
        let count = PurchaseRows.columns.split(separator: ",").count + 3 + CommitmentRows.count
        return Array(repeating: "NULL", count: count).joined(separator: ", ")
    }()

    /// Records signed renewal info (from a notification) under the purchase's row lock, in one statement.
    ///
    /// When no transaction of the purchase is known yet there is no state to attach it to (a `purchases` row
    /// needs its latest transaction), so the fact is kept in `pending_renewals` (newest signature wins) and
    /// adopted by the `recordTransaction` that creates the purchase. A transaction-scoped advisory lock on
    /// (project, environment, original transaction id), taken only on these two rare paths, makes the hand-over race-free:
    /// either the renewal sees the new purchase row, or the transaction sees the pending fact.
    @discardableResult
    public func recordRenewal(_ renewal: RenewalFacts, project: Project, now: Date) throws -> RenewalOutcome {
        try StorageErrors.mapping("record renewal") {
            try pool.autocommit { connection in
                try Self.apply(renewal, projectId: project.id, now: now, on: connection)
            }
        }
    }

    // MARK: - Group commit

    /// Group commit's counters so far (monotonic; all 0 without group commit).
    public struct BatchCounts: Sendable, Equatable {
        /// Receipts submitted to a batch.
        public var receipts = 0
        /// Receipts that found every batch slot taken and waited for one: the write path was saturated.
        public var waited = 0
        /// Batches (statements and commits) run.
        public var batches = 0
        /// Seconds spent writing batches (each from its statement sent to its commit acknowledged), summed.
        public var writingSeconds = 0.0

        /// All zero.
        public init() {}
    }

    /// The counters so far (one short lock).
    public var batchCounts: BatchCounts {
        guard let counts = batches?.counts else { return BatchCounts() }
        var result = BatchCounts()
        result.receipts = counts.items
        result.waited = counts.waited
        result.batches = counts.batches
        result.writingSeconds = Double(counts.writingNanoseconds) / 1e9
        return result
    }

    /// Commits `recording` alone: one statement, its own transaction (the path without group commit, and a batch
    /// of one).
    private static func commitAlone(_ recording: Recording, pool: ConnectionPool) throws -> RecordedTransaction {
        try StorageErrors.mapping("record transaction") {
            try pool.autocommit { connection in try Self.apply(single: recording, on: connection) }
        }
    }

    /// Commits a batch of `recordTransaction` calls, one outcome per recording, in order (`GroupCommit`'s `run`).
    ///
    /// Optimistic: all recordings in ONE statement (`apply(_:on:)`: in arrival order, so two receipts of one
    /// purchase apply as if serial), its own transaction: one round trip, one durable commit. When that statement
    /// fails for something other than the database's availability (one call refused with 409, a constraint), it
    /// rolled everything back and nobody knows whose it was: `commitEach` replays the batch in one transaction with
    /// a savepoint per recording, so each gets exactly its own outcome. An outage, a statement timeout, or retries
    /// exhausted on deadlocks fail every recording of the batch with the same (retryable) error.
    static func commit(_ recordings: [Recording], pool: ConnectionPool) -> [Result<RecordedTransaction, any Error>] {
        if recordings.count == 1 {
            return [Result { try Self.commitAlone(recordings[0], pool: pool) }]
        }
        do {
            let recorded = try pool.autocommit { connection in try Self.apply(recordings, on: connection) }
            return recorded.map { .success($0) }
        } catch let error as PGError where !StorageErrors.isTransient(error) {
            return commitEach(recordings, pool: pool)
        } catch {
            return Array(repeating: .failure(Self.translated(error)), count: recordings.count)
        }
    }

    /// Records each of `recordings` under its own savepoint, all in one transaction (one commit): a refused or
    /// failed recording is rolled back to its savepoint and fails alone, as it would have on its own.
    private static func commitEach(_ recordings: [Recording], pool: ConnectionPool)
        -> [Result<RecordedTransaction, any Error>]
    {
        do {
            return try pool.transaction { connection in
                var outcomes: [Result<RecordedTransaction, any Error>] = []
                for recording in recordings {
                    try connection.execute("SAVEPOINT recording")
                    do {
                        outcomes.append(.success(try Self.apply(single: recording, on: connection)))
                        try connection.execute("RELEASE SAVEPOINT recording")
                    } catch let error as PGError where StorageErrors.isTransient(error) {
                        throw error  // the whole transaction: every recording fails (or the pool retries it)
                    } catch {
                        try connection.executeScript(unsafeSQL: "ROLLBACK TO SAVEPOINT recording; RELEASE SAVEPOINT recording")
                        outcomes.append(.failure(Self.translated(error)))
                    }
                }
                return outcomes
            }
        } catch {
            return Array(repeating: .failure(Self.translated(error)), count: recordings.count)
        }
    }

    /// `error` as `recordTransaction` throws it: a `PGError` through `StorageErrors`, anything else unchanged.
    private static func translated(_ error: any Error) -> any Error {
        (error as? PGError).map { StorageErrors.translate($0, action: "record transaction") } ?? error
    }

    // MARK: - Calls

    /// Runs `body` (one statement) as its own transaction; with a `limit`, in a transaction that then checks the
    /// project's Xcode/LocalTesting rows against it and rolls back (`.xcodeLimitReached`) when they exceed it.
    ///
    /// The check comes after the write, so it counts only what this request really adds (a receipt posted again
    /// adds nothing). It reads at most `limit + 1` index entries of the primary key, and a per-project lock held
    /// from the count to the commit makes concurrent writers count each other's rows: the cap is exact.
    static func write<T>(_ pool: ConnectionPool, capping limit: Int?, project: Project,
                         _ body: (Connection) throws -> T) throws -> T {
        guard let limit else { return try pool.autocommit(body) }
        return try pool.transaction { connection in
            let result = try body(connection)
            // Its own statement: the count's snapshot must be taken after the lock is granted.
            _ = try connection.query("SELECT pg_advisory_xact_lock(16980, hashtext(\(project.id.uuidString)))")
            let rows = try connection.query("""
                SELECT count(*) AS n FROM (SELECT 1 FROM transactions
                    WHERE project_id = \(project.id) AND environment IN ('Xcode', 'LocalTesting')
                    LIMIT \(Int64(limit) + 1)) x
                """)
            let count = try rows.first?.decode("n", as: Int64.self) ?? 0
            guard count <= Int64(limit) else {
                throw DomainError(
                    .xcodeLimitReached, "The project holds the most Xcode transactions this server keeps (\(limit)).",
                    underlying: "project \(project.id): more than \(limit) Xcode/LocalTesting transactions",
                    details: [FieldProblem(path: [],
                                           message: "limit \(limit) Xcode transactions per project reached")])
            }
            return result
        }
    }

    /// Records `recording` (and binds its user, when given) on `connection`: the record statement with one
    /// element (`apply(_:on:)`), its refusal as its `DomainError`. The body of `recordTransaction`.
    private static func apply(single recording: Recording, on connection: Connection) throws -> RecordedTransaction {
        do {
            guard let recorded = try Self.apply([recording], on: connection).first else {
                throw PGError(code: .decoding, message: "bouncer_record_transactions returned no row")
            }
            return recorded
        } catch let error as PGError {
            throw Self.refusal(error, transaction: recording.transaction, project: recording.project)
        }
    }

    /// One `bouncer_record_transaction` call with its own inputs: a receipt's transaction (`recordTransaction`),
    /// one of a receipt's in-app records (`recordTransactions`).
    struct Recording: Sendable {
        var transaction: TransactionFacts
        var userId: String?
        var deviceId: String?
        var project: Project
        var now: Date
        var source: TransactionSource
    }

    /// The body of `recordTransactions` and of a group commit: ONE statement passing the recordings, in input order,
    /// as one `bouncer_recording[]` to `bouncer_record_transactions` (schema/0095), which records them exactly as
    /// separate `bouncer_record_transaction` calls in one database transaction would (a batch of new transactions —
    /// first posts, renewals posted by their purchase's one holder — set-based, `bouncer_record_new_transactions`;
    /// any other batch by those calls). Every input is an
    /// array with one element per recording (NULL elements for absent values); instants are microseconds since 1970
    /// (the binary bind's resolution, so a receipt and a JWS of the same instant are equal). A refusal of any call
    /// fails the whole statement with the function's SQLSTATE (the caller decides which recording it was).
    /// The first array behind a sub-select: the planner sizes every batch at 10 rows, as the generic plan does (told
    /// the real length, it found each custom plan cheaper and planned at every commit: ~5 % of PostgreSQL's CPU).
    private static func apply(_ recordings: [Recording], on connection: Connection) throws -> [RecordedTransaction] {
        // Any instant of Int64 microseconds: verified dates (year 0000 to 9999, SignedDateRange) are far inside.
        // Outside it, refuse rather than trap or write NULL ("no expiry", as a bound of year 2255 once did for a
        // valid year-9999 receipt date).
        func micros(_ date: Date?) throws -> Int64? {
            guard let date else { return nil }
            let value = (date.timeIntervalSince1970 * 1_000_000).rounded()
            guard value.isFinite, abs(value) < 9.2e18 else {
                throw PGError(code: .decoding, message: "an instant beyond PostgreSQL's timestamps: \(date)")
            }
            return Int64(value)
        }
        var projects: [String] = [], ids: [String] = [], originals: [String] = [], products: [String] = []
        var types: [String] = [], environments: [String] = [], bundles: [String] = [], purchased: [Int64?] = []
        var originallyPurchased: [Int64?] = [], expires: [Int64?] = [], revoked: [Int64?] = []
        var reasons: [Int64?] = [], tokens: [String?] = [], ownerships: [String?] = [], signed: [Int64?] = []
        var payloads: [String] = [], users: [String?] = [], devices: [String?] = [], policies: [String] = []
        var nows: [Int64?] = [], sources: [String] = [], headers: [String?] = [], bodies: [String?] = []
        for r in recordings {
            let t = r.transaction
            projects.append(r.project.id.uuidString)
            ids.append(t.transactionId)
            originals.append(t.originalTransactionId)
            products.append(t.productId)
            types.append(t.type.rawValue)
            environments.append(t.environment.rawValue)
            bundles.append(t.bundleId ?? r.project.bundleId)
            purchased.append(try micros(t.purchaseDate))
            originallyPurchased.append(try micros(t.originalPurchaseDate))
            expires.append(try micros(t.expiresDate))
            revoked.append(try micros(t.accessRevocationDate))
            reasons.append(t.revocationReason.map(Int64.init))
            tokens.append(t.appAccountToken?.uuidString)
            ownerships.append(t.ownershipType?.rawValue)
            signed.append(try micros(t.signedDate))
            payloads.append(t.payloadJSON)
            users.append(r.userId)
            devices.append(r.deviceId)
            policies.append(r.project.transferPolicy.rawValue)
            nows.append(try micros(r.now))
            sources.append(r.source.rawValue)
            let evidence = JWSEvidence(t.signedJWS)
            headers.append(evidence?.header)
            bodies.append(evidence?.body)
        }
        let rows = try connection.query("""
            WITH f AS MATERIALIZED (
            SELECT * FROM unnest((SELECT \(projects)::text[]), \(ids)::text[], \(originals)::text[],
                \(products)::text[], \(types)::text[], \(environments)::text[], \(bundles)::text[],
                \(purchased)::int8[], \(originallyPurchased)::int8[], \(expires)::int8[], \(revoked)::int8[],
                \(reasons)::int8[], \(tokens)::text[], \(ownerships)::text[], \(signed)::int8[], \(payloads)::text[],
                \(users)::text[], \(devices)::text[], \(policies)::text[], \(nows)::int8[], \(sources)::text[],
                \(headers)::text[], \(bodies)::text[])
                WITH ORDINALITY AS f(project, id, original, product, type, environment, bundle, purchased,
                    original_purchased, expires, revoked, reason, token, ownership_type, signed, payload, user_id,
                    device_id, policy, now, source, header, body, ord)
            ), c AS MATERIALIZED (
            SELECT * FROM bouncer_record_transactions(ARRAY(
                SELECT ROW(f.ord, f.project::uuid, f.id, f.original, f.product, f.type, f.environment, f.bundle,
                    timestamptz 'epoch' + f.purchased * interval '1 microsecond',
                    timestamptz 'epoch' + f.original_purchased * interval '1 microsecond',
                    timestamptz 'epoch' + f.expires * interval '1 microsecond',
                    timestamptz 'epoch' + f.revoked * interval '1 microsecond',
                    f.reason::int, f.token::uuid, f.ownership_type,
                    timestamptz 'epoch' + f.signed * interval '1 microsecond', f.payload::jsonb,
                    f.user_id, f.device_id, f.policy, timestamptz 'epoch' + f.now * interval '1 microsecond',
                    f.source)::bouncer_recording
                FROM f ORDER BY f.ord))
            ), r AS MATERIALIZED (
            SELECT f.ord, (c.purchase).*, c.entitlements, c.ownership, c.previous_owners,
                \(unsafeSQL: Self.storedColumns), f.id AS evidence_id, f.header AS evidence_header,
                f.body AS evidence_body,
                timestamptz 'epoch' + f.signed * interval '1 microsecond' AS evidence_signed
            FROM f JOIN c ON c.ord = f.ord
            )\(unsafeSQL: headers.allSatisfy { $0 == nil } ? "" : Self.keepEvidence)
            SELECT * FROM r ORDER BY ord
            """)
        guard rows.count == recordings.count else {
            throw PGError(code: .decoding,
                          message: "bouncer_record_transaction returned \(rows.count) rows for \(recordings.count)")
        }
        return try zip(recordings, rows).map { try Self.recorded($0.transaction, $1) }
    }
    /// The record statements' second step: the JWS of each call that left its signedDate stored becomes the
    /// transaction's evidence (`transaction_jws`, schema/0066: the header once in `jws_headers`, the payload and
    /// signature per transaction), replaced only by a later-signed one. Data-modifying CTEs over the calls'
    /// materialized results (`r`: `evidence_id`, `evidence_header`, `evidence_body`, `evidence_signed`; the JWS split
    /// by `JWSEvidence`), so it costs no round trip; one
    /// row per transaction (a group commit may carry the same one twice: the later signed). Left out when no call
    /// carries a JWS (a StoreKit 1 receipt's records).
    private static let keepEvidence = """
        , e AS (SELECT DISTINCT ON (r.project_id, r.environment, r.evidence_id)
                r.project_id, r.environment, r.evidence_id, r.evidence_signed, r.evidence_header AS header,
                r.evidence_body AS body
            FROM r WHERE r.evidence_header IS NOT NULL AND r.stored_signed_date = r.evidence_signed
            ORDER BY r.project_id, r.environment, r.evidence_id, r.evidence_signed DESC),
        kept_header AS (
            INSERT INTO jws_headers (sha256, header)
            SELECT DISTINCT sha256(convert_to(e.header, 'UTF8')), e.header FROM e
            ON CONFLICT (sha256) DO NOTHING),
        kept AS (
            INSERT INTO transaction_jws (project_id, environment, transaction_id, signed_date, header_sha256, body)
            SELECT e.project_id, e.environment, e.evidence_id, e.evidence_signed, sha256(convert_to(e.header, 'UTF8')),
                e.body
            FROM e
            ON CONFLICT (project_id, environment, transaction_id) DO UPDATE
                SET signed_date = EXCLUDED.signed_date, header_sha256 = EXCLUDED.header_sha256, body = EXCLUDED.body
                WHERE transaction_jws.signed_date < EXCLUDED.signed_date)
        """

    /// The stored transaction's status facts as each `bouncer_record_transaction` call left them (its own result,
    /// schema/0094): the row its insert or update returned, locked until commit. A plain join on `transactions` would
    /// not do: the statement scans with its starting snapshot and sees none of the rows its own calls write.
    private static let storedColumns = """
        c.stored_expires_date, c.stored_revocation_date, c.stored_signed_date
        """

    /// A `RecordedTransaction` from one row of `bouncer_record_transaction`.
    private static func recorded(_ transaction: TransactionFacts, _ row: Row) throws -> RecordedTransaction {
        let ownership: OwnershipDecision?
        switch try row.decode("ownership", as: String?.self) {
        case nil: ownership = nil
        case "bind": ownership = .bind
        case "already_owned": ownership = .alreadyOwned
        case "share": ownership = .share
        case "transfer": ownership = .transfer(from: try row.decode("previous_owners", as: [String]?.self) ?? [])
        case let other?:
            throw PGError(code: .decoding, message: "bouncer_record_transaction: unknown ownership \(other.prefix(40))")
        }
        guard let storedSigned = try row.decode("stored_signed_date", as: Date?.self) else {
            throw PGError(code: .decoding, message: "bouncer_record_transaction returned no stored transaction")
        }
        let stored = StoredTransactionFacts(
            expiresDate: try row.decode("stored_expires_date", as: Date?.self),
            accessRevocationDate: try row.decode("stored_revocation_date", as: Date?.self), signedDate: storedSigned)
        return RecordedTransaction(
            transaction: transaction, purchase: try PurchaseRows.state(from: row),
            entitlements: try row.decode("entitlements", as: [String]?.self) ?? [], ownership: ownership,
            stored: stored)
    }

    /// Records `renewal` on `connection`: one call of `bouncer_record_renewal` (schema/functions/). The body of
    /// `recordRenewal`.
    private static func apply(_ renewal: RenewalFacts, projectId: UUID, now: Date, on connection: Connection) throws
        -> RenewalOutcome
    {
        let r = renewal
        let rows = try connection.query("""
            SELECT r.outcome, (r.purchase).*
            FROM bouncer_record_renewal(\(projectId), \(r.originalTransactionId)::text, \(Bind.text(r.productId))::text,
                \(Bind.text(r.autoRenewProductId))::text, \(Bind.int(r.autoRenewStatus))::int,
                \(Bind.int(r.expirationIntent))::int, \(Bind.date(r.gracePeriodExpiresDate)),
                \(Bind.bool(r.isInBillingRetryPeriod)), \(Bind.int(r.priceIncreaseStatus))::int,
                \(Bind.int(r.offerType))::int, \(Bind.text(r.offerIdentifier))::text, \(Bind.date(r.renewalDate)),
                \(r.environment.rawValue)::text, \(r.signedDate), \(r.payloadJSON)::jsonb,
                \(r.eligibleWinBackOfferIds)::text[], \(now)) r
            """)
        guard let row = rows.first else {
            throw PGError(code: .decoding, message: "bouncer_record_renewal returned no row")
        }
        switch try row.decode("outcome", as: String.self) {
        case "pending": return .pending
        case "unchanged": return .unchanged(try PurchaseRows.state(from: row))
        case "applied": return .applied(try PurchaseRows.state(from: row))
        case let other: throw PGError(code: .decoding, message: "bouncer_record_renewal: unknown outcome \(other.prefix(40))")
        }
    }

    /// The `DomainError` for a refusal `bouncer_record_transaction` raised (also when called for a notification's
    /// nested transaction `t`), else `error` itself.
    static func refusal(_ error: PGError, transaction t: TransactionFacts, project: Project) -> any Error {
        switch error.sqlState {
        case Refusal.transactionConflict?:
            return DomainError(
                .transactionConflict,
                "This transaction id is already recorded with a different identity; nothing was written.",
                underlying: "transaction conflict: project \(project.id), environment \(t.environment.rawValue.prefix(40)), "
                    + "transaction \(t.transactionId.prefix(64)), " + (error.detail ?? "differing fields: unknown"))
        case Refusal.ownedByAnotherUser?:
            return DomainError(
                .purchaseOwnedByAnotherUser, "This purchase is already bound to another user of this app.",
                underlying: "project \(project.id), \(t.environment) original transaction \(t.originalTransactionId), "
                    + "policy block")
        default:
            return error
        }
    }

    /// The SQLSTATEs `bouncer_record_transaction` raises to refuse a call (everything it wrote is rolled back).
    private enum Refusal {
        /// The stored transaction has another identity (`.transactionConflict`); DETAIL names the differing fields.
        static let transactionConflict = "BRTC1"
        /// The `block` policy refused to bind a purchase another user holds (`.purchaseOwnedByAnotherUser`).
        static let ownedByAnotherUser = "BRPO1"
    }
}
