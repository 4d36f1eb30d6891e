@testable import BouncerClient
import Foundation
import JSON
import Postgres
import Synchronization
import TestSupport
import XCTest

/// A real `bouncer serve` over a fresh database in the test cluster, with the admin calls the client tests need.
/// The client under test talks to it over real HTTP; the admin setup goes through `RawHTTPClient`, independent of it.
final class LiveBouncer: Sendable {
    let server: BouncerProcess
    let settings: ConnectionSettings
    let apple: FakeAppleServer?

    /// Starts a server; with `apple`, it asks that fake for lookups and `BOUNCER_ENCRYPTION_KEY` is set (stored
    /// App Store credentials, offer signing).
    init(label: String, apple: FakeAppleServer? = nil, overrides: [String: String?] = [:]) throws {
        let cluster = try TestDatabase.cluster()
        let name = "client_\(label)_\(UInt32.random(in: 0...UInt32.max))"
        try cluster.createDatabase(name)
        settings = cluster.settings.database(name)
        let url = "postgresql:///\(name)?host=\(cluster.socketDirectory)&port=\(cluster.port)&user=postgres"
        var all = overrides
        if let apple {
            for (key, value) in apple.environment { all[key] = value }
            all["BOUNCER_ENCRYPTION_KEY"] = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            all["BOUNCER_APPLE_API_TIMEOUT_SECONDS"] = "3"
        }
        server = try BouncerProcess(databaseURL: url, overrides: all)
        self.apple = apple
    }

    func stop() {
        _ = server.stop()
        apple?.stop()
    }

    var admin: [String: String] { ["Authorization": "Bearer \(BouncerProcess.adminToken)"] }
    var baseURL: URL { URL(fileURLWithPath: "/").deletingLastPathComponent().withPort(server.port) }

    /// A client of `project` against this server.
    func client(_ project: Project, secretKey: String? = nil, retry: RetryPolicy = .default) -> BouncerClient {
        BouncerClient(baseURL: baseURL, publicKey: project.publicKey, secretKey: secretKey, timeout: 20,
                      retryPolicy: retry)
    }

    struct Project {
        var id: String
        var bundleId: String
        var publicKey: String
        var secretKey: String
    }

    /// `POST /v1/admin/projects` with `extra` settings and `product` mapped to `entitlements`.
    func project(bundleId: String = "com.client.app\(LiveBouncer.uniqueId())", extra: [(String, JSONValue)] = [],
                 product: String? = "com.client.pro.monthly", entitlements: [String] = ["pro"],
                 file: StaticString = #filePath, line: UInt = #line) throws -> Project {
        let body = JSONValue.object(JSONObject([("name", "Client test"), ("bundle_id", .string(bundleId))] + extra))
        let r = try server.client.post("/v1/admin/projects", json: body, headers: admin)
        XCTAssertEqual(r.status, 201, r.description, file: file, line: line)
        let json = try r.json()
        guard let id = json["id"]?.stringValue, let pk = json["public_key"]?.stringValue,
              let sk = json["secret_key"]?.stringValue else {
            throw HarnessFailure(description: "project creation body lacks id/keys: \(r)")
        }
        let project = Project(id: id, bundleId: bundleId, publicKey: pk, secretKey: sk)
        if let product {
            let mapped = try server.client.send("PUT", "/v1/admin/projects/\(id)/products/\(product)",
                                                json: ["entitlements": .array(entitlements.map { .string($0) })],
                                                headers: admin)
            XCTAssertEqual(mapped.status, 200, mapped.description, file: file, line: line)
        }
        return project
    }

    /// Stores App Store credentials made for the fake Apple, which then expects them for `project`.
    func storeCredentials(_ project: Project, keyId: String = "CLIENT0001") throws -> FakeAppleServer.Key {
        let key = try FakeAppleServer.Key.generate(keyId: keyId)
        let body: JSONValue = ["issuer_id": .string(key.issuerId), "key_id": .string(key.keyId),
                               "private_key": .string(key.privateKeyPEM)]
        let r = try server.client.send("PUT", "/v1/admin/projects/\(project.id)/app-store-credentials", json: body,
                                       headers: admin)
        XCTAssertEqual(r.status, 200, r.description)
        apple?.expect(key: key, bundleId: project.bundleId)
        return key
    }

    /// Rows of `SELECT … FROM transactions` for the project: "transaction_id product_id environment user".
    func transactionRows(_ project: Project) throws -> [String] {
        let connection = try Connection(settings: settings)
        return try connection.query("""
            SELECT t.transaction_id || ' ' || t.product_id || ' ' || t.environment || ' ' || coalesce(s.user_id, '-') AS r
            FROM transactions t LEFT JOIN subscriptions s
              ON s.project_id = t.project_id AND s.original_transaction_id = t.original_transaction_id
            WHERE t.project_id = \(project.id)::uuid ORDER BY t.transaction_id
            """).map { try $0.decode("r", as: String.self) }
    }

    // MARK: Ids and signed data

    private static let counter = Counter()

    /// A fresh decimal id (App Store ids are decimal strings).
    static func uniqueId() -> String {
        "8\(UInt32(truncatingIfNeeded: getpid()) % 10_000)\(UInt32.random(in: 100_000...999_999))\(counter.next())"
    }

    /// Milliseconds since 1970 for now + `seconds`.
    static func ms(_ seconds: Double) -> Int64 { Int64(((Date().timeIntervalSince1970 + seconds) * 1000).rounded()) }

    /// A StoreKit 2 transaction payload signed by the test PKI.
    static func signedTransaction(bundleId: String, transactionId: String, productId: String = "com.client.pro.monthly",
                                  expires: Int64 = ms(30 * 86_400), environment: String = "Sandbox") throws -> String {
        let payload: JSONValue = [
            "transactionId": .string(transactionId), "originalTransactionId": .string(transactionId),
            "bundleId": .string(bundleId), "productId": .string(productId), "type": "Auto-Renewable Subscription",
            "purchaseDate": JSONValue(ms(-60)), "originalPurchaseDate": JSONValue(ms(-60)),
            "expiresDate": JSONValue(expires), "quantity": 1, "signedDate": JSONValue(ms(-1)),
            "environment": .string(environment), "inAppOwnershipType": "PURCHASED", "transactionReason": "PURCHASE",
            "storefront": "USA", "storefrontId": "143441", "subscriptionGroupIdentifier": "21000000",
        ]
        return try TestPKI.sign(payload.serializedString())
    }

    /// A signed AppTransaction (paid app) payload.
    static func signedAppTransaction(bundleId: String, appTransactionId: String, originalVersion: String = "1.9",
                                     originalPurchase: Int64) throws -> String {
        let payload: JSONValue = [
            "receiptType": "Sandbox", "bundleId": .string(bundleId), "applicationVersion": "412",
            "versionExternalIdentifier": 0, "receiptCreationDate": JSONValue(ms(-60)),
            "originalPurchaseDate": JSONValue(originalPurchase), "deviceVerification": "dGVzdA==",
            "deviceVerificationNonce": "1c0ebd39-2c4d-4a31-9a6b-2dd28fb0a3b1", "originalPlatform": "iOS",
            "originalApplicationVersion": .string(originalVersion), "appTransactionId": .string(appTransactionId),
        ]
        return try TestPKI.sign(payload.serializedString())
    }
}

extension URL {
    /// `http://127.0.0.1:port`.
    func withPort(_ port: Int) -> URL {
        var components = URLComponents()
        components.scheme = "http"
        components.host = "127.0.0.1"
        components.port = port
        return components.url ?? self
    }
}

/// A thread-safe counter for unique ids.
final class Counter: Sendable {
    private let value = Mutex(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}

/// The date `ms` milliseconds after 1970.
func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }

/// The `BouncerError` `body` throws; fails the test when it returns or throws something else.
func bouncerError<T>(_ body: () async throws -> T, file: StaticString = #filePath, line: UInt = #line) async -> BouncerError? {
    do {
        let value = try await body()
        XCTFail("expected a BouncerError, got \(value)", file: file, line: line)
    } catch let error as BouncerError {
        return error
    } catch {
        XCTFail("expected a BouncerError, got \(error)", file: file, line: line)
    }
    return nil
}

/// Asserts a server error: kind, status, code, exact message, a non-empty suggestion, a request id, attempts.
func assertServerError(_ error: BouncerError?, _ status: Int, _ code: String, message: String? = nil,
                       details: [BouncerError.Detail] = [], attempts: Int = 1,
                       file: StaticString = #filePath, line: UInt = #line) {
    guard let error else { return }
    XCTAssertEqual(error.kind, .server, "\(error)", file: file, line: line)
    XCTAssertEqual(error.status, status, "\(error)", file: file, line: line)
    XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
    if let message { XCTAssertEqual(error.message, message, file: file, line: line) }
    XCTAssertFalse(error.suggestion?.isEmpty ?? true, "suggestion: \(error)", file: file, line: line)
    XCTAssertEqual(error.details, details, file: file, line: line)
    XCTAssertTrue(error.requestId?.isEmpty == false, "request_id: \(error)", file: file, line: line)
    XCTAssertEqual(error.attempts, attempts, "\(error)", file: file, line: line)
}
