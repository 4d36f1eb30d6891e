import Foundation
import JSON
import Postgres
import Synchronization
import XCTest

/// A fake Apple over real TLS (`FakeAppleServer`) and `bouncer serve` on a fresh database pointed at it (the fake's
/// URLs and CA file, a BOUNCER_ENCRYPTION_KEY for stored credentials), with the steps tests repeat: a project whose
/// App Store credentials the fake accepts, posting signed transactions, SQL on the server's database.
///
/// The server starts on first use of `server`, `db` or `api`; `startServer(on:)` wires more processes the same way.
final class AppleConnectedBouncer: Sendable {
    let apple: FakeAppleServer
    /// BOUNCER_ENCRYPTION_KEY of every process started from here (base64 of 32 bytes).
    let encryptionKey: String
    /// Every variable beyond the test defaults: the fake's three, the encryption key, then the caller's.
    let overrides: [String: String?]
    private let shared: SharedServer

    init(label: String, encryptionKey: String = AppleConnectedBouncer.randomKey(),
         overrides extra: [String: String?] = [:]) throws {
        apple = try FakeAppleServer()
        self.encryptionKey = encryptionKey
        var overrides: [String: String?] = apple.environment.mapValues { Optional($0) }
        overrides["BOUNCER_ENCRYPTION_KEY"] = encryptionKey
        for (key, value) in extra { overrides[key] = value }
        self.overrides = overrides
        shared = SharedServer(label: label, overrides: overrides)
    }

    /// A fresh AES-256 key, base64.
    static func randomKey() -> String { Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }

    var server: BouncerProcess { get throws { try shared.get().server } }
    var db: E2EDatabase { get throws { try shared.get().db } }
    var api: API { get throws { API(client: try server.client) } }

    /// `overrides` with `extra` on top.
    func overrides(_ extra: [String: String?]) -> [String: String?] { overrides.merging(extra) { $1 } }

    /// Another `bouncer serve` wired to the same fake Apple, on `db`.
    func startServer(on db: E2EDatabase, _ extra: [String: String?] = [:]) throws -> BouncerProcess {
        try BouncerProcess(databaseURL: db.url, overrides: overrides(extra))
    }

    /// The whole environment of a `bouncer` CLI run against the shared database.
    func cliEnvironment(_ extra: [String: String?] = [:]) throws -> [String: String] {
        BouncerProcess.environment(databaseURL: try db.url, overrides: overrides(extra))
    }

    /// Stops the shared server (a non-zero exit is reported on stderr) and the fake Apple; for a class's `tearDown`.
    func stop() {
        shared.stop()
        apple.stop()
    }

    // MARK: - Steps

    /// A project with `settings` and `products` mapped, credentials for a new key stored (unless `credentials` is
    /// false), and the fake expecting that key and the project's bundle id; through the shared server unless `api`.
    func createProject(api: API? = nil, settings: [(String, JSONValue)] = [],
                       products: [(String, [String])] = [("com.e2e.pro.monthly", ["pro"])],
                       keyId: String = "FAKEKEY001", credentials: Bool = true,
                       file: StaticString = #filePath, line: UInt = #line) throws -> (Tenant, FakeAppleServer.Key) {
        try (api ?? self.api).createProject(connectedTo: apple, settings: settings, products: products, keyId: keyId,
                                            credentials: credentials, file: file, line: line)
    }

    /// `POST /v1/receipts/:publicKey` with `payload` signed by the test PKI.
    func postTransaction(_ tenant: Tenant, _ payload: TransactionPayload, user: String? = nil) throws -> HTTPResponse {
        try api.postReceipt(tenant.publicKey, try payload.mint(), user: user)
    }

    /// `query` on the shared server's database.
    func sql(_ query: Query) throws -> Rows { try db.query(query) }
}

extension API {
    /// `PUT /v1/admin/projects/:id/app-store-credentials` with `key`; fails the test unless 200.
    func storeCredentials(_ tenant: Tenant, _ key: FakeAppleServer.Key,
                          file: StaticString = #filePath, line: UInt = #line) throws {
        let body: JSONValue = ["issuer_id": .string(key.issuerId), "key_id": .string(key.keyId),
                               "private_key": .string(key.privateKeyPEM)]
        let r = try client.send("PUT", "/v1/admin/projects/\(tenant.id)/app-store-credentials", json: body,
                                headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description, file: file, line: line)
    }

    /// A project with `settings` and `products` mapped, credentials for a new key stored (unless `credentials` is
    /// false), and `apple` expecting that key and the project's bundle id.
    func createProject(connectedTo apple: FakeAppleServer, settings: [(String, JSONValue)] = [],
                       products: [(String, [String])] = [("com.e2e.pro.monthly", ["pro"])],
                       keyId: String = "FAKEKEY001", credentials: Bool = true,
                       file: StaticString = #filePath, line: UInt = #line) throws -> (Tenant, FakeAppleServer.Key) {
        let tenant = try createProject(extra: settings, file: file, line: line)
        for (product, entitlements) in products { try mapProduct(tenant, product, entitlements, file: file, line: line) }
        let key = try FakeAppleServer.Key.generate(keyId: keyId)
        if credentials { try storeCredentials(tenant, key, file: file, line: line) }
        apple.expect(key: key, bundleId: tenant.bundleId)
        return (tenant, key)
    }
}

/// One value per test class, made on first use and handed once to the class's `tearDown`.
final class ClassFixture<Value: Sendable>: Sendable {
    private let state = Mutex<Value?>(nil)
    private let make: @Sendable () throws -> Value

    init(_ make: @escaping @Sendable () throws -> Value) { self.make = make }

    /// The value, made now if this is the first use since the last `take()`.
    func get() throws -> Value {
        try state.withLock { current in
            if let current { return current }
            let made = try make()
            current = made
            return made
        }
    }

    /// The value if it was made; the next `get()` makes a new one.
    func take() -> Value? {
        state.withLock { current in
            defer { current = nil }
            return current
        }
    }
}
