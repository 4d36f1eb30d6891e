import Domain
import Foundation
import Postgres
import Specification
@testable import Storage
import XCTest

/// Every rule stated in both languages, run in both on the same table of cases (issue 22: one author per rule).
///
/// - Status at an instant: `StatusRules.evaluate` (Swift, live: GET answers, tokens, the timeline) against
///   `bouncer_purchase_status`, `bouncer_purchase_access_end` and the `auto_renew_enabled` of
///   `bouncer_webhook_purchase_data` (SQL, live: webhook events), both reading the same stored `purchases` row, and
///   the status of the deriver's copy of it (`bouncer_webhook_state` over `bouncer_change_snapshot`).
/// - How a purchase changes: the executable specification `PurchaseState.applying` (Tests/Specification) against
///   `bouncer_record_transaction` / `bouncer_record_renewal` (SQL, the live author).
/// - Who holds a purchase: the specification `OwnershipRules.decide` against `bouncer_record_transaction`'s binding
///   step, for every transfer policy × holder situation.
/// - Why a revocation ended access: `RevocationKind` (Swift: the timeline, the status reason) against
///   `bouncer_revocation_kind` (SQL: webhook events, the refund defense), for every reason × type.
/// `WriteRulesOracleTests` adds random sequences of the write rules; these tables name the boundaries.
final class RuleTableTests: XCTestCase {
    private var s: TestStores!
    private var project: Project!

    override func setUpWithError() throws {
        s = try TestStores.make(label: "rules", poolSize: 2)
        project = try s.makeProject(policy: .share)
        for product in ["pro.monthly", "lifetime", "season.pass"] {
            _ = try s.projects.setProduct(
                projectId: project.id, ProductMapping(productId: product, entitlements: ["pro"]), now: Fixtures.t0)
        }
    }

    override func tearDown() {
        s?.close()
    }

    /// The stored purchase, as Swift reads it (`PurchaseRows`), and SQL's status, access end and auto-renew flag for it
    /// at `instants`.
    private func stored(_ original: String, environment: StoreEnvironment = .production, at instants: [Date]) throws
        -> (state: PurchaseState, sql: [(status: String, copyStatus: String, ends: Date?, autoRenew: Bool)])?
    {
        var state: PurchaseState?
        var sql: [(String, String, Date?, Bool)] = []
        for instant in instants.isEmpty ? [Fixtures.t0] : instants {
            let rows = try s.rows("""
                SELECT \(unsafeSQL: PurchaseRows.columns), bouncer_purchase_status(p, \(instant)) AS sql_status,
                    bouncer_purchase_access_end(p) AS sql_ends,
                    (bouncer_webhook_state(p.project_id, 'u', to_jsonb(bouncer_change_snapshot(p)) || jsonb_build_object(
                        'environment', p.environment, 'original_transaction_id', p.original_transaction_id),
                        \(instant))).status AS copy_status,
                    (bouncer_webhook_purchase_data(p) ->> 'auto_renew_enabled')::boolean AS sql_auto_renew
                FROM purchases p
                WHERE p.project_id = \(project.id) AND p.environment = \(environment.rawValue)
                  AND p.original_transaction_id = \(original)
                """)
            guard let row = rows.first else { return nil }
            state = try PurchaseRows.state(from: row)
            sql.append((try row.decode("sql_status", as: String.self), try row.decode("copy_status", as: String.self),
                        try row.decode("sql_ends", as: Date?.self), try row.decode("sql_auto_renew", as: Bool.self)))
        }
        return state.map { ($0, sql) }
    }

    // MARK: - Status at an instant

    /// One purchase per row, recorded through the store; both languages evaluate the stored row at every boundary the
    /// row's dates make (each date, one second before and one after).
    func testStatusAtAnInstantIsTheSameInSwiftAndSQL() throws {
        let sub = { (id: String, revoked: Double?) in Fixtures.monthly(id, original: id, start: 0, revokedAt: revoked) }
        var prorated = sub("prorated", 3)
        prorated.revocationType = .refundProrated
        prorated.revocationPercentage = 50_000
        var family = sub("family", 3)
        family.revocationType = .familyRevoke
        family.revocationReason = nil
        var lifetimeRevoked = Fixtures.lifetime("lifetime-revoked")
        lifetimeRevoked.revocationDate = Fixtures.at(2)
        var seasonPass = Fixtures.monthly("season", original: "season", product: "season.pass", start: 0)
        seasonPass.type = .nonRenewing
        // (name, transaction, renewal info) — expires at day 30 unless said otherwise.
        let rows: [(String, TransactionFacts, RenewalFacts?, UInt)] = [
            ("no renewal info: auto-renew assumed", sub("plain", nil), nil, #line),
            ("auto-renew off", sub("off", nil), Fixtures.renewal(original: "off", signed: 1, autoRenew: 0), #line),
            ("grace after expiry", sub("grace", nil),
             Fixtures.renewal(original: "grace", signed: 30, grace: 36, retry: true), #line),
            ("grace equal to expiry", sub("grace-equal", nil),
             Fixtures.renewal(original: "grace-equal", signed: 30, grace: 30, retry: true), #line),
            ("stale grace before expiry", sub("grace-stale", nil),
             Fixtures.renewal(original: "grace-stale", signed: 1, grace: 10), #line),
            ("billing retry without grace", sub("retry", nil),
             Fixtures.renewal(original: "retry", signed: 30, retry: true), #line),
            ("revoked during the period, grace after", sub("revoked", 3),
             Fixtures.renewal(original: "revoked", signed: 30, grace: 36), #line),
            ("partial refund keeps access", prorated, nil, #line),
            ("family revoke", family, nil, #line),
            ("lifetime: no expiry", Fixtures.lifetime("lifetime"), nil, #line),
            ("lifetime revoked", lifetimeRevoked, nil, #line),
            ("non-renewing subscription ignores grace", seasonPass,
             Fixtures.renewal(original: "season", signed: 30, grace: 36), #line),
        ]
        var compared = 0
        for (name, transaction, renewal, line) in rows {
            _ = try s.purchases.recordTransaction(transaction, userId: nil, deviceId: nil, project: project, now: Fixtures.t0)
            if let renewal { _ = try s.purchases.recordRenewal(renewal, project: project, now: Fixtures.t0) }
            let dates = [transaction.purchaseDate, transaction.expiresDate, transaction.revocationDate,
                         renewal?.gracePeriodExpiresDate].compactMap { $0 }
            let instants = Set(dates.flatMap { [$0.addingTimeInterval(-1), $0, $0.addingTimeInterval(1)] }).sorted()
            let (state, sql) = try XCTUnwrap(try stored(transaction.originalTransactionId, at: instants), name)
            for (instant, answer) in zip(instants, sql) {
                let swift = StatusRules.evaluate(state, at: instant)
                let context = "\(name) at \(instant)"
                XCTAssertEqual(answer.status, swift.status.rawValue, context, line: line)
                XCTAssertEqual(answer.copyStatus, swift.status.rawValue, "\(context): the webhook copy", line: line)
                // The access end is SQL's answer for a purchase that is not revoked (a revoked one has no end to
                // announce: its access ended at the revocation, which is Swift's accessEndsAt).
                if swift.status != .revoked {
                    XCTAssertEqual(answer.ends, swift.accessEndsAt, context, line: line)
                    XCTAssertEqual(answer.autoRenew, swift.autoRenewEnabled, context, line: line)
                }
                compared += 1
            }
        }
        XCTAssertGreaterThanOrEqual(compared, rows.count * 3)
    }

    // MARK: - How a purchase changes

    /// A fact to record: a transaction or renewal info.
    private enum Fact {
        case transaction(TransactionFacts)
        case renewal(RenewalFacts)
    }

    /// Each row is a sequence of facts about one purchase; the specification and the database see the same sequence,
    /// and after every fact the purchase each returns, and the stored row, are the same.
    func testPurchaseTransitionsAreTheSameInTheSpecificationAndSQL() throws {
        func t(_ id: String, _ o: String, start: Double, signed: Double? = nil, revoked: Double? = nil,
               environment: StoreEnvironment = .production) -> Fact {
            .transaction(Fixtures.monthly(id, original: o, start: start, signed: signed, revokedAt: revoked,
                                          environment: environment))
        }
        func r(_ o: String, signed: Double, autoRenew: Int = 1) -> Fact {
            .renewal(Fixtures.renewal(original: o, signed: signed, autoRenew: autoRenew))
        }
        var prorated = Fixtures.monthly("p2", original: "p", start: 0, signed: 5, revokedAt: 4)
        prorated.revocationType = .refundProrated
        let rows: [(String, [Fact], UInt)] = [
            ("a renewal starts later", [t("a1", "a", start: 0), t("a2", "a", start: 30)], #line),
            ("an older renewal arrives late", [t("b2", "b", start: 30), t("b1", "b", start: 0)], #line),
            ("the same transaction signed later: refund", [t("c1", "c", start: 0), t("c1", "c", start: 0, signed: 3,
                                                                                     revoked: 2)], #line),
            ("refund reversed", [t("d1", "d", start: 0, signed: 3, revoked: 2), t("d1", "d", start: 0, signed: 4)], #line),
            ("a stale copy of the refund", [t("e1", "e", start: 0, signed: 4), t("e1", "e", start: 0, signed: 3,
                                                                                  revoked: 2)], #line),
            ("the same statement twice", [t("f1", "f", start: 0), t("f1", "f", start: 0)], #line),
            ("tied start, later signature wins", [t("g1", "g", start: 0, signed: 1), t("g2", "g", start: 0, signed: 2)],
             #line),
            ("tied start, earlier signature loses", [t("h1", "h", start: 0, signed: 2), t("h2", "h", start: 0, signed: 1)],
             #line),
            ("tied start and signature, larger id wins", [t("i1", "i", start: 0), t("i2", "i", start: 0)], #line),
            ("tied start and signature, smaller id loses", [t("j2", "j", start: 0), t("j1", "j", start: 0)], #line),
            ("another environment is another purchase",
             [t("k1", "k", start: 0), t("k2", "k", start: 30, environment: .sandbox)], #line),
            ("a partial refund keeps access", [t("p1", "p", start: 0), .transaction(prorated)], #line),
            ("renewal info, newer then older then equal",
             [t("l1", "l", start: 0), r("l", signed: 2), r("l", signed: 1, autoRenew: 0), r("l", signed: 2, autoRenew: 0)],
             #line),
            ("renewal info before the purchase: the newest pending one is adopted",
             [r("m", signed: 2), r("m", signed: 1, autoRenew: 0), t("m1", "m", start: 0)], #line),
            ("pending renewal info older than what follows", [r("n", signed: 1), t("n1", "n", start: 0), r("n", signed: 3,
                                                                                                              autoRenew: 0)],
             #line),
            ("a renewal keeps the renewal info", [t("q1", "q", start: 0), r("q", signed: 1, autoRenew: 0),
                                                  t("q2", "q", start: 30)], #line),
        ]
        for (name, facts, line) in rows {
            // The specification's state per environment, and renewal info waiting for its purchase.
            var model: [StoreEnvironment: PurchaseState] = [:]
            var pending: RenewalFacts?
            for (step, fact) in facts.enumerated() {
                let context = "\(name), fact \(step)"
                switch fact {
                case .transaction(let transaction):
                    let expected: PurchaseState
                    if let known = model[transaction.environment] {
                        expected = known.applying(transaction) ?? known
                    } else {
                        var created = PurchaseState(first: transaction)
                        if let waiting = pending, waiting.environment == transaction.environment {
                            created = created.applying(waiting) ?? created
                            pending = nil
                        }
                        expected = created
                    }
                    model[transaction.environment] = expected
                    let recorded = try s.purchases.recordTransaction(
                        transaction, userId: nil, deviceId: nil, project: project, now: Fixtures.t0)
                    XCTAssertEqual(recorded.purchase, expected, context, line: line)
                case .renewal(let renewal):
                    let outcome = try s.purchases.recordRenewal(renewal, project: project, now: Fixtures.t0)
                    if let known = model[renewal.environment] {
                        if let next = known.applying(renewal) {
                            model[renewal.environment] = next
                            XCTAssertEqual(outcome, .applied(next), context, line: line)
                        } else {
                            XCTAssertEqual(outcome, .unchanged(known), context, line: line)
                        }
                    } else {
                        if pending.map({ renewal.signedDate > $0.signedDate }) ?? true { pending = renewal }
                        XCTAssertEqual(outcome, .pending, context, line: line)
                    }
                }
                for (environment, expected) in model {
                    let row = try stored(expected.originalTransactionId, environment: environment, at: [])
                    XCTAssertEqual(row?.state, expected, "\(context): the stored row", line: line)
                }
            }
        }
    }

    // MARK: - Who holds a purchase

    /// Every transfer policy × holder situation: the decision the specification makes, and the holders it leaves,
    /// are the decision the database returns (or its refusal) and the rows it leaves.
    func testOwnershipIsTheSameInTheSpecificationAndSQL() throws {
        // The poster is always "u"; holders in binding order.
        let situations: [[String]] = [[], ["u"], ["o"], ["u", "o"], ["o", "u"], ["o", "o2"]]
        let policies: [TransferPolicy] = [.transfer, .share, .block]
        var n = 0
        for holders in situations {
            for policy in policies {
                n += 1
                let original = "own\(n)"
                let context = "holders \(holders), policy \(policy)"
                var binding = project!
                binding.transferPolicy = .share
                for (i, holder) in holders.enumerated() {
                    _ = try s.purchases.recordTransaction(
                        Fixtures.monthly("\(original)-1", original: original, start: 0), userId: holder, deviceId: nil,
                        project: binding, now: Fixtures.t0.addingTimeInterval(Double(i)))
                }
                let expected = OwnershipRules.decide(currentOwners: holders, user: "u", policy: policy)
                var posting = project!
                posting.transferPolicy = policy
                let post = { try self.s.purchases.recordTransaction(
                    Fixtures.monthly("\(original)-2", original: original, start: 30), userId: "u", deviceId: nil,
                    project: posting, now: Fixtures.t0.addingTimeInterval(100)) }
                let after: [String]
                switch expected {
                case .block:
                    assertDomainError(.purchaseOwnedByAnotherUser) { try post() }
                    after = holders
                case .transfer(let previous):
                    XCTAssertEqual(try post().ownership, expected, context)
                    after = holders.filter { !previous.contains($0) } + (holders.contains("u") ? [] : ["u"])
                case .bind, .share:
                    XCTAssertEqual(try post().ownership, expected, context)
                    after = holders + ["u"]
                case .alreadyOwned:
                    XCTAssertEqual(try post().ownership, expected, context)
                    after = holders
                }
                let rows = try s.rows("""
                    SELECT user_id FROM subscriptions
                    WHERE project_id = \(project.id) AND original_transaction_id = \(original) AND revoked_at IS NULL
                    ORDER BY bound_at, user_id COLLATE "C"
                    """).map { try $0.decode("user_id", as: String.self) }
                XCTAssertEqual(rows, after, context)
                let moves = try s.rows("""
                    SELECT from_user_id || '→' || to_user_id AS move FROM ownership_events
                    WHERE project_id = \(project.id) AND original_transaction_id = \(original) ORDER BY id
                    """).map { try $0.decode("move", as: String.self) }
                if case .transfer(let previous) = expected {
                    XCTAssertEqual(moves, previous.sorted().map { "\($0)→u" }, context)
                } else {
                    XCTAssertEqual(moves, [], context)
                }
            }
        }
        // Without a user there is no decision, under every policy.
        for policy in policies {
            var posting = project!
            posting.transferPolicy = policy
            let recorded = try s.purchases.recordTransaction(
                Fixtures.monthly("anon-\(policy)", original: "anon-\(policy)", start: 0), userId: nil, deviceId: nil,
                project: posting, now: Fixtures.t0)
            XCTAssertNil(recorded.ownership, "\(policy)")
        }
    }

    func testRevocationKindIsTheSameInSwiftAndSQL() throws {
        let reasons: [Int?] = [nil, 0, 1, 7]
        let types: [RevocationType?] = [nil, .refundFull, .refundProrated, .familyRevoke, RevocationType(rawValue: "NEW_KIND")]
        var table: [String] = []
        for reason in reasons {
            for type in types {
                let rows = try s.rows("SELECT bouncer_revocation_kind(\(reason)::int, \(type?.rawValue)::text) AS kind")
                let sql = try XCTUnwrap(rows.first).decode("kind", as: String.self)
                let swift = RevocationKind(reason: reason, type: type)
                XCTAssertEqual(swift.rawValue, sql, "reason \(reason.map(String.init) ?? "nil"), type \(type?.rawValue ?? "nil")")
                table.append("\(reason.map(String.init) ?? "-")/\(type?.rawValue ?? "-")=\(sql)")
            }
        }
        // The table itself, so a change to both languages at once is still seen.
        XCTAssertEqual(table.filter { $0.hasSuffix("=revoked") },
                       ["-/-=revoked", "-/FAMILY_REVOKE=revoked", "-/NEW_KIND=revoked", "0/FAMILY_REVOKE=revoked",
                        "1/FAMILY_REVOKE=revoked", "7/FAMILY_REVOKE=revoked"])
    }
}
