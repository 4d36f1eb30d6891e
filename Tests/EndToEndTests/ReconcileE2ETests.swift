import Foundation
import JSON
import Postgres
import XCTest

/// Reconciliation against a fake Apple over real TLS (`FakeAppleServer`), with real `bouncer` processes and real
/// PostgreSQL: a refund found by Get All Subscription Statuses, a missed notification recovered from Notification
/// History exactly once, Apple down answering 503 (never a verdict), and two instances sharing one reconciler.
final class ReconcileE2ETests: XCTestCase {
    /// A fake Apple, a database, a server pointed at both, and a project whose credentials Apple accepts.
    struct Setup {
        let connected: AppleConnectedBouncer
        let key: FakeAppleServer.Key
        let db: E2EDatabase
        let server: BouncerProcess
        let api: API
        let tenant: Tenant

        var apple: FakeAppleServer { connected.apple }
        var reconcilePath: String { "/v1/admin/projects/\(tenant.id)/reconcile" }

        func reconcile() throws -> HTTPResponse { try api.client.post(reconcilePath, json: [:], headers: E2E.admin) }

        /// The variables of a `bouncer` process (serve or CLI) for this setup, beyond the test defaults.
        func overrides(_ extra: [String: String?] = [:]) -> [String: String?] { connected.overrides(extra) }

        /// The whole environment of a CLI run for this setup.
        func environment(_ extra: [String: String?] = [:]) -> [String: String] {
            BouncerProcess.environment(databaseURL: db.url, overrides: overrides(extra))
        }
    }

    func makeSetup(label: String, serverOverrides: [String: String?] = [:], credentials: Bool = true) throws -> Setup {
        let connected = try AppleConnectedBouncer(
            label: label, overrides: ["BOUNCER_RECONCILE_INTERVAL_SECONDS": "0"].merging(serverOverrides) { $1 })
        let server = try connected.server
        let api = API(client: server.client)
        let (tenant, key) = try connected.createProject(
            api: api, products: [("com.e2e.pro.monthly", ["pro"]), ("com.e2e.lifetime", ["lifetime"])],
            credentials: credentials)
        return Setup(connected: connected, key: key, db: try connected.db, server: server, api: api, tenant: tenant)
    }

    /// An active Sandbox subscription posted by `user`; Apple's renewal info for it.
    func activeSubscription(_ s: Setup, user: String) throws -> (TransactionPayload, RenewalPayload) {
        let transaction = TransactionPayload(bundleId: s.tenant.bundleId)
        let r = try s.api.postReceipt(s.tenant.publicKey, try transaction.mint(), user: user)
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try s.api.user(s.tenant.publicKey, user).json()["status"], "active")
        return (transaction, RenewalPayload(originalTransactionId: transaction.originalTransactionId))
    }

    /// `user`'s active subscription, which Apple's current status (5, Sandbox) says was refunded 30 s ago.
    func refundedAtApple(_ s: Setup, user: String) throws
        -> (bought: TransactionPayload, refunded: TransactionPayload, renewal: RenewalPayload)
    {
        let (bought, renewal) = try activeSubscription(s, user: user)
        var refunded = bought
        refunded.revocationDate = E2E.ms(-30)
        refunded.signedDate = E2E.ms(0)
        s.apple.setSubscriptionStatuses(bought.originalTransactionId, groups: [try group(refunded, renewal, status: 5)],
                                        environment: .sandbox)
        return (bought, refunded, renewal)
    }

    func group(_ transaction: TransactionPayload, _ renewal: RenewalPayload, status: Int) throws
        -> FakeAppleServer.SubscriptionGroup
    {
        FakeAppleServer.SubscriptionGroup(identifier: "21000000", lastTransactions: [.init(
            status: status, originalTransactionId: transaction.originalTransactionId,
            signedTransactionInfo: try transaction.mint(), signedRenewalInfo: try E2E.mint(renewal.json))])
    }

    func string(_ db: E2EDatabase, _ query: Query, _ column: String) throws -> String? {
        try db.query(query).first?.decode(column, as: String?.self)
    }

    // MARK: - Tests

    func testRefundedSubscriptionIsFoundByReconciliation() throws {
        let s = try makeSetup(label: "reconcile_refund")
        defer { s.server.stopAndAssertCleanExit() }
        let (bought, renewal) = try activeSubscription(s, user: "alice")
        // Apple refunded it; the REFUND notification never arrived. Apple's current statement is newer.
        var refunded = bought
        refunded.revocationDate = E2E.ms(-30)
        refunded.revocationReason = 0
        refunded.signedDate = E2E.ms(0)
        var turnedOff = renewal
        turnedOff.autoRenewStatus = 0
        s.apple.setSubscriptionStatuses(bought.originalTransactionId, groups: [try group(refunded, turnedOff, status: 5)],
                                        environment: .sandbox)

        let r = try s.reconcile()
        XCTAssertEqual(r.status, 200, r.description)
        let body = try r.json()
        XCTAssertEqual(body["checked"], 1)
        XCTAssertEqual(body["changed"], 1)
        XCTAssertEqual(body["notifications_applied"], 0)
        XCTAssertEqual(body["errors"], [])
        XCTAssertEqual(body["outcome"], "completed")
        XCTAssertEqual(body["trigger"], "admin")
        XCTAssertEqual(body["apple_calls"], 4, "one status call, one history page per environment, one refund history page")

        // The customer's answer changed, and so did the stored facts, marked as written by reconciliation.
        let user = try s.api.user(s.tenant.publicKey, "alice").json()
        XCTAssertEqual(user["status"], "revoked")
        XCTAssertEqual(user["entitlements"], [])
        XCTAssertEqual(try string(s.db, """
            SELECT source FROM transactions WHERE project_id = \(s.tenant.id)::uuid AND transaction_id = \(bought.transactionId)
            """, "source"), "reconcile")
        let change = try XCTUnwrap(s.db.query("""
            SELECT via, source, before_status, after_status, original_transaction_id, after_revocation_date IS NOT NULL AS refunded
            FROM reconcile_changes WHERE project_id = \(s.tenant.id)::uuid
            """).first)
        XCTAssertEqual(try change.decode("via", as: String.self), "subscription_status")
        XCTAssertEqual(try change.decode("source", as: String.self), "reconcile")
        XCTAssertEqual(try change.decode("before_status", as: String.self), "active")
        XCTAssertEqual(try change.decode("after_status", as: String.self), "revoked")
        XCTAssertEqual(try change.decode("original_transaction_id", as: String.self), bought.originalTransactionId)
        XCTAssertEqual(try change.decode("refunded", as: Bool.self), true)
        XCTAssertEqual(try s.db.count("reconcile_changes", project: s.tenant.id), 1)

        // Apple was asked as Apple requires: our JWT accepted, the purchase's environment, its original id.
        let asked = s.apple.requests.filter { $0.endpoint == .subscriptionStatuses }
        XCTAssertEqual(asked.map(\.id), [bought.originalTransactionId])
        XCTAssertEqual(asked.map(\.environment), [.sandbox])
        XCTAssertEqual(s.apple.requests.compactMap(\.jwtProblem), [])

        // The operator sees what the catch-up fixed.
        let runs = try s.api.client.get("/v1/admin/projects/\(s.tenant.id)/reconcile/runs", headers: E2E.admin)
        XCTAssertEqual(runs.status, 200, runs.description)
        let run = try XCTUnwrap(try runs.json()["runs"]?[0])
        XCTAssertEqual(run["run_id"], body["run_id"])
        XCTAssertEqual(run["changes"]?[0]?["before_status"], "active")
        XCTAssertEqual(run["changes"]?[0]?["after_status"], "revoked")
        XCTAssertEqual(run["changes"]?[0]?["source"], "reconcile")
        XCTAssertEqual(run["changes"]?[0]?["via"], "subscription_status")

        // Again: Apple says the same, nothing changes.
        let again = try s.reconcile().json()
        XCTAssertEqual(again["checked"], 1)
        XCTAssertEqual(again["changed"], 0)
        XCTAssertEqual(try s.db.count("reconcile_changes", project: s.tenant.id), 1)
        XCTAssertEqual(try s.db.count("reconcile_runs", project: s.tenant.id), 2)
    }

    /// A non-consumable of the setup's project ("com.e2e.lifetime", entitlement lifetime).
    func nonConsumable(_ s: Setup) -> TransactionPayload {
        var lifetime = TransactionPayload(bundleId: s.tenant.bundleId)
        lifetime.type = "Non-Consumable"
        lifetime.productId = "com.e2e.lifetime"
        lifetime.expiresDate = nil
        return lifetime
    }

    func testRefundOfANonConsumableIsFoundWithTransactionInfo() throws {
        let s = try makeSetup(label: "reconcile_lifetime")
        defer { s.server.stopAndAssertCleanExit() }
        let lifetime = nonConsumable(s)
        XCTAssertEqual(try s.api.postReceipt(s.tenant.publicKey, try lifetime.mint(), user: "bob").status, 201)
        var refunded = lifetime
        refunded.revocationDate = E2E.ms(-10)
        refunded.signedDate = E2E.ms(0)
        s.apple.setTransaction(lifetime.transactionId, signed: try refunded.mint(), environment: .sandbox)

        let body = try s.reconcile().json()
        XCTAssertEqual(body["checked"], 1)
        XCTAssertEqual(body["changed"], 1)
        XCTAssertEqual(try s.api.user(s.tenant.publicKey, "bob").json()["status"], "revoked")
        XCTAssertEqual(s.apple.requests.filter { $0.endpoint == .transactionInfo }.map(\.id), [lifetime.transactionId])
        // Revoked purchases are not asked about again.
        XCTAssertEqual(try s.reconcile().json()["checked"], 0)
    }

    func testMissedNotificationIsRecoveredFromHistoryExactlyOnce() throws {
        let s = try makeSetup(label: "reconcile_history")
        defer { s.server.stopAndAssertCleanExit() }
        let (bought, renewal) = try activeSubscription(s, user: "carol")
        // Apple's status call repeats what we know (signed earlier): no change from it.
        s.apple.setSubscriptionStatuses(bought.originalTransactionId, groups: [try group(bought, renewal, status: 1)],
                                        environment: .sandbox)
        // One notification was delivered; the REFUND was lost. History lists both, on two pages.
        let delivered = NotificationPayload("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", bundleId: s.tenant.bundleId,
                                            transaction: bought, renewal: renewal, signedDate: E2E.ms(-20))
        let deliveredJWS = try delivered.mint()
        XCTAssertEqual(try s.api.notify(s.tenant.publicKey, deliveredJWS).status, 200)
        var refunded = bought
        refunded.revocationDate = E2E.ms(-1)
        refunded.revocationReason = 1
        refunded.signedDate = E2E.ms(0)
        let missed = NotificationPayload("REFUND", bundleId: s.tenant.bundleId, transaction: refunded, signedDate: E2E.ms(0))
        let missedJWS = try missed.mint()
        s.apple.setNotificationHistory(pages: [[deliveredJWS], [missedJWS]], environment: .sandbox)

        let first = try s.reconcile()
        XCTAssertEqual(first.status, 200, first.description)
        let body = try first.json()
        XCTAssertEqual(body["notifications_applied"], 1, "only the missed one is new: \(body)")
        XCTAssertEqual(body["changed"], 1)
        XCTAssertEqual(body["errors"], [])
        XCTAssertEqual(try s.api.user(s.tenant.publicKey, "carol").json()["status"], "revoked")
        XCTAssertEqual(try s.db.count("notifications", project: s.tenant.id), 2)
        XCTAssertEqual(try string(s.db, """
            SELECT source FROM notifications WHERE project_id = \(s.tenant.id)::uuid AND notification_uuid = \(missed.uuid)::uuid
            """, "source"), "reconcile")
        XCTAssertEqual(try string(s.db, """
            SELECT source FROM notifications WHERE project_id = \(s.tenant.id)::uuid AND notification_uuid = \(delivered.uuid)::uuid
            """, "source"), "notification")
        let change = try XCTUnwrap(s.db.query("""
            SELECT via, notification_uuid::text AS uuid, notification_type, before_status, after_status
            FROM reconcile_changes WHERE project_id = \(s.tenant.id)::uuid
            """).first)
        XCTAssertEqual(try change.decode("via", as: String.self), "notification_history")
        XCTAssertEqual(try change.decode("uuid", as: String.self), missed.uuid)
        XCTAssertEqual(try change.decode("notification_type", as: String.self), "REFUND")
        XCTAssertEqual(try change.decode("before_status", as: String.self), "active")
        XCTAssertEqual(try change.decode("after_status", as: String.self), "revoked")
        // Both pages were read (the second with the first's token), in the environment of the data.
        let pages = s.apple.requests.filter { $0.endpoint == .notificationHistory && $0.environment == .sandbox }
        XCTAssertEqual(pages.map { $0.query.first { $0.name == "paginationToken" }?.value }, [nil, "page-1"])
        let firstStart = try XCTUnwrap(pages[0].jsonBody?["startDate"]?.int64Value)
        XCTAssertLessThan(firstStart, E2E.ms(-179 * 86_400), "the first pass reads Apple's 180 days")

        // Apple (or a second run) listing it again applies nothing: deduplicated by notificationUUID.
        let second = try s.reconcile().json()
        XCTAssertEqual(second["notifications_applied"], 0)
        XCTAssertEqual(second["changed"], 0)
        XCTAssertEqual(try s.db.count("notifications", project: s.tenant.id), 2)
        XCTAssertEqual(try s.db.count("reconcile_changes", project: s.tenant.id), 1)
        // The second pass starts from the first one's end (less the overlap), not 180 days back.
        let later = s.apple.requests.filter { $0.endpoint == .notificationHistory && $0.environment == .sandbox }
        let secondStart = try XCTUnwrap(later[2].jsonBody?["startDate"]?.int64Value)
        XCTAssertGreaterThan(secondStart, E2E.ms(-2 * 3_600))
        // A late webhook delivery of the recovered notification is a duplicate too.
        let late = try s.api.notify(s.tenant.publicKey, missedJWS)
        XCTAssertEqual(late.status, 200)
        XCTAssertEqual(try late.json()["status"], "duplicate")
    }

    func testAppleDownGives503NotAWrongAnswer() throws {
        let s = try makeSetup(label: "reconcile_down")
        defer { s.server.stopAndAssertCleanExit() }
        let (bought, refunded, renewal) = try refundedAtApple(s, user: "dave")

        // Apple keeps failing: 503 with Retry-After, the purchase untouched, the run recorded as failed.
        s.apple.inject(.serverError(status: 503), times: nil)
        let down = try s.reconcile()
        assertError(down, 503, "APPLE_UNAVAILABLE")
        XCTAssertNotNil(down.header("Retry-After"), down.description)
        XCTAssertEqual(try s.api.user(s.tenant.publicKey, "dave").json()["status"], "active")
        XCTAssertEqual(try string(s.db, "SELECT outcome FROM reconcile_runs WHERE project_id = \(s.tenant.id)::uuid",
                                  "outcome"), "failed")

        // Apple says it does not know the transaction: noted, never a refund.
        s.apple.clearFailures()
        s.apple.inject(.notFound(), on: .subscriptionStatuses, times: 1)
        let notFound = try s.reconcile()
        XCTAssertEqual(notFound.status, 200, notFound.description)
        let body = try notFound.json()
        XCTAssertEqual(body["checked"], 0)
        XCTAssertEqual(body["changed"], 0)
        XCTAssertEqual(body["outcome"], "partial")
        XCTAssertEqual(body["errors"]?[0]?["stage"], "subscription_status")
        XCTAssertEqual(body["errors"]?[0]?["original_transaction_id"], .string(bought.originalTransactionId))
        XCTAssertEqual(try s.api.user(s.tenant.publicKey, "dave").json()["status"], "active")

        // Apple refuses our key: 502 with what to check.
        s.apple.inject(.unauthorized, times: nil)
        assertError(try s.reconcile(), 502, "APP_STORE_AUTH_FAILED")
        XCTAssertEqual(try s.api.user(s.tenant.publicKey, "dave").json()["status"], "active")

        // A signed answer that does not verify is never applied.
        s.apple.clearFailures()
        s.apple.setSubscriptionStatuses(bought.originalTransactionId, groups: [FakeAppleServer.SubscriptionGroup(
            identifier: "21000000", lastTransactions: [.init(
                status: 5, originalTransactionId: bought.originalTransactionId,
                signedTransactionInfo: try FakeAppleServer.forge(refunded.json.serializedString()),
                signedRenewalInfo: try E2E.mint(renewal.json))])], environment: .sandbox)
        let forged = try s.reconcile().json()
        XCTAssertEqual(forged["changed"], 0)
        XCTAssertEqual(forged["errors"]?[0]?["stage"], "subscription_status")
        XCTAssertEqual(try s.api.user(s.tenant.publicKey, "dave").json()["status"], "active")
    }

    func testOnDemandErrors() throws {
        let s = try makeSetup(label: "reconcile_errors", credentials: false)
        defer { s.server.stopAndAssertCleanExit() }
        assertError(try s.reconcile(), 400, "APP_STORE_CREDENTIALS_MISSING")
        assertError(try s.api.client.post("/v1/admin/projects/\(UUID().uuidString.lowercased())/reconcile", json: [:],
                                          headers: E2E.admin), 404, "PROJECT_NOT_FOUND")
        assertError(try s.api.client.post(s.reconcilePath, json: [:]), 401, "AUTH_INVALID_ADMIN_TOKEN")
        XCTAssertEqual(s.apple.requests.count, 0)

        // While another run holds the project (here: the test holds its lock), on demand answers 409.
        try s.api.storeCredentials(s.tenant, s.key)
        let holder = try Connection(settings: s.db.settings)
        XCTAssertEqual(try holder.query("SELECT pg_try_advisory_lock(16979, hashtext(\(s.tenant.id))) AS ok").first?
            .decode("ok", as: Bool.self), true)
        assertError(try s.reconcile(), 409, "RECONCILE_IN_PROGRESS")
        XCTAssertEqual(try s.db.count("reconcile_runs", project: s.tenant.id), 0)
        _ = try holder.query("SELECT pg_advisory_unlock(16979, hashtext(\(s.tenant.id)))")
        XCTAssertEqual(try s.reconcile().status, 200)
    }

    func testCLIReconcilesWithProgress() throws {
        let s = try makeSetup(label: "reconcile_cli")
        defer { s.server.stopAndAssertCleanExit() }
        let bought = try refundedAtApple(s, user: "erin").bought
        let run = try CLIRun.run(["reconcile", "--project", s.tenant.id], environment: s.environment())
        XCTAssertEqual(run.status, 0, run.stderr)
        let json = try JSONParser.parse(Array(run.stdout.utf8))
        XCTAssertEqual(json["checked"], 1)
        XCTAssertEqual(json["changed"], 1)
        XCTAssertEqual(json["trigger"], "cli")
        XCTAssertTrue(run.stderr.contains("project \(s.tenant.id): Sandbox \(bought.originalTransactionId): active -> revoked"),
                      run.stderr)
        XCTAssertFalse(run.stderr.contains(s.key.privateKeyPEM.split(separator: "\n")[1]), "no key material in the output")
        // The CLI announced the change: the server's read cache forgets erin's answer.
        XCTAssertTrue(try E2E.eventually { try s.api.user(s.tenant.publicKey, "erin").json()["status"] == "revoked" })
        let bad = try CLIRun.run(["reconcile", "--project", "nope"], environment: s.environment())
        XCTAssertEqual(bad.status, 2)
    }

    func testRateBudgetLeavesTheRestForTheNextRun() throws {
        let s = try makeSetup(label: "reconcile_budget", serverOverrides: ["BOUNCER_RECONCILE_MAX_CALLS": "4"])
        defer { s.server.stopAndAssertCleanExit() }
        // Four subscriptions of four customers; 4 calls per run with 1 kept per environment for history: 2 checks.
        var originals: [String] = []
        for i in 0..<4 {
            let (bought, renewal) = try activeSubscription(s, user: "user\(i)")
            s.apple.setSubscriptionStatuses(bought.originalTransactionId, groups: [try group(bought, renewal, status: 1)],
                                            environment: .sandbox)
            originals.append(bought.originalTransactionId)
        }
        let first = try s.reconcile().json()
        XCTAssertEqual(first["checked"], 2)
        XCTAssertEqual(first["skipped"], 2)
        XCTAssertEqual(first["outcome"], "partial")
        XCTAssertEqual(first["apple_calls"], 4)
        let second = try s.reconcile().json()
        XCTAssertEqual(second["checked"], 2)
        // Between them, every subscription was asked about exactly once.
        let asked = s.apple.requests.filter { $0.endpoint == .subscriptionStatuses }.compactMap(\.id)
        XCTAssertEqual(asked.sorted(), originals.sorted())
    }

    func testTwoInstancesOneReconciler() throws {
        let s = try makeSetup(label: "reconcile_two")
        // Three customers, paced at 3 calls a second: a run (5 calls) takes longer than the 1 s interval, so without
        // the lock the other instance's scheduler would start the next run while this one is still going.
        for i in 0..<3 {
            let (bought, renewal) = try activeSubscription(s, user: "two\(i)")
            s.apple.setSubscriptionStatuses(bought.originalTransactionId, groups: [try group(bought, renewal, status: 1)],
                                            environment: .sandbox)
        }
        s.server.stopAndAssertCleanExit()
        let scheduled: [String: String?] = ["BOUNCER_RECONCILE_INTERVAL_SECONDS": "1", "BOUNCER_RECONCILE_CALLS_PER_SECOND": "3"]
        let one = try s.connected.startServer(on: s.db, scheduled)
        let two = try s.connected.startServer(on: s.db, scheduled)
        let finished = { () throws -> Int in
            Int(try s.db.query("""
                SELECT count(*)::int8 AS n FROM reconcile_runs
                WHERE project_id = \(s.tenant.id)::uuid AND outcome <> 'running'
                """).first?.decode("n", as: Int64.self) ?? 0)
        }
        let deadline = Date().addingTimeInterval(40)
        while try finished() < 4, Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        one.stopAndAssertCleanExit()
        two.stopAndAssertCleanExit()

        let runs = try s.db.query("""
            SELECT started_at, finished_at, trigger, outcome, apple_calls::int8 AS calls, instance FROM reconcile_runs
            WHERE project_id = \(s.tenant.id)::uuid ORDER BY started_at
            """)
        XCTAssertGreaterThanOrEqual(runs.count, 4)
        var previousEnd: Date?
        var previousStart: Date?
        var instances: Set<String> = []
        var calls: Int64 = 0
        for row in runs {
            XCTAssertEqual(try row.decode("trigger", as: String.self), "schedule")
            // Completed, or (the run a shutdown interrupted) partial: never left running, never failed. A completed
            // run asks Apple 3 refund history pages + 3 statuses + 2 history pages; an interrupted one at most that,
            // none when the shutdown came before its first call.
            let outcome = try row.decode("outcome", as: String.self)
            XCTAssertTrue(["completed", "partial"].contains(outcome))
            let runCalls = try row.decode("calls", as: Int64.self)
            if outcome == "completed" { XCTAssertEqual(runCalls, 8) } else { XCTAssertLessThanOrEqual(runCalls, 8) }
            let start = try row.decode("started_at", as: Date.self)
            let end = try XCTUnwrap(try row.decode("finished_at", as: Date?.self))
            if let previousEnd { XCTAssertGreaterThanOrEqual(start, previousEnd, "runs of a project never overlap") }
            // Two schedulers, one run per interval: each run started at least the interval after the previous one.
            if let previousStart { XCTAssertGreaterThanOrEqual(start.timeIntervalSince(previousStart), 1) }
            previousEnd = end
            previousStart = start
            calls += runCalls
            instances.insert(try row.decode("instance", as: String.self))
        }
        XCTAssertLessThanOrEqual(instances.count, 2)
        // Every call Apple received belongs to exactly one recorded run.
        XCTAssertEqual(Int64(s.apple.requests.count), calls)
    }
}
