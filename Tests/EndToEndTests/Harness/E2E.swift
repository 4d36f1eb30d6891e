import Foundation
import Glibc
import JSON
import Postgres
import Synchronization
import TestSupport
import XCTest

/// Shared helpers for the end-to-end suite: tokens, ids, JWS minting, dates.
///
/// The suite drives the real `bouncer` binary (`.build/<config>/bouncer`, built by `swift build --build-tests`) over
/// real HTTP against real PostgreSQL (the process-wide throwaway cluster from `TestSupport`; the outage test starts
/// its own so it can stop it). Receipts are signed by the committed test PKI through `Tests/Fixtures/pki/sign-jws`
/// and trusted via `BOUNCER_ROOT_CERTIFICATES`; `AppleRootsE2ETests` instead runs with the bundled Apple roots and a
/// real sandbox transaction from `Tests/Fixtures/apple/test-vectors`. Run: `swift test --disable-swift-testing --filter EndToEndTests`.
enum E2E {
    static let adminToken = BouncerProcess.adminToken
    static var admin: [String: String] { ["Authorization": "Bearer \(adminToken)"] }

    private static let counter = Mutex(0)

    /// A fresh numeric id (App Store ids are decimal strings), unique within this test process.
    static func uniqueId() -> String {
        let n = counter.withLock { value -> Int in
            value += 1
            return value
        }
        return "7\(UInt32(truncatingIfNeeded: getpid()) % 10_000)\(UInt32.random(in: 100_000...999_999))\(n)"
    }

    /// A fresh bundle id, so each test's project is its own app.
    static func uniqueBundle() -> String { "com.e2e.app\(uniqueId())" }

    /// Polls `condition` every 20 ms until it holds or 15 s pass; whether it held. For changes that reach a server
    /// through its cache's announcements (within a bound, never asserted as a time).
    static func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return try condition()
    }

    /// Milliseconds since 1970 for `now + seconds`.
    static func ms(_ secondsFromNow: Double) -> Int64 {
        Int64(((Date().timeIntervalSince1970 + secondsFromNow) * 1000).rounded())
    }

    /// The API's date format: ISO 8601 UTC with milliseconds.
    static func iso(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// A compact ES256 JWS over `payload`, signed by the test PKI (`TestPKI`, through `Tests/Fixtures/pki/sign-jws`).
    static func mint(_ payload: JSONValue, key: String? = nil, x5c: [String] = [], alg: String? = nil) throws -> String {
        try TestPKI.sign(payload.serializedString(), x5c: x5c, key: key, alg: alg)
    }

    /// The JSON payload of a compact JWS (the middle part, base64url).
    static func payload(ofJWS jws: String) throws -> JSONValue {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw HarnessFailure(description: "not a compact JWS") }
        var b64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64) else { throw HarnessFailure(description: "payload is not base64url") }
        return try JSONParser.parse(Array(data))
    }

    /// `{"signed_transaction_info": jws, "user_id"?: user}`.
    static func receiptBody(_ jws: String, user: String? = nil, device: String? = nil) -> JSONValue {
        var pairs: [(String, JSONValue)] = [("signed_transaction_info", .string(jws))]
        if let user { pairs.append(("user_id", .string(user))) }
        if let device { pairs.append(("device_id", .string(device))) }
        return .object(JSONObject(pairs))
    }
}

/// An App Store transaction payload (JWSTransactionDecodedPayload) with dates relative to now.
struct TransactionPayload {
    var transactionId = E2E.uniqueId()
    var originalTransactionId: String
    var bundleId: String
    var productId = "com.e2e.pro.monthly"
    var type = "Auto-Renewable Subscription"
    var purchaseDate = E2E.ms(-60)
    var originalPurchaseDate: Int64? = E2E.ms(-60)
    var expiresDate: Int64? = E2E.ms(30 * 86_400)
    var signedDate = E2E.ms(-1)
    var environment = "Sandbox"
    /// ISO 3166-1 alpha-3.
    var storefront = "USA"
    var inAppOwnershipType = "PURCHASED"
    var revocationDate: Int64?
    var revocationReason: Int64?
    /// `revocationType` / `revocationPercentage` (December 2025: partial refunds).
    var revocationType: String?
    var revocationPercentage: Int64?
    /// The 2025 fields that are only stored (`appTransactionId`, `offerPeriod`, `offerDiscountType`,
    /// `advancedCommerceInfo`), as extra payload members.
    var extra: [(String, JSONValue)] = []
    /// The UUID the app passed as `Product.PurchaseOption.appAccountToken`, lowercase as Apple sends it.
    var appAccountToken: String?

    init(bundleId: String, originalTransactionId: String? = nil) {
        self.bundleId = bundleId
        self.originalTransactionId = originalTransactionId ?? transactionId
    }

    var json: JSONValue {
        var pairs: [(String, JSONValue)] = [
            ("transactionId", .string(transactionId)),
            ("originalTransactionId", .string(originalTransactionId)),
            ("bundleId", .string(bundleId)),
            ("productId", .string(productId)),
            ("type", .string(type)),
            ("purchaseDate", JSONValue(purchaseDate)),
            ("quantity", 1),
            ("signedDate", JSONValue(signedDate)),
            ("environment", .string(environment)),
            ("inAppOwnershipType", .string(inAppOwnershipType)),
            ("transactionReason", "PURCHASE"),
            ("storefront", .string(storefront)),
            ("storefrontId", "143441"),
        ]
        if let originalPurchaseDate { pairs.append(("originalPurchaseDate", JSONValue(originalPurchaseDate))) }
        if let expiresDate { pairs.append(("expiresDate", JSONValue(expiresDate))) }
        if let revocationDate { pairs.append(("revocationDate", JSONValue(revocationDate))) }
        if let revocationReason { pairs.append(("revocationReason", JSONValue(revocationReason))) }
        if let appAccountToken { pairs.append(("appAccountToken", .string(appAccountToken))) }
        if let revocationType { pairs.append(("revocationType", .string(revocationType))) }
        if let revocationPercentage { pairs.append(("revocationPercentage", JSONValue(revocationPercentage))) }
        pairs += extra
        if type == "Auto-Renewable Subscription" { pairs.append(("subscriptionGroupIdentifier", "21000000")) }
        return .object(JSONObject(pairs))
    }

    /// The payload signed by the test PKI.
    func mint() throws -> String { try E2E.mint(json) }
}

/// A fresh database in a cluster, with the URL `bouncer` takes and a direct connection for row assertions.
final class E2EDatabase: @unchecked Sendable {
    let name: String
    let url: String
    let settings: ConnectionSettings

    /// A new empty database in `cluster` (default: the process-wide test cluster). With `BOUNCER_E2E_CITUS=1`
    /// (deploy/citus-suite) the default is a database on the Citus cluster instead, migrated and distributed.
    init(label: String, cluster: LocalCluster? = nil) throws {
        if cluster == nil, ProcessInfo.processInfo.environment["BOUNCER_E2E_CITUS"] == "1" {
            let citus = try CitusCluster.shared()
            name = try citus.bouncerDatabase(label: label)
            settings = citus.coordinator.settings.database(name)
            url = citus.url(database: name)
            return
        }
        let cluster = try cluster ?? TestDatabase.cluster()
        name = "e2e_\(label)_\(UInt32.random(in: 0...UInt32.max))"
        try cluster.createDatabase(name)
        settings = cluster.settings.database(name)
        url = "postgresql:///\(name)?host=\(cluster.socketDirectory)&port=\(cluster.port)&user=postgres"
    }

    /// Runs `query` on a fresh connection.
    func query(_ query: Query) throws -> Rows {
        let connection = try Connection(settings: settings)
        return try connection.query(query)
    }

    /// `SELECT count(*) FROM table WHERE project_id = project` (all rows when `project` is nil).
    func count(_ table: String, project: String? = nil) throws -> Int {
        let rows: Rows
        if let project {
            rows = try query("SELECT count(*)::int8 AS n FROM \(unsafeSQL: table) WHERE project_id = \(project)::uuid")
        } else {
            rows = try query("SELECT count(*)::int8 AS n FROM \(unsafeSQL: table)")
        }
        guard let row = rows.first else { throw HarnessFailure(description: "count(*) returned no row") }
        return Int(try row.decode("n", as: Int64.self))
    }
}

/// `bouncer serve` on a fresh database of its own, with the API through it: for a test that needs its own variables,
/// stops or restarts the server, or locks tables under it (a class's tests otherwise share one: `SharedServerTestCase`).
/// The caller stops the server.
func ownServer(label: String, overrides: [String: String?] = [:]) throws
    -> (db: E2EDatabase, server: BouncerProcess, api: API)
{
    let db = try E2EDatabase(label: label)
    let server = try BouncerProcess(databaseURL: db.url, overrides: overrides)
    return (db, server, API(client: server.client))
}

/// A shared server + database per test class: started on first use, stopped by the class's `tearDown`.
final class SharedServer: Sendable {
    private let state = Mutex<(BouncerProcess, E2EDatabase)?>(nil)
    let label: String
    let overrides: [String: String?]

    init(label: String, overrides: [String: String?] = [:]) {
        self.label = label
        self.overrides = overrides
    }

    func get() throws -> (server: BouncerProcess, db: E2EDatabase) {
        try state.withLock { current in
            if let current { return current }
            let db = try E2EDatabase(label: label)
            let server = try BouncerProcess(databaseURL: db.url, overrides: overrides)
            current = (server, db)
            return (server, db)
        }
    }

    /// Stops the server; a non-zero exit is reported on stderr (class tearDown cannot fail a test).
    func stop() {
        guard let server = state.withLock({ current -> BouncerProcess? in
            defer { current = nil }
            return current?.0
        }) else { return }
        let status = server.stop()
        if status != 0 {
            FileHandle.standardError.write(Data("E2E: bouncer serve (\(label)) exited \(status) after SIGTERM:\n\(server.stderr)\n".utf8))
        }
    }
}
