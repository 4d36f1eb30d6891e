public import Domain
public import Foundation
import Postgres

/// Webhook configuration (`webhook_endpoints`) and the outbox (`webhook_events`, `webhook_attempts`) of
/// schema/0012_webhooks.sql: the admin side (`WebhookStore`), the deriver's side (events from the fact log of
/// schema/0025, `deriveChanges`) and the dispatcher's side (claim, complete, sweep). Errors: see `StorageErrors`.
public final class PostgresWebhookStore: PostgresStore, @unchecked Sendable, WebhookStore {
    private static let endpointColumns = """
        project_id, url, events, sealed_secret, encryption_key_id, sealed_previous_secret, previous_encryption_key_id,
        previous_secret_expires_at, created_at, updated_at
        """

    public func endpoint(projectId: UUID) throws -> StoredWebhookEndpoint? {
        try StorageErrors.mapping("webhook endpoint") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT \(unsafeSQL: Self.endpointColumns) FROM webhook_endpoints WHERE project_id = \(projectId)
                    """).first.map(Self.endpoint(from:))
            }
        }
    }

    /// `xmax = 0` tells a fresh insert from an update of the existing row, so two concurrent creations both succeed
    /// and only the winner's secret is kept (and returned by the use case). A created webhook starts from what the
    /// project's users hold now (`bouncer_webhook_seed`, same transaction, under the project's deriver lock): old
    /// grants are not announced.
    public func upsertEndpoint(projectId: UUID, url: String, events: [String]?, secret: SealedSecret, now: Date) throws
        -> (endpoint: WebhookEndpoint, created: Bool)
    {
        try StorageErrors.mapping("set webhook endpoint") {
            try pool.transaction { connection in
                try Self.lockDeriver(projectId, on: connection)
                let before = try connection.query("""
                    SELECT url, events FROM webhook_endpoints WHERE project_id = \(projectId) FOR UPDATE
                    """).first.map(Self.auditFields(from:))
                guard let row = try connection.query("""
                    INSERT INTO webhook_endpoints AS w (project_id, url, events, sealed_secret, encryption_key_id,
                        created_at, updated_at)
                    VALUES (\(projectId), \(url), \(events), \(secret.bytes), \(secret.keyId), \(now), \(now))
                    ON CONFLICT (project_id) DO UPDATE SET url = EXCLUDED.url, events = EXCLUDED.events,
                        updated_at = EXCLUDED.updated_at
                    RETURNING \(unsafeSQL: Self.endpointColumns), (xmax = 0) AS created
                    """).first else {
                    throw PGError(code: .decoding, message: "INSERT … RETURNING webhook_endpoints returned no row")
                }
                let created = try row.decode("created", as: Bool.self)
                if created { _ = try connection.query("SELECT bouncer_webhook_seed(\(projectId))") }
                var after = try Self.auditFields(from: row)
                if created { after.append(("secret", .string("set"))) }
                try AuditRows.write(connection, changes: AuditRows.diff(before, after))
                return (try Self.endpoint(from: row).endpoint, created)
            }
        }
    }

    /// The endpoint, the project's outbox and delivery log (attempts cascade) and what was announced, in one
    /// transaction under the project's deriver lock: a project without a webhook keeps no webhook rows.
    public func deleteEndpoint(projectId: UUID) throws -> Bool {
        try StorageErrors.mapping("delete webhook endpoint") {
            try pool.transaction { connection in
                try Self.lockDeriver(projectId, on: connection)
                let deleted = try connection.query("""
                    DELETE FROM webhook_endpoints WHERE project_id = \(projectId) RETURNING url, events
                    """).first
                if let deleted {
                    _ = try connection.execute("DELETE FROM webhook_events WHERE project_id = \(projectId)")
                    _ = try connection.execute("DELETE FROM webhook_purchase_states WHERE project_id = \(projectId)")
                    _ = try connection.execute("DELETE FROM webhook_entitlement_states WHERE project_id = \(projectId)")
                    try AuditRows.write(connection, changes: AuditRows.diff(try Self.auditFields(from: deleted), nil))
                }
                return deleted != nil
            }
        }
    }

    /// An endpoint's settings as the audit log shows them (its secret never).
    static func auditFields(from row: Row) throws -> [(String, AuditValue)] {
        [("url", .string(try row.decode("url", as: String.self))),
         ("events", try row.decode("events", as: [String]?.self).map { .list($0.map { .string($0) }) } ?? .null)]
    }

    /// Waits for the project's deriver (`bouncer_derive_changes`) and keeps it out until the transaction ends.
    static func lockDeriver(_ projectId: UUID, on connection: Connection) throws {
        _ = try connection.query("SELECT pg_advisory_xact_lock(16980, hashtext(\(projectId)::uuid::text))")
    }

    public func rotateSecret(projectId: UUID, secret: SealedSecret, previousExpiresAt: Date, now: Date) throws
        -> WebhookEndpoint?
    {
        try StorageErrors.mapping("rotate webhook secret") {
            try pool.transaction { connection in
                let rotated = try connection.query("""
                    UPDATE webhook_endpoints SET sealed_previous_secret = sealed_secret,
                        previous_encryption_key_id = encryption_key_id, previous_secret_expires_at = \(previousExpiresAt),
                        sealed_secret = \(secret.bytes), encryption_key_id = \(secret.keyId), updated_at = \(now)
                    WHERE project_id = \(projectId)
                    RETURNING \(unsafeSQL: Self.endpointColumns)
                    """).first.map { try Self.endpoint(from: $0).endpoint }
                if rotated != nil {
                    try AuditRows.write(connection, changes: [
                        AuditChange("secret", .string("old"), .string("new")),
                        AuditChange("previous_secret_expires_at", .null, .date(previousExpiresAt)),
                    ])
                }
                return rotated
            }
        }
    }

    public func emit(projectId: UUID, userId: String?, type: String, dataJSON: String) throws -> String? {
        try StorageErrors.mapping("emit webhook event") {
            try pool.transaction { connection in
                let id = try connection.query("""
                    SELECT bouncer_emit_event(\(projectId), \(userId)::text, \(type), \(dataJSON)::jsonb) AS id
                    """).first?.decode("id", as: String?.self)
                if let id {
                    try AuditRows.write(connection, target: "webhook_event:" + id,
                                        changes: [AuditChange("type", .null, .string(type))])
                }
                return id
            }
        }
    }

    private static let deliveryColumns = """
        e.project_id, e.seq, e.id, e.type, e.user_id, e.status, e.created_at, e.next_attempt_at, e.delivered_at
        """

    public func deliveries(projectId: UUID, status: WebhookDeliveryStatus?, limit: Int) throws -> [WebhookDelivery] {
        try StorageErrors.mapping("webhook deliveries") {
            try pool.withConnection { connection in
                let rows: Rows
                if status == .pending {
                    // Every pending event is at or after its user's head (webhook_queue; a user-less event is its
                    // own head), so the queue and webhook_events_user_seq_idx find them, however many were delivered.
                    rows = try connection.query("""
                        SELECT \(unsafeSQL: Self.deliveryColumns) FROM webhook_queue q
                        CROSS JOIN LATERAL (
                            SELECT e.* FROM webhook_events e
                            WHERE e.project_id = q.project_id AND e.user_id = q.user_id AND e.seq >= q.seq
                              AND e.status = 'pending'
                            ORDER BY e.project_id DESC, e.user_id DESC, e.seq DESC LIMIT \(limit)::int) e
                        WHERE q.project_id = \(projectId)::uuid AND q.user_id IS NOT NULL
                        UNION ALL
                        SELECT \(unsafeSQL: Self.deliveryColumns) FROM webhook_queue q
                        JOIN webhook_events e ON e.project_id = q.project_id AND e.seq = q.seq
                        WHERE q.project_id = \(projectId)::uuid AND q.user_id IS NULL AND e.status = 'pending'
                        ORDER BY seq DESC LIMIT \(limit)::int
                        """)
                } else if status == .failed {
                    // webhook_events_failed_idx (0068: failed_at is set exactly while an event is failed).
                    rows = try connection.query("""
                        SELECT \(unsafeSQL: Self.deliveryColumns) FROM webhook_events e
                        WHERE e.project_id = \(projectId) AND e.failed_at IS NOT NULL
                        ORDER BY e.seq DESC LIMIT \(limit)
                        """)
                } else if let status {
                    // Delivered: the primary key, newest first.
                    rows = try connection.query("""
                        SELECT \(unsafeSQL: Self.deliveryColumns) FROM webhook_events e
                        WHERE e.project_id = \(projectId) AND e.status = \(status.rawValue)
                        ORDER BY e.seq DESC LIMIT \(limit)
                        """)
                } else {
                    rows = try connection.query("""
                        SELECT \(unsafeSQL: Self.deliveryColumns) FROM webhook_events e
                        WHERE e.project_id = \(projectId) ORDER BY e.seq DESC LIMIT \(limit)
                        """)
                }
                return try Self.deliveries(rows, projectId: projectId, connection: connection)
            }
        }
    }

    public func retry(projectId: UUID, eventId: String, now: Date) throws -> WebhookDelivery? {
        try StorageErrors.mapping("retry webhook event") {
            try pool.transaction { connection in
                let before = try connection.query("""
                    SELECT status FROM webhook_events WHERE project_id = \(projectId) AND id = \(eventId) FOR UPDATE
                    """).first?.decode("status", as: String.self)
                let rows = try connection.query("""
                    UPDATE webhook_events e SET status = 'pending', next_attempt_at = \(now),
                        retry_window_start = \(now), delivered_at = NULL
                    WHERE e.project_id = \(projectId) AND e.id = \(eventId)
                    RETURNING \(unsafeSQL: Self.deliveryColumns)
                    """)
                if !rows.isEmpty {
                    _ = try connection.execute("SELECT pg_notify('bouncer_webhook_events', '')")
                    try AuditRows.write(connection, changes: [AuditChange("status", .text(before), .string("pending"))])
                }
                return try Self.deliveries(rows, projectId: projectId, connection: connection).first
            }
        }
    }

    /// The events of `rows` with their attempts (the newest 20 of each), oldest attempt first.
    private static func deliveries(_ rows: Rows, projectId: UUID, connection: Connection) throws -> [WebhookDelivery] {
        var out: [WebhookDelivery] = []
        var seqs: [Int64] = []
        for row in rows {
            seqs.append(try row.decode("seq", as: Int64.self))
            out.append(WebhookDelivery(
                eventId: try row.decode("id", as: String.self), type: try row.decode("type", as: String.self),
                userId: try row.decode("user_id", as: String?.self),
                status: WebhookDeliveryStatus(rawValue: try row.decode("status", as: String.self)) ?? .pending,
                createdAt: try row.decode("created_at", as: Date.self),
                nextAttemptAt: try row.decode("next_attempt_at", as: Date?.self),
                deliveredAt: try row.decode("delivered_at", as: Date?.self), attempts: []))
        }
        guard !seqs.isEmpty else { return out }
        let attempts = try connection.query("""
            SELECT a.event_seq, a.attempt, a.attempted_at, a.status_code, a.error, a.duration_ms
            FROM unnest(\(seqs)::bigint[]) AS s(seq)
            CROSS JOIN LATERAL (SELECT * FROM webhook_attempts a WHERE a.project_id = \(projectId)
                AND a.event_seq = s.seq ORDER BY a.attempt DESC LIMIT 20) a
            ORDER BY a.event_seq, a.attempt
            """)
        for row in attempts {
            let seq = try row.decode("event_seq", as: Int64.self)
            guard let index = seqs.firstIndex(of: seq) else { continue }
            out[index].attempts.append(WebhookAttempt(
                attempt: try row.decode("attempt", as: Int.self), at: try row.decode("attempted_at", as: Date.self),
                statusCode: try row.decode("status_code", as: Int?.self), error: try row.decode("error", as: String?.self),
                durationMs: try row.decode("duration_ms", as: Int.self)))
        }
        for i in out.indices where out[i].status != .pending { out[i].nextAttemptAt = nil }
        return out
    }

    static func endpoint(from row: Row) throws -> StoredWebhookEndpoint {
        let previousBytes = try row.decode("sealed_previous_secret", as: [UInt8]?.self)
        let previousKeyId = try row.decode("previous_encryption_key_id", as: String?.self)
        return StoredWebhookEndpoint(
            endpoint: WebhookEndpoint(
                projectId: try row.decode("project_id", as: UUID.self), url: try row.decode("url", as: String.self),
                events: try row.decode("events", as: [String]?.self),
                previousSecretExpiresAt: try row.decode("previous_secret_expires_at", as: Date?.self),
                createdAt: try row.decode("created_at", as: Date.self),
                updatedAt: try row.decode("updated_at", as: Date.self)),
            secret: SealedSecret(keyId: try row.decode("encryption_key_id", as: String.self),
                                 bytes: try row.decode("sealed_secret", as: [UInt8].self)),
            previousSecret: previousBytes.flatMap { bytes in previousKeyId.map { SealedSecret(keyId: $0, bytes: bytes) } })
    }

    // MARK: - The deriver's side

    /// Up to `limit` projects with fact-log rows (`purchase_changes`) not yet derived.
    public func projectsWithChanges(limit: Int) throws -> [UUID] {
        try StorageErrors.mapping("projects with changes") {
            try pool.withConnection { connection in
                // Citus plans no recursive CTE over a distributed table: there, each shard's DISTINCT (deploy/citus.md).
                if try isCitus(connection) {
                    return try connection.query("SELECT DISTINCT project_id FROM purchase_changes LIMIT \(limit)").map {
                        try $0.decode("project_id", as: UUID.self)
                    }
                }
                // A skip through the primary key (one probe per project), not a DISTINCT over every pending row: the
                // log grows while the deriver yields to a burst, and this runs before each of its batches.
                return try connection.query("""
                    WITH RECURSIVE p(project_id) AS (
                        (SELECT c.project_id FROM purchase_changes c ORDER BY c.project_id LIMIT 1)
                        UNION ALL
                        SELECT (SELECT c.project_id FROM purchase_changes c WHERE c.project_id > p.project_id
                                ORDER BY c.project_id LIMIT 1)
                        FROM p WHERE p.project_id IS NOT NULL)
                    SELECT project_id FROM p WHERE project_id IS NOT NULL LIMIT \(limit)
                    """).map {
                    try $0.decode("project_id", as: UUID.self)
                }
            }
        }
    }

    /// Derives the webhook events of the project's `limit` oldest log rows, and the rest of their recording
    /// transactions, adds them to the overview's rollup and deletes the rows, in one transaction
    /// (`bouncer_derive_changes`); the rows consumed, 0 when another transaction is deriving the project.
    public func deriveChanges(projectId: UUID, limit: Int) throws -> Int {
        try StorageErrors.mapping("derive changes") {
            try pool.autocommit { connection in
                try connection.query("SELECT bouncer_derive_changes(\(projectId), \(limit)::int) AS n").first?
                    .decode("n", as: Int.self) ?? 0
            }
        }
    }

    // MARK: - The dispatcher's side

    /// An event leased for one delivery attempt, with what is needed to send it.
    public struct ClaimedEvent: Sendable {
        /// The project.
        public var projectId: UUID
        /// The outbox row.
        public var seq: Int64
        /// `evt_…`.
        public var eventId: String
        /// The event type.
        public var type: String
        /// The user, if any.
        public var userId: String?
        /// The `data` object as JSON text.
        public var dataJSON: String
        /// When the event was written.
        public var createdAt: Date
        /// This attempt's number (1 for the first).
        public var attempt: Int
        /// When the current retry window started (created, or the last manual retry).
        public var retryWindowStart: Date
        /// The project's webhook as stored now.
        public var endpoint: StoredWebhookEndpoint
    }

    /// Leases up to `limit` due events for `leaseSeconds`, oldest due first: the first due rows of `webhook_queue`,
    /// which holds each user's head event only (0031), so a claim returns at most one event per user and none whose
    /// user has an earlier pending one, and costs O(limit) whatever the backlog. A leased head stays in the queue,
    /// due again when its lease ends (an instance that died mid-attempt: the event goes out again, same id). The lease
    /// is written on the queue row only, not on the event.
    /// `FOR UPDATE SKIP LOCKED` lets instances claim at once without waiting on or taking each other's rows.
    public func claim(owner: String, limit: Int, leaseSeconds: Int) throws -> [ClaimedEvent] {
        try StorageErrors.mapping("claim webhook events") {
            try pool.withConnection { connection in
                try claimEvents(owner: owner, limit: limit, leaseSeconds: leaseSeconds, on: connection)
            }
        }
    }

    /// `claim` on `connection`: one statement across projects on one node; on Citus, which locks rows only in a
    /// statement routed to one shard, the same statement per project with due events
    /// (`PostgresStore.claimAcrossProjects`), each project's events in the queue's order.
    func claimEvents(owner: String, limit: Int, leaseSeconds: Int, on connection: Connection) throws
        -> [ClaimedEvent]
    {
        let due: Query = """
            SELECT DISTINCT q.project_id FROM webhook_queue q WHERE q.next_attempt_at <= now()
            LIMIT \(Int64(max(1, limit)))
            """
        return try claimAcrossProjects(on: connection, limit: limit, dueProjects: due) { project, limit in
            try Self.claim(owner: owner, limit: limit, leaseSeconds: leaseSeconds, project: project, on: connection)
        }
    }

    /// The claim's one statement across projects (one node).
    static func claim(owner: String, limit: Int, leaseSeconds: Int, on connection: Connection) throws
        -> [ClaimedEvent]
    {
        try claim(owner: owner, limit: limit, leaseSeconds: leaseSeconds, project: nil, on: connection)
    }

    /// The claim's statement, of one project's events when `project` is not nil.
    static func claim(owner: String, limit: Int, leaseSeconds: Int, project: UUID?, on connection: Connection) throws
        -> [ClaimedEvent]
    {
        // Scoped (Citus): every table of the statement filtered on the project, so it is routed to one shard.
        let scope = PostgresStore.projectScope("q.project_id", project)
        let eventScope = PostgresStore.projectScope("e.project_id", project)
        // Only the queue row is written: the lease (and the attempt's number) live there, the event is read. The
        // update finds each locked row by its ctid (a Tid Scan; nobody else can move a row this statement locked, and
        // one moved since the statement's snapshot is not found: it waits for the next claim). Joined by key, the
        // planner hashed a scan of the whole queue, dead versions included, at every claim.
        let rows = try connection.query("""
            WITH due AS (
                SELECT q.ctid AS row, q.project_id, q.seq FROM webhook_queue q
                WHERE q.next_attempt_at <= now()\(unsafeSQL: scope)
                ORDER BY q.next_attempt_at, q.seq
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED)
            UPDATE webhook_queue q SET next_attempt_at = now() + make_interval(secs => \(leaseSeconds)),
                lease_owner = \(owner), attempts = q.attempts + 1
            FROM due JOIN webhook_events e ON e.project_id = due.project_id AND e.seq = due.seq
            WHERE q.ctid = due.row\(unsafeSQL: scope)\(unsafeSQL: eventScope)
            RETURNING e.project_id, e.seq, e.id, e.type, e.user_id, e.data::text AS data, e.created_at,
                q.attempts, e.retry_window_start
            """)
        guard !rows.isEmpty else { return [] }
        var projectIds: [UUID] = []
        for row in rows {
            let id = try row.decode("project_id", as: UUID.self)
            if !projectIds.contains(id) { projectIds.append(id) }
        }
        var endpoints: [UUID: StoredWebhookEndpoint] = [:]
        for row in try connection.query("""
            SELECT \(unsafeSQL: Self.endpointColumns) FROM webhook_endpoints
            WHERE project_id = ANY (\(projectIds.map { $0.lowercasedText })::uuid[])
            """) {
            let endpoint = try Self.endpoint(from: row)
            endpoints[endpoint.endpoint.projectId] = endpoint
        }
        // An event whose webhook was deleted meanwhile has gone with it (deleteEndpoint): nothing to send.
        var claimed: [ClaimedEvent] = []
        for row in rows {
            let projectId = try row.decode("project_id", as: UUID.self)
            guard let endpoint = endpoints[projectId] else { continue }
            claimed.append(ClaimedEvent(
                projectId: projectId, seq: try row.decode("seq", as: Int64.self),
                eventId: try row.decode("id", as: String.self), type: try row.decode("type", as: String.self),
                userId: try row.decode("user_id", as: String?.self), dataJSON: try row.decode("data", as: String.self),
                createdAt: try row.decode("created_at", as: Date.self),
                attempt: try row.decode("attempts", as: Int.self),
                retryWindowStart: try row.decode("retry_window_start", as: Date.self),
                endpoint: endpoint))
        }
        // The queue's order (oldest due first); RETURNING's order is the join's.
        return claimed.sorted { $0.seq < $1.seq }
    }

    /// What one attempt ended with.
    public enum AttemptOutcome: Sendable {
        /// A 2xx.
        case delivered(status: Int)
        /// Anything else: the status when there was an answer, and why; retried at `retryAt` unless `failed`.
        case notDelivered(status: Int?, error: String, retryAt: Date, failed: Bool)
    }

    /// A finished attempt of a claimed event, to record.
    public struct Completion: Sendable {
        /// The event as claimed (its attempt number, its lease).
        public var event: ClaimedEvent
        /// When the attempt started.
        public var at: Date
        /// How long it took.
        public var durationMs: Int
        /// What it ended with.
        public var outcome: AttemptOutcome

        /// A finished attempt.
        public init(event: ClaimedEvent, at: Date, durationMs: Int, outcome: AttemptOutcome) {
            self.event = event
            self.at = at
            self.durationMs = durationMs
            self.outcome = outcome
        }
    }

    /// Records the attempt and moves the event on (delivered, due again at `retryAt`, or failed), only while this
    /// owner still holds the lease; the attempt row is written either way. Waits while a deriver writes events for
    /// the event's user (see `completeAndClaim`).
    public func complete(_ event: ClaimedEvent, owner: String, at: Date, durationMs: Int, outcome: AttemptOutcome)
        throws
    {
        var pending = [Completion(event: event, at: at, durationMs: durationMs, outcome: outcome)]
        while !pending.isEmpty {
            pending = try completeAndClaim(pending, owner: owner, limit: 0, leaseSeconds: 0).later
            if !pending.isEmpty { usleep(2_000) }
        }
    }

    /// Records `completions` (attempt rows, events moved on while `owner` holds their leases, each finished head's
    /// user moved on to its next event: `bouncer_webhook_complete`) and then leases up to `limit` due events, in one
    /// transaction: one commit per batch. A kill before the commit loses the batch's records, not its events: their
    /// leases end and they go out again with the same ids (at-least-once). `later` are the completions not recorded
    /// because a deriver is writing events for their user right now (it holds the user's lock, which this must not
    /// wait for): record them in a later call, before their leases end.
    public func completeAndClaim(_ completions: [Completion], owner: String, limit: Int, leaseSeconds: Int) throws
        -> (later: [Completion], claimed: [ClaimedEvent])
    {
        try StorageErrors.mapping("complete webhook events") {
            if completions.isEmpty {
                guard limit > 0 else { return ([], []) }
                return ([], try pool.withConnection { connection in
                    try self.claimEvents(owner: owner, limit: limit, leaseSeconds: leaseSeconds, on: connection)
                })
            }
            let record = { (connection: Connection) throws -> [Completion] in
                // On Citus per project: bouncer_webhook_complete locks the events, which Citus does only in a
                // statement routed to one shard (deploy/citus.md).
                guard try self.isCitus(connection) else {
                    return try Self.record(completions, owner: owner, on: connection)
                }
                var later: [Completion] = []
                for project in Set(completions.map(\.event.projectId)) {
                    later += try Self.record(completions.filter { $0.event.projectId == project }, owner: owner,
                                             on: connection)
                }
                return later
            }
            if limit <= 0 { return (try pool.withConnection(record), []) }
            return try pool.transaction { connection in
                let later = try record(connection)
                let claimed = try self.claimEvents(owner: owner, limit: limit, leaseSeconds: leaseSeconds, on: connection)
                return (later, claimed)
            }
        }
    }

    static func record(_ completions: [Completion], owner: String, on connection: Connection) throws
        -> [Completion]
    {
        var projectIds: [String] = [], seqs: [Int64] = [], attempts: [Int64] = [], atUs: [Int64] = []
        var codes: [Int64?] = [], errors: [String?] = [], durations: [Int64] = [], statuses: [String] = []
        var nextUs: [Int64] = []
        for c in completions {
            let code: Int?, error: String?, status: String, next: Date
            switch c.outcome {
            case .delivered(let status_):
                (code, error, status, next) = (status_, nil, "delivered", c.at)
            case .notDelivered(let status_, let reason, let retryAt, let failed):
                (code, error, status, next) = (status_, String(reason.prefix(500)), failed ? "failed" : "pending",
                                               retryAt)
            }
            projectIds.append(c.event.projectId.lowercasedText)
            seqs.append(c.event.seq)
            attempts.append(Int64(c.event.attempt))
            atUs.append(microseconds(c.at))
            codes.append(code.map(Int64.init))
            errors.append(error)
            durations.append(Int64(max(0, c.durationMs)))
            statuses.append(status)
            nextUs.append(microseconds(next))
        }
        let later = try connection.query("""
            SELECT project_id, seq FROM bouncer_webhook_complete(\(owner)::text, \(projectIds)::uuid[], \(seqs)::bigint[],
                \(attempts)::int[], \(atUs)::bigint[], \(codes)::int[], \(errors)::text[], \(durations)::int[],
                \(statuses)::text[], \(nextUs)::bigint[])
            """).map { try $0.decode("seq", as: Int64.self) }
        return later.isEmpty ? [] : completions.filter { later.contains($0.event.seq) }
    }

    /// Microseconds since 1970, clamped to what PostgreSQL's timestamptz holds (dates here come from the clock).
    private static func microseconds(_ date: Date) -> Int64 {
        let us = (date.timeIntervalSince1970 * 1_000_000).rounded()
        guard us.isFinite else { return 0 }
        return Int64(min(max(us, -9.0e15), 9.0e15))
    }

    /// Announces expiries that happened by the passage of time (`bouncer_webhook_sweep`); the users refreshed.
    public func sweep(limit: Int) throws -> Int {
        try StorageErrors.mapping("webhook sweep") {
            try pool.withConnection { connection in
                try connection.query("SELECT bouncer_webhook_sweep(\(limit)::int) AS n").first?.decode("n", as: Int.self) ?? 0
            }
        }
    }

    /// When the earliest pending event is due (for the dispatcher's idle wait), nil when none.
    public func nextDue() throws -> Date? {
        try StorageErrors.mapping("webhook next due") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT min(next_attempt_at) AS due FROM webhook_queue
                    """).first?.decode("due", as: Date?.self)
            }
        }
    }
}
