import Domain
import Foundation
import Postgres
import Storage
import TestSupport
import XCTest

/// A fresh, migrated database with both stores over one pool. Call `close()` when done.
struct TestStores {
    let pool: ConnectionPool
    let projects: PostgresProjectStore
    let purchases: PostgresPurchaseStore

    static func make(label: String = "storage", poolSize: Int = 4) throws -> TestStores {
        let settings = try TestDatabase.create(label: label)
        let pool = ConnectionPool(
            settings: settings, configuration: .init(size: poolSize, acquireTimeout: .seconds(20)))
        try Migrator(pool: pool).migrate()
        return TestStores(
            pool: pool, projects: PostgresProjectStore(pool: pool), purchases: PostgresPurchaseStore(pool: pool))
    }

    func close() { pool.shutdown() }

    /// Appends one log row per purchase of `project` asking for all of its revenue (0062's and 0078's backfill): the
    /// deriver's next batches roll each purchase up whole.
    func askForRevenueWhole(_ project: Project) throws {
        try pool.withConnection { c in
            _ = try c.execute("""
                INSERT INTO purchase_changes (project_id, environment, original_transaction_id, data, created_at)
                SELECT DISTINCT t.project_id, t.environment, t.original_transaction_id,
                    '{"tx": {"revenue": "all"}}'::jsonb, now()
                FROM transactions t WHERE t.project_id = \(project.id)
                """)
        }
    }

    /// Runs a query outside the stores, to check the exact rows they wrote.
    func rows(_ query: Query) throws -> Rows {
        try pool.withConnection { try $0.query(query) }
    }

    /// `SELECT count(*)` of a query's rows.
    func count(_ query: Query) throws -> Int {
        let rows = try pool.withConnection { try $0.query(query) }
        return try XCTUnwrap(rows.first).decode(at: 0, as: Int.self)
    }

    /// A project with a fixed key pair derived from `n`, and the given policy.
    func makeProject(_ n: Int = 1, policy: TransferPolicy = .transfer) throws -> Project {
        try projects.createProject(
            NewProject(ProjectSettings(name: "App \(n)", bundleId: "com.example.app\(n)", transferPolicy: policy)),
            publicKey: Fixtures.publicKey(n), secretKeyHash: Fixtures.hash(n), now: Fixtures.t0)
    }
}

extension Fixtures {
    /// Project `n` written as rows, for a database migrated only to a version before today's store's columns
    /// (0050's `account_id`): the project row and its public key, nothing a later migration added.
    static func insertProjectRows(_ pool: ConnectionPool, _ n: Int = 1, policy: TransferPolicy = .transfer,
                                  tokenPolicy: AppAccountTokenPolicy = .ignore) throws -> Project {
        let project = Project(id: UUID(), name: "App \(n)", bundleId: "com.example.app\(n)", transferPolicy: policy,
                              appAccountTokenPolicy: tokenPolicy, publicKey: publicKey(n), createdAt: t0, updatedAt: t0)
        try pool.withConnection { c in
            _ = try c.execute("""
                INSERT INTO projects (id, name, bundle_id, transfer_policy, app_account_token_policy, created_at,
                    updated_at)
                VALUES (\(project.id), \(project.name), \(project.bundleId), \(policy.rawValue), \(tokenPolicy.rawValue),
                    \(t0), \(t0))
                """)
            _ = try c.execute("""
                INSERT INTO project_keys (project_id, id, kind, public_key, created_at)
                VALUES (\(project.id), \(UUID()), 'public', \(publicKey(n)), \(t0))
                """)
        }
        return project
    }
}

/// SplitMix64: random test cases that are the same on every run, reproducible from the seed printed on failure.
struct SplitMix64 {
    var state: UInt64

    /// A number in `0..<n`.
    mutating func next(_ n: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(z % UInt64(n))
    }
}

/// Fixed instants and fact builders. Whole seconds, so timestamptz (microseconds) round-trips exactly.
enum Fixtures {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static let day: TimeInterval = 86_400

    static func at(_ days: Double) -> Date { t0.addingTimeInterval(days * day) }

    static func publicKey(_ n: Int) -> String { "pk_" + String(repeating: String(n % 10), count: 32) }
    static func hash(_ n: Int) -> [UInt8] { (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ n) } }

    /// A monthly subscription transaction: purchased `start` days after t0, expiring 30 days later,
    /// signed `signed` days after t0 (default: at purchase).
    /// `price` (milli-units of USD) in the payload makes it revenue (`revenue_transactions`): a priced transaction.
    static func monthly(
        _ id: String, original: String = "1000", product: String = "pro.monthly", start: Double,
        signed: Double? = nil, revokedAt: Double? = nil, environment: StoreEnvironment = .production, price: Int? = nil
    ) -> TransactionFacts {
        TransactionFacts(
            transactionId: id, originalTransactionId: original, productId: product, type: .autoRenewable,
            environment: environment, purchaseDate: at(start), originalPurchaseDate: at(0),
            expiresDate: at(start + 30), revocationDate: revokedAt.map(at), revocationReason: revokedAt.map { _ in 0 },
            appAccountToken: UUID(uuidString: "6F1C2D3E-4A5B-4C6D-8E7F-8091A2B3C4D5"),
            ownershipType: .purchased, signedDate: at(signed ?? start),
            // Canonical jsonb text (one key), so the stored payload reads back byte-identical.
            payloadJSON: price.map { "{\"transactionId\": \"\(id)\", \"price\": \($0), \"currency\": \"USD\"}" }
                ?? "{\"transactionId\": \"\(id)\"}")
    }

    /// A lifetime (non-consumable) transaction.
    static func lifetime(_ id: String, product: String = "lifetime") -> TransactionFacts {
        TransactionFacts(
            transactionId: id, originalTransactionId: id, productId: product, type: .nonConsumable,
            environment: .production, purchaseDate: at(0), signedDate: at(0), payloadJSON: "{\"transactionId\": \"\(id)\"}")
    }

    static func renewal(
        original: String = "1000", signed: Double, autoRenew: Int = 1, grace: Double? = nil, retry: Bool? = nil
    ) -> RenewalFacts {
        RenewalFacts(
            originalTransactionId: original, productId: "pro.monthly", autoRenewProductId: "pro.yearly",
            autoRenewStatus: autoRenew, expirationIntent: autoRenew == 0 ? 1 : nil,
            gracePeriodExpiresDate: grace.map(at), isInBillingRetryPeriod: retry, priceIncreaseStatus: nil,
            offerType: 2, offerIdentifier: "spring", renewalDate: at(30), environment: .production,
            signedDate: at(signed), payloadJSON: "{\"signedDate\": \(Int(signed))}")
    }
}

/// Asserts that `body` throws a `DomainError` with `code`, and returns it.
@discardableResult
func assertDomainError<T>(
    _ code: DomainError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> T
) -> DomainError? {
    do {
        _ = try body()
        XCTFail("expected DomainError \(code), got a value", file: file, line: line)
    } catch let error as DomainError {
        XCTAssertEqual(error.code, code, String(reflecting: error), file: file, line: line)
        return error
    } catch {
        XCTFail("expected DomainError \(code), got \(String(reflecting: error))", file: file, line: line)
    }
    return nil
}
