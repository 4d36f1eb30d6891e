import Domain
import Foundation
import Postgres
import Storage
import XCTest

/// `recordTransactions`: a StoreKit 1 receipt's records in one statement (one database transaction, one round trip),
/// under the same rules as `recordTransaction`, exactly once per transaction id, nothing written on a refusal, and
/// the source kept on every row.
final class ReceiptRecordingTests: XCTestCase {
    private var s: TestStores!

    override func setUpWithError() throws {
        s = try TestStores.make(label: "receiptrecording", poolSize: 1)
    }

    override func tearDown() {
        s?.close()
    }

    /// `count` monthly renewals of one purchase, as a receipt lists them (signed at the receipt's creation date).
    private func records(_ prefix: String, count: Int, original: String, created: Double) -> [TransactionFacts] {
        (0..<count).map { i in
            var t = Fixtures.monthly("\(prefix)\(i)", original: original, start: Double(i) * 30, signed: created)
            t.appAccountToken = nil
            t.ownershipType = nil
            t.payloadJSON = "{\"source\": \"receipt\", \"transaction_id\": \"\(prefix)\(i)\"}"
            return t
        }
    }

    private func sources(_ project: Project) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try s.rows("SELECT source, count(*)::int8 AS n FROM transactions WHERE project_id = \(project.id) GROUP BY source") {
            counts[try row.decode("source", as: String.self)] = Int(try row.decode("n", as: Int64.self))
        }
        return counts
    }

    /// The payload's columns (once generated, schema/0040) as text, one line per transaction of the project.
    private func payloadColumns(_ project: Project) throws -> [String] {
        try s.rows("""
            SELECT format('%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s', transaction_id, app_transaction_id,
                offer_period, offer_discount_type, revocation_type, revocation_percentage, advanced_commerce_info,
                price_milli, currency, is_renewal, to_char(ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')) AS line
            FROM transactions WHERE project_id = \(project.id) ORDER BY transaction_id
            """).map { try $0.decode("line", as: String.self) }
    }

    func testThePayloadColumnsAreWrittenByTheRecordAndRefreshedOnlyByANewerSignature() throws {
        let p = try s.makeProject()
        var first = Fixtures.monthly("2000", start: 0)
        first.payloadJSON = """
            {"appTransactionId": "704289572", "offerPeriod": "P3M", "offerDiscountType": "FREE_TRIAL", \
            "revocationType": "REFUND_PRORATED", "revocationPercentage": 25000, \
            "advancedCommerceInfo": {"ref": 1}, "price": 4990.4, "currency": "EUR"}
            """
        var hostile = Fixtures.monthly("1000", start: 0)
        hostile.payloadJSON = """
            {"revocationPercentage": "25000", "price": 1e30, "currency": "TOOLONGCUR", "offerPeriod": 3}
            """
        _ = try s.purchases.recordTransaction(hostile, userId: nil, deviceId: nil, project: p, now: Fixtures.at(0.1))
        _ = try s.purchases.recordTransaction(first, userId: nil, deviceId: nil, project: p, now: Fixtures.at(0.1))
        let stored = [
            " |  | 3 |  |  |  |  |  |  | f | 2023-12-14",
            " | 704289572 | P3M | FREE_TRIAL | REFUND_PRORATED | 25000 | {\"ref\": 1} | 4990 | EUR | t | 2023-12-14",
        ]
        XCTAssertEqual(try payloadColumns(p), ["1000" + stored[0], "2000" + stored[1]])

        // An older signature changes nothing; a newer one rewrites every column from its own payload and dates.
        var older = first
        older.payloadJSON = "{}"
        _ = try s.purchases.recordTransaction(older, userId: nil, deviceId: nil, project: p, now: Fixtures.at(0.2))
        XCTAssertEqual(try payloadColumns(p), ["1000" + stored[0], "2000" + stored[1]])
        var newer = Fixtures.monthly("2000", start: 0, signed: 2, revokedAt: 2)
        newer.payloadJSON = #"{"price": 990, "currency": "USD", "revocationType": "REFUND_FULL"}"#
        _ = try s.purchases.recordTransaction(newer, userId: nil, deviceId: nil, project: p, now: Fixtures.at(2.1))
        XCTAssertEqual(try payloadColumns(p), [
            "1000" + stored[0], "2000 |  |  |  | REFUND_FULL |  |  | 990 | USD | t | 2023-11-16",
        ])
    }

    func test187RecordsAreOneRoundTripExactlyOnceWithSourceReceipt() throws {
        let project = try s.makeProject(policy: .transfer)
        _ = try s.projects.setProduct(projectId: project.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]),
                                      now: Fixtures.t0)
        // Warm the statement (its first use on a session also prepares it).
        _ = try s.purchases.recordTransactions(records("w", count: 2, original: "w0", created: 60), source: .receipt,
                                               userId: "warm", deviceId: nil, project: project, now: Fixtures.t0)
        let receipt = records("r", count: 187, original: "r0", created: 187 * 30)
        let now = Fixtures.at(186 * 30 + 10)   // inside the last record's period
        let before = try s.pool.withConnection { $0.roundTrips }
        let started = Date()
        let recorded = try s.purchases.recordTransactions(receipt, source: .receipt, userId: "u1", deviceId: "d1",
                                                          project: project, now: now)
        let elapsed = Date().timeIntervalSince(started)
        let trips = try s.pool.withConnection { $0.roundTrips } - before
        print("recordTransactions: 187 records in \(String(format: "%.1f", elapsed * 1000)) ms, \(trips) round trip(s)")
        XCTAssertEqual(trips, 1)
        XCTAssertEqual(recorded.map(\.transaction.transactionId), receipt.map(\.transactionId))
        let last = try XCTUnwrap(recorded.last)
        XCTAssertEqual(last.purchase.latestTransactionId, "r186")
        XCTAssertTrue(last.isLatest)
        XCTAssertEqual(last.entitlements, ["pro"])
        XCTAssertEqual(StatusRules.evaluate(last.purchase, at: now).status, .active)
        XCTAssertEqual(recorded.first?.ownership, .bind)
        XCTAssertEqual(recorded.dropFirst().map(\.ownership), Array(repeating: .alreadyOwned, count: 186))
        XCTAssertEqual(try sources(project), ["receipt": 189])

        // Again: the same rows, the same purchase, the user still holds it.
        let again = try s.purchases.recordTransactions(receipt, source: .receipt, userId: "u1", deviceId: "d1",
                                                       project: project, now: now)
        XCTAssertEqual(again.last?.purchase, last.purchase)
        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions WHERE project_id = \(project.id) AND original_transaction_id = 'r0'"), 187)
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "u1", project: project).map(\.purchase.originalTransactionId), ["r0"])
        let stored = try XCTUnwrap(s.rows("SELECT payload::text AS p FROM transactions WHERE project_id = \(project.id) AND transaction_id = 'r7'").first)
        XCTAssertEqual(try stored.decode("p", as: String.self), #"{"source": "receipt", "transaction_id": "r7"}"#)
    }

    func testARefusalOfOneRecordWritesNothingAtAll() throws {
        let project = try s.makeProject(policy: .block)
        // u-first holds purchase "held" (a JWS posted before).
        _ = try s.purchases.recordTransaction(Fixtures.monthly("held1", original: "held1", start: 0), userId: "u-first",
                                              deviceId: nil, project: project, now: Fixtures.t0)
        // A receipt of another user: a new purchase first, then the held one; block refuses the whole receipt.
        let receipt = records("new", count: 3, original: "new0", created: 90)
            + [Fixtures.monthly("held2", original: "held1", start: 30, signed: 90)]
        assertDomainError(.purchaseOwnedByAnotherUser) {
            try s.purchases.recordTransactions(receipt, source: .receipt, userId: "u-second", deviceId: nil,
                                               project: project, now: Fixtures.t0)
        }
        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions WHERE project_id = \(project.id)"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM purchases WHERE project_id = \(project.id)"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions WHERE project_id = \(project.id)"), 1)

        // A record contradicting a stored identity (same id, other product): conflict, nothing written either.
        var conflicting = Fixtures.monthly("held1", original: "held1", product: "other.product", start: 0, signed: 5)
        conflicting.payloadJSON = "{}"
        assertDomainError(.transactionConflict) {
            try s.purchases.recordTransactions(records("c", count: 2, original: "c0", created: 90) + [conflicting],
                                               source: .receipt, userId: nil, deviceId: nil, project: project, now: Fixtures.t0)
        }
        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions WHERE project_id = \(project.id)"), 1)
    }

    func testSourcesOfEachWritePath() throws {
        let project = try s.makeProject()
        _ = try s.purchases.recordTransaction(Fixtures.monthly("jws1", original: "jws1", start: 0), userId: nil,
                                              deviceId: nil, project: project, now: Fixtures.t0)
        _ = try s.purchases.recordTransactions([Fixtures.monthly("look1", original: "look1", start: 0)], source: .lookup,
                                               userId: nil, deviceId: nil, project: project, now: Fixtures.t0)
        _ = try s.purchases.recordTransactions(records("rc", count: 2, original: "rc0", created: 60), source: .receipt,
                                               userId: nil, deviceId: nil, project: project, now: Fixtures.t0)
        XCTAssertEqual(try sources(project), ["transaction": 1, "lookup": 1, "receipt": 2])
        XCTAssertEqual(try s.purchases.recordTransactions([], source: .receipt, userId: "u", deviceId: nil,
                                                          project: project, now: Fixtures.t0), [])

        // A newer signed statement about a receipt's transaction wins, and its source with it.
        var newer = Fixtures.monthly("rc1", original: "rc0", start: 30, signed: 61)
        newer.appAccountToken = nil
        _ = try s.purchases.recordTransaction(newer, userId: nil, deviceId: nil, project: project, now: Fixtures.t0)
        XCTAssertEqual(try sources(project), ["transaction": 2, "lookup": 1, "receipt": 1])
    }

    /// Each result carries its transaction's status facts as stored after the write, read in the same statement
    /// (still one round trip): newer signed facts win over the receipt's, the receipt's win over older ones, and a
    /// record listed twice reads the row its first copy wrote.
    func testEachResultCarriesTheStoredFactsNewerSignedWins() throws {
        let project = try s.makeProject()
        func receiptRecord(_ id: String, start: Double, expiresIn: Double = 30) -> TransactionFacts {
            var t = Fixtures.monthly(id, original: "st0", start: start, signed: 100)
            t.expiresDate = Fixtures.at(start + expiresIn)
            t.appAccountToken = nil
            t.ownershipType = nil
            return t
        }
        // Signed after the receipt: st1 refunded at day 40. Signed before it: st2 refunded at day 70.
        _ = try s.purchases.recordTransaction(Fixtures.monthly("st1", original: "st0", start: 30, signed: 200, revokedAt: 40),
                                              userId: nil, deviceId: nil, project: project, now: Fixtures.t0)
        _ = try s.purchases.recordTransaction(Fixtures.monthly("st2", original: "st0", start: 60, signed: 50, revokedAt: 70),
                                              userId: nil, deviceId: nil, project: project, now: Fixtures.t0)
        let receipt = [receiptRecord("st0", start: 0), receiptRecord("st1", start: 30), receiptRecord("st2", start: 60),
                       receiptRecord("st3", start: 90), receiptRecord("st3", start: 90, expiresIn: 31)]
        // Warm the statement (its first use on a session also prepares it).
        _ = try s.purchases.recordTransactions(records("w", count: 1, original: "w0", created: 60), source: .receipt,
                                               userId: nil, deviceId: nil, project: project, now: Fixtures.t0)
        let before = try s.pool.withConnection { $0.roundTrips }
        let recorded = try s.purchases.recordTransactions(receipt, source: .receipt, userId: nil, deviceId: nil,
                                                          project: project, now: Fixtures.at(95))
        XCTAssertEqual(try s.pool.withConnection { $0.roundTrips } - before, 1)
        XCTAssertEqual(recorded.map(\.stored), [
            StoredTransactionFacts(expiresDate: Fixtures.at(30), accessRevocationDate: nil, signedDate: Fixtures.at(100)),
            StoredTransactionFacts(expiresDate: Fixtures.at(60), accessRevocationDate: Fixtures.at(40),
                                   signedDate: Fixtures.at(200)),
            StoredTransactionFacts(expiresDate: Fixtures.at(90), accessRevocationDate: nil, signedDate: Fixtures.at(100)),
            StoredTransactionFacts(expiresDate: Fixtures.at(120), accessRevocationDate: nil, signedDate: Fixtures.at(100)),
            // The second copy, signed at the same instant, changed nothing: the first copy's expiry stands.
            StoredTransactionFacts(expiresDate: Fixtures.at(120), accessRevocationDate: nil, signedDate: Fixtures.at(100)),
        ])
        XCTAssertEqual(recorded.map { StatusRules.evaluate($0.stored, at: Fixtures.at(95)) },
                       [.expired, .revoked, .expired, .active, .active])
        let rows = try s.rows("""
            SELECT transaction_id, revocation_date IS NOT NULL AS revoked, expires_date FROM transactions
            WHERE project_id = \(project.id) AND original_transaction_id = 'st0' ORDER BY transaction_id
            """).map { "\(try $0.decode("transaction_id", as: String.self))/\(try $0.decode("revoked", as: Bool.self))/"
                + "\(try $0.decode("expires_date", as: Date.self) == Fixtures.at(120))" }
        XCTAssertEqual(rows, ["st0/false/false", "st1/true/false", "st2/false/false", "st3/false/true"])

        // The single write reads the same way: an older JWS of st1 gets the stored refund back.
        let older = try s.purchases.recordTransaction(Fixtures.monthly("st1", original: "st0", start: 30, signed: 150),
                                                      userId: nil, deviceId: nil, project: project, now: Fixtures.t0)
        XCTAssertEqual(older.stored, StoredTransactionFacts(expiresDate: Fixtures.at(60),
                                                            accessRevocationDate: Fixtures.at(40), signedDate: Fixtures.at(200)))
    }

    /// The first and last instants signed data may carry (`SignedDateRange`: 0000-12-30, 9999-12-31T23:59:59.999Z)
    /// are stored, to the millisecond, as through `recordTransaction` (a year-9999 date was bound as NULL and failed
    /// the statement with `invalid input syntax for type bigint`: a 500).
    func testTheExtremeSignedInstantsAreStoredAsTheyAre() throws {
        let project = try s.makeProject()
        let first = Date(timeIntervalSince1970: -62_135_769_600), last = Date(timeIntervalSince1970: 253_402_300_799.999)
        var t = Fixtures.monthly("x1", original: "x1", start: 0)
        t.purchaseDate = first
        t.originalPurchaseDate = first
        t.expiresDate = last
        t.signedDate = last
        let recorded = try s.purchases.recordTransactions([t], source: .receipt, userId: "u", deviceId: nil,
                                                          project: project, now: Fixtures.t0)
        XCTAssertEqual(recorded.count, 1)
        let row = try XCTUnwrap(try s.rows("""
            SELECT (extract(epoch FROM purchase_date) * 1000)::int8 AS purchased,
                (extract(epoch FROM expires_date) * 1000)::int8 AS expires,
                (extract(epoch FROM signed_date) * 1000)::int8 AS signed
            FROM transactions WHERE project_id = \(project.id) AND transaction_id = 'x1'
            """).first)
        XCTAssertEqual(try row.decode("purchased", as: Int64.self), -62_135_769_600_000)
        XCTAssertEqual(try row.decode("expires", as: Int64.self), 253_402_300_799_999)
        XCTAssertEqual(try row.decode("signed", as: Int64.self), 253_402_300_799_999)
    }

    /// A batch of first posts is recorded set-based (`bouncer_record_transactions`), any other batch by one
    /// `bouncer_record_transaction` call per element: the two write the same rows. The same first posts (a trial, a
    /// refund, a Family Sharing revoke, a consumable without a user, one that adopts pending renewal info, an Xcode
    /// one) go to project A alone — set-based — and to project B with a renewal of another purchase after them, which
    /// sends that batch through the calls. Every row both wrote (but the projects' bundle ids), and every result, must be
    /// equal.
    func testFirstPostsRecordAsTheirCallsWould() throws {
        let a = try s.makeProject(1), b = try s.makeProject(2)
        func firstPosts() -> [TransactionFacts] {
            var trial = Fixtures.monthly("f1", original: "f1", start: 0)
            trial.payloadJSON = #"{"offerDiscountType": "FREE_TRIAL", "offerPeriod": "P1W", "price": 0, "currency": "EUR"}"#
            trial.offerDiscountType = .freeTrial
            var refunded = Fixtures.monthly("f2", original: "f2", start: 1, revokedAt: 2)
            refunded.payloadJSON = #"{"price": 4990, "currency": "USD", "revocationType": "REFUND_PRORATED", "revocationPercentage": 25000}"#
            var family = Fixtures.monthly("f3", original: "f3", start: 1, revokedAt: 3)
            family.revocationReason = nil
            family.ownershipType = OwnershipType(rawValue: "FAMILY_SHARED")
            family.payloadJSON = #"{"revocationType": "FAMILY_REVOKE"}"#
            var consumable = Fixtures.lifetime("f4", product: "coins")
            consumable.type = .consumable
            let adopting = Fixtures.monthly("f5", original: "f5", start: 0)
            let xcode = Fixtures.monthly("f6", original: "f6", start: 0, environment: .xcode)
            return [trial, refunded, family, consumable, adopting, xcode]
        }
        for project in [a, b] {
            _ = try s.projects.setProduct(projectId: project.id,
                                          ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Fixtures.t0)
            _ = try s.purchases.recordRenewal(Fixtures.renewal(original: "f5", signed: 1), project: project,
                                              now: Fixtures.t0)
        }
        // Two batches per project (a receipt's records: one statement each), one bound to a user, one not; B's each
        // end with a renewal of a purchase not known yet (recorded by the calls, and left out of the comparison).
        let renewal = Fixtures.monthly("g2", original: "g1", start: 30)
        func record(_ project: Project, extra: [TransactionFacts]) throws -> [RecordedTransaction] {
            let facts = firstPosts()
            let bound = try s.purchases.recordTransactions(
                Array(facts.prefix(3)) + [facts[4], facts[5]] + extra, source: .receipt, userId: "u1",
                deviceId: "d1", project: project, now: Fixtures.at(5))
            let unbound = try s.purchases.recordTransactions(
                [facts[3]] + extra, source: .receipt, userId: nil, deviceId: nil, project: project, now: Fixtures.at(6))
            return Array(bound.prefix(5)) + Array(unbound.prefix(1))
        }
        _ = try s.rows("SET track_functions = 'pl'")
        let recordedA = try record(a, extra: [])
        XCTAssertEqual(try recordCalls(), ["bouncer_record_new_transactions 2", "bouncer_record_transactions 2"])
        let recordedB = try record(b, extra: [renewal])
        XCTAssertEqual(try recordCalls(), ["bouncer_record_new_transactions 4", "bouncer_record_transaction 8",
                                            "bouncer_record_transactions 4"])
        XCTAssertEqual(recordedA.map(\.ownership), [.bind, .bind, .bind, .bind, .bind, nil])
        XCTAssertEqual(recordedA, recordedB)
        XCTAssertEqual(recordedA[0].entitlements, ["pro"])

        try assertSameRows(a, b)
        XCTAssertEqual(try lines(a, "SELECT count(*)::text AS line FROM purchase_changes WHERE project_id = $project"),
                       ["6"])
    }

    /// A renewal posted by the one user who holds its purchase is recorded set-based too (with first posts in the same
    /// batch), and writes what `bouncer_record_transaction`'s call writes: a newer renewal, an older one (posted after
    /// a later renewal: not newer), a refunded one, an upgrade to another product, and a first post in one batch, bound
    /// to their holder with a new device id, in project A alone — set-based — and in project B with a renewal of a
    /// purchase not known yet after them, which sends that batch through the calls. Every row both wrote, and every
    /// result, must be equal.
    func testRenewalsRecordAsTheirCallsWould() throws {
        let a = try s.makeProject(1), b = try s.makeProject(2)
        for project in [a, b] {
            for product in ["pro.monthly", "pro.yearly"] {
                _ = try s.projects.setProduct(projectId: project.id,
                                              ProductMapping(productId: product, entitlements: ["pro"]), now: Fixtures.t0)
            }
            _ = try s.purchases.recordTransactions(
                ["r1", "r2", "r3", "r4"].map { Fixtures.monthly($0, original: $0, start: 0) }, source: .receipt,
                userId: "u1", deviceId: "d1", project: project, now: Fixtures.at(1))
            _ = try s.purchases.recordTransactions([Fixtures.monthly("r2c", original: "r2", start: 60)],
                                                   source: .receipt, userId: "u1", deviceId: nil, project: project,
                                                   now: Fixtures.at(60))
        }
        var refunded = Fixtures.monthly("r3b", original: "r3", start: 30, revokedAt: 31)
        refunded.payloadJSON = #"{"price": 4990, "currency": "USD", "revocationType": "REFUND_FULL"}"#
        let batch = [Fixtures.monthly("r1b", original: "r1", start: 30),
                     Fixtures.monthly("r2b", original: "r2", start: 30),
                     refunded,
                     Fixtures.monthly("r4b", original: "r4", product: "pro.yearly", start: 30),
                     Fixtures.monthly("n1", original: "n1", start: 30)]
        _ = try s.rows("SET track_functions = 'pl'")
        let recordedA = try s.purchases.recordTransactions(batch, source: .receipt, userId: "u1", deviceId: "d2",
                                                           project: a, now: Fixtures.at(62))
        XCTAssertEqual(try recordCalls(), ["bouncer_record_new_transactions 1", "bouncer_record_transactions 1"])
        let recordedB = try s.purchases.recordTransactions(
            batch + [Fixtures.monthly("g2", original: "g1", start: 30)], source: .receipt, userId: "u1",
            deviceId: "d2", project: b, now: Fixtures.at(62))
        XCTAssertEqual(try recordCalls(), ["bouncer_record_new_transactions 2", "bouncer_record_transaction 6",
                                            "bouncer_record_transactions 2"])
        XCTAssertEqual(recordedA.map(\.ownership), [.alreadyOwned, .alreadyOwned, .alreadyOwned, .alreadyOwned, .bind])
        XCTAssertEqual(recordedA, Array(recordedB.prefix(5)))
        XCTAssertEqual(recordedA.map { $0.purchase.latestTransactionId }, ["r1b", "r2c", "r3b", "r4b", "n1"])
        XCTAssertEqual(recordedA[3].purchase.productId, "pro.yearly")

        try assertSameRows(a, b)
        XCTAssertEqual(try lines(a, "SELECT device_id || ' ' || original_transaction_id AS line FROM subscriptions "
                                 + "WHERE project_id = $project ORDER BY original_transaction_id"),
                       ["d2 n1", "d2 r1", "d2 r2", "d2 r3", "d2 r4"])
        // Five log rows before the batch (four first posts, the later renewal r2c), and one per element.
        XCTAssertEqual(try lines(a, "SELECT count(*)::text AS line FROM purchase_changes WHERE project_id = $project"),
                       ["10"])
    }

    /// A renewal posted by its purchase's holder leaves the binding as it is when nothing about it changed (no device
    /// id, or the same one): no new row version (its xmin stays), `updated_at` is when it last changed — set-based
    /// (project A) and through the calls (project B, whose batches end with a renewal of a purchase not known yet).
    /// A new device id is written, with `updated_at`. (Until session 21 every renewal rewrote the row: a new version
    /// and, on a full page, new index entries, for a timestamp nothing reads.)
    func testARenewalByItsHolderLeavesAnUnchangedBindingAsItIs() throws {
        let a = try s.makeProject(1), b = try s.makeProject(2)
        let unknown = Fixtures.monthly("g2", original: "g1", start: 30)
        func binding(_ project: Project) throws -> [String] {
            try lines(project, """
                SELECT original_transaction_id || ' ' || COALESCE(device_id, '-') || ' '
                    || extract(epoch FROM updated_at)::bigint || ' ' || xmin::text AS line
                FROM subscriptions WHERE project_id = $project AND original_transaction_id <> 'g1'
                ORDER BY original_transaction_id
                """)
        }
        var before: [[String]] = []
        for project in [a, b] {
            _ = try s.purchases.recordTransactions(
                ["r1", "r2", "r3"].map { Fixtures.monthly($0, original: $0, start: 0) }, source: .receipt,
                userId: "u1", deviceId: "d1", project: project, now: Fixtures.at(1))
            before.append(try binding(project))
        }
        _ = try s.rows("SET track_functions = 'pl'")
        for (project, extra) in [(a, [TransactionFacts]()), (b, [unknown])] {
            _ = try s.purchases.recordTransactions([Fixtures.monthly("r1b", original: "r1", start: 30)] + extra,
                                                   source: .receipt, userId: "u1", deviceId: nil, project: project,
                                                   now: Fixtures.at(31))
            _ = try s.purchases.recordTransactions([Fixtures.monthly("r2b", original: "r2", start: 30)] + extra,
                                                   source: .receipt, userId: "u1", deviceId: "d1", project: project,
                                                   now: Fixtures.at(32))
            _ = try s.purchases.recordTransactions([Fixtures.monthly("r3b", original: "r3", start: 30)] + extra,
                                                   source: .receipt, userId: "u1", deviceId: "d9", project: project,
                                                   now: Fixtures.at(33))
        }
        XCTAssertEqual(try recordCalls(), ["bouncer_record_new_transactions 6", "bouncer_record_transaction 6",
                                            "bouncer_record_transactions 6"])
        for (index, project) in [a, b].enumerated() {
            let after = try binding(project)
            XCTAssertEqual(after.count, 3)
            XCTAssertEqual(Array(after.prefix(2)), Array(before[index].prefix(2)), "r1, r2: the same row version")
            let r3 = after[2].split(separator: " ")
            XCTAssertEqual(r3.prefix(3).joined(separator: " "), "r3 d9 \(Self.epoch(33))")
            XCTAssertNotEqual(String(r3[3]), String(before[index][2].split(separator: " ")[3]), "r3: a new row version")
        }
        XCTAssertEqual(before[0].map { $0.split(separator: " ").prefix(3).joined(separator: " ") },
                       ["r1 d1 \(Self.epoch(1))", "r2 d1 \(Self.epoch(1))", "r3 d1 \(Self.epoch(1))"])
    }

    /// `Fixtures.at(days)` in whole seconds since 1970, as the statements print it.
    private static func epoch(_ days: Double) -> Int { Int(Fixtures.at(days).timeIntervalSince1970) }

    /// Which path recorded: the calls of each record function so far, counted by the pool's one session
    /// (`track_functions`, set by the test).
    private func recordCalls() throws -> [String] {
        _ = try s.rows("SELECT pg_stat_force_next_flush()")
        return try s.rows("""
            SELECT funcname || ' ' || calls AS line FROM pg_stat_user_functions
            WHERE funcname IN ('bouncer_record_new_transactions', 'bouncer_record_transaction',
                'bouncer_record_transactions') ORDER BY funcname
            """).map { try $0.decode("line", as: String.self) }
    }

    /// The rows `query` reads, a column `line` each, `$project` standing for the project's id.
    private func lines(_ project: Project, _ query: String) throws -> [String] {
        try s.rows(Query(unsafeSQL: query.replacingOccurrences(of: "$project", with: "'\(project.id)'")))
            .map { try $0.decode("line", as: String.self) }
    }

    /// Every row the record statements wrote in project `a` equals the one they wrote in `b` (but the projects' ids
    /// and bundle ids, and the rows of purchase g1, which only `b` was sent), table by table.
    private func assertSameRows(_ a: Project, _ b: Project, file: StaticString = #filePath, line: UInt = #line) throws {
        let tables = [
            "SELECT (to_jsonb(t) - 'project_id' - 'bundle_id')::text AS line FROM transactions t WHERE project_id = $project "
                + "AND original_transaction_id <> 'g1' ORDER BY transaction_id",
            "SELECT (to_jsonb(p) - 'project_id')::text AS line FROM purchases p WHERE project_id = $project "
                + "AND original_transaction_id <> 'g1' ORDER BY original_transaction_id, environment",
            "SELECT (to_jsonb(s) - 'project_id')::text AS line FROM subscriptions s WHERE project_id = $project "
                + "AND original_transaction_id <> 'g1' ORDER BY original_transaction_id, user_id",
            "SELECT environment || ' ' || original_transaction_id || ' ' || data::text || ' ' "
                + "|| COALESCE(purchase_before::text, '-') || ' ' || COALESCE(purchase_after::text, '-') AS line "
                + "FROM purchase_changes WHERE project_id = $project AND original_transaction_id <> 'g1' ORDER BY seq",
            "SELECT count(*)::text AS line FROM pending_renewals WHERE project_id = $project",
        ]
        for query in tables {
            let (left, right) = (try lines(a, query), try lines(b, query))
            XCTAssertFalse(left.isEmpty, query, file: file, line: line)
            XCTAssertEqual(left, right, query, file: file, line: line)
        }
    }

    /// A group commit keeps each call's JWS as its evidence (`transaction_jws`: the header once in `jws_headers`, the
    /// rest per transaction; the later signed copy of a transaction listed twice), and its statement keeps one generic
    /// plan: no batch is planned again after the plan cache's five custom plans, whatever its length (issue 22).
    func testTheBatchStatementKeepsEachJWSAndIsNotPlannedAgain() throws {
        let project = try s.makeProject()
        func signed(_ id: String, original: String, at day: Double) -> TransactionFacts {
            var t = Fixtures.monthly(id, original: original, start: 0, signed: day)
            t.signedJWS = "header-\(original).payload-\(id)-\(Int(day)).signature-\(id)"
            return t
        }
        for (i, size) in [2, 3, 4, 2, 5, 3, 2, 4, 6, 3].enumerated() {
            let batch = (0..<size).map { signed("b\(i)t\($0)", original: "b\(i)", at: 10) }
            _ = try s.purchases.recordTransactions(batch, source: .receipt, userId: nil, deviceId: nil,
                                                   project: project, now: Fixtures.t0)
        }
        let plans = try s.pool.withConnection { connection in
            try connection.query("""
                SELECT generic_plans, custom_plans FROM pg_prepared_statements
                WHERE statement LIKE '%FROM bouncer_record_transactions(ARRAY(%'
                  AND statement NOT LIKE '%pg_prepared_statements%'
                """).map { [try $0.decode("generic_plans", as: Int64.self), try $0.decode("custom_plans", as: Int64.self)] }
        }
        XCTAssertEqual(plans, [[5, 5]])

        // The same transaction twice in one batch, signed at days 20 and 30: the later JWS is its evidence.
        _ = try s.purchases.recordTransactions([signed("e1", original: "e0", at: 20), signed("e1", original: "e0", at: 30),
                                                signed("e2", original: "e0", at: 20)],
                                               source: .receipt, userId: nil, deviceId: nil, project: project, now: Fixtures.t0)
        let evidence = try s.rows("""
            SELECT j.transaction_id || ' ' || h.header || '.' || j.body AS line
            FROM transaction_jws j JOIN jws_headers h ON h.sha256 = j.header_sha256
            WHERE j.project_id = \(project.id) AND j.transaction_id IN ('e1', 'e2', 'b9t2') ORDER BY j.transaction_id
            """).map { try $0.decode("line", as: String.self) }
        XCTAssertEqual(evidence, ["b9t2 header-b9.payload-b9t2-10.signature-b9t2",
                                  "e1 header-e0.payload-e1-30.signature-e1", "e2 header-e0.payload-e2-20.signature-e2"])
    }
}
