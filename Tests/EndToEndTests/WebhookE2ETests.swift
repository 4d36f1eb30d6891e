import Crypto
import Foundation
import Glibc
import JSON
import Postgres
import Synchronization
import XCTest

/// A live webhook receiver (`LocalHTTPSServer`, plain HTTP on 127.0.0.1) whose answers a test scripts, recording
/// every request.
final class WebhookReceiver: Sendable {
    struct Mode: Sendable {
        var status = 200
        var delay = 0.0
    }

    final class Shared: Sendable {
        let mode = Mutex(Mode())
        let inFlight = Mutex<(max: [String: Int], current: [String: Int])>(([:], [:]))
    }

    let server: LocalHTTPSServer
    private let shared = Shared()

    init() throws {
        let shared = self.shared
        server = try LocalHTTPSServer { request in
            let m = shared.mode.withLock { $0 }
            let id = request.header("Bouncer-Event-Id") ?? "?"
            shared.inFlight.withLock { state in
                state.current[id, default: 0] += 1
                state.max[id] = max(state.max[id] ?? 0, state.current[id] ?? 0)
            }
            if m.delay > 0 { Thread.sleep(forTimeInterval: m.delay) }
            shared.inFlight.withLock { $0.current[id, default: 1] -= 1 }
            return .respond(status: m.status, headers: [("Content-Type", "text/plain")], body: "ok")
        }
    }

    var url: String { "http://127.0.0.1:\(server.port)/hooks" }

    func answer(_ status: Int, delay: Double = 0) { shared.mode.withLock { $0 = Mode(status: status, delay: delay) } }

    /// How many requests carried the same event at the same moment, at most, per event id.
    var maxConcurrentPerEvent: [String: Int] { shared.inFlight.withLock { $0.max } }

    /// Every request's body as JSON (POST /hooks only).
    var requests: [LocalHTTPSServer.Request] { server.requests }

    func events() throws -> [JSONValue] { try requests.map { try JSONParser.parse($0.body) } }

    /// The requests answered 2xx so far are not tracked apart: tests script the status before the event exists.
    func waitForEvents(_ count: Int, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        let ok = E2E.eventually { requests.count >= count }
        if !ok { XCTFail("receiver got \(requests.count) requests, expected \(count)", file: file, line: line) }
        return ok
    }
}

/// Signed webhooks from the transactional outbox (issue 15, part 1) against a real `bouncer serve`, PostgreSQL and
/// a live receiver: signatures recomputed byte-exact, event bodies asserted exactly, retries, order, kill -9,
/// two instances, SSRF refusals, the deliveries list and retry, ping.
final class WebhookE2ETests: XCTestCase {
    static let encryptionKey = Data((0..<32).map { UInt8($0 * 7 + 3) }).base64EncodedString()
    static let fast: [String: String?] = [
        "BOUNCER_ENCRYPTION_KEY": encryptionKey,
        "BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1",
        "BOUNCER_WEBHOOK_RETRY_BASE_SECONDS": "0.1",
        "BOUNCER_WEBHOOK_SWEEP_SECONDS": "0.2",
    ]

    /// A server on a fresh database with `overrides` on top of `fast`.
    func start(_ db: E2EDatabase, _ overrides: [String: String?] = [:]) throws -> BouncerProcess {
        try BouncerProcess(databaseURL: db.url, overrides: Self.fast.merging(overrides) { $1 })
    }

    /// A project with `pro` mapped and a webhook to `receiver`; the secret.
    func project(_ api: API, receiver: WebhookReceiver, events: [String]? = nil, url: String? = nil,
                 file: StaticString = #filePath, line: UInt = #line) throws -> (Tenant, String) {
        let tenant = try api.createProject(file: file, line: line)
        try api.mapProduct(tenant, "com.e2e.pro.monthly", ["pro"], file: file, line: line)
        var pairs: [(String, JSONValue)] = [("url", .string(url ?? receiver.url))]
        if let events { pairs.append(("events", .array(events.map { .string($0) }))) }
        let r = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/webhook", json: .object(JSONObject(pairs)),
                                    headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description, file: file, line: line)
        let secret = try XCTUnwrap(try r.json()["secret"]?.stringValue, r.description, file: file, line: line)
        return (tenant, secret)
    }

    /// A server on a fresh database (`overrides` on top of `fast`), a receiver answering `status`, and a project
    /// whose webhook (for `events`) points at the receiver.
    func startHooked(_ label: String, _ overrides: [String: String?], status: Int = 200, events: [String]? = nil)
        throws -> (db: E2EDatabase, server: BouncerProcess, api: API, receiver: WebhookReceiver, tenant: Tenant, secret: String)
    {
        let db = try E2EDatabase(label: label)
        let server = try start(db, overrides)
        let api = API(client: server.client)
        let receiver = try WebhookReceiver()
        if status != 200 { receiver.answer(status) }
        let (tenant, secret) = try project(api, receiver: receiver, events: events)
        return (db, server, api, receiver, tenant, secret)
    }

    /// Recomputes `v1=` for each secret over "<Bouncer-Timestamp>.<raw body>" and compares with the header.
    func assertSigned(_ request: LocalHTTPSServer.Request, secrets: [String],
                      file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(request.method, "POST", file: file, line: line)
        XCTAssertEqual(request.path, "/hooks", file: file, line: line)
        XCTAssertEqual(request.header("Content-Type"), "application/json", file: file, line: line)
        guard let timestamp = request.header("Bouncer-Timestamp"), let stamp = Int64(timestamp) else {
            return XCTFail("no Bouncer-Timestamp", file: file, line: line)
        }
        XCTAssertLessThan(abs(stamp - Int64(Date().timeIntervalSince1970)), 120, file: file, line: line)
        let message = Array("\(timestamp).".utf8) + request.body
        let expected = secrets.map { secret in
            "v1=" + HMAC.sha256(key: Array(secret.utf8), message: message).map { String(format: "%02x", $0) }.joined()
        }.joined(separator: ",")
        XCTAssertEqual(request.header("Bouncer-Signature"), expected, file: file, line: line)
        let body = try? JSONParser.parse(request.body)
        XCTAssertEqual(request.header("Bouncer-Event-Id"), body?["id"]?.stringValue, file: file, line: line)
    }

    /// The event without its random id and creation instant, checked apart.
    func assertEvent(_ event: JSONValue, type: String, project: String, user: String?, data: JSONValue,
                     file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(event.objectValue?.keys, ["id", "type", "created_at", "project_id", "user_id", "data"],
                       file: file, line: line)
        XCTAssertNotNil(event["id"]?.stringValue?.range(of: "^evt_[0-9a-f]{32}$", options: .regularExpression),
                        "\(event)", file: file, line: line)
        XCTAssertNotNil(event["created_at"]?.stringValue?.range(
            of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression), "\(event)", file: file, line: line)
        XCTAssertEqual(event["type"]?.stringValue, type, file: file, line: line)
        XCTAssertEqual(event["project_id"]?.stringValue, project, file: file, line: line)
        XCTAssertEqual(event["user_id"], user.map(JSONValue.string) ?? .null, file: file, line: line)
        XCTAssertEqual(event["data"], data, "\(type)", file: file, line: line)
    }

    static func subscriptionData(_ t: TransactionPayload, autoRenew: Bool = true) -> JSONValue {
        [
            "environment": "Sandbox", "original_transaction_id": .string(t.originalTransactionId),
            "transaction_id": .string(t.transactionId), "product_id": .string(t.productId),
            "expires_at": t.expiresDate.map { .string(E2E.iso($0)) } ?? .null, "auto_renew_enabled": .bool(autoRenew),
            "eligible_win_back_offer_ids": [],
        ]
    }

    static func grantedData(_ t: TransactionPayload, expires: Int64?) -> JSONValue {
        [
            "entitlement": "pro", "expires_at": expires.map { .string(E2E.iso($0)) } ?? .null,
            "environment": "Sandbox", "original_transaction_id": .string(t.originalTransactionId),
            "product_id": .string(t.productId),
        ]
    }

    static func revokedData(_ t: TransactionPayload, reason: String) -> JSONValue {
        [
            "entitlement": "pro", "reason": .string(reason), "environment": "Sandbox",
            "original_transaction_id": .string(t.originalTransactionId), "product_id": .string(t.productId),
        ]
    }

    // MARK: - Configuration

    func testConfigureShowRotateDeleteAndPing() throws {
        let db = try E2EDatabase(label: "webhook_config")
        let server = try start(db)
        defer { server.stopAndAssertCleanExit() }
        let api = API(client: server.client)
        let receiver = try WebhookReceiver()
        let tenant = try api.createProject()
        let path = "/v1/admin/projects/\(tenant.id)/webhook"

        assertError(try server.client.get(path, headers: E2E.admin), 404, "WEBHOOK_NOT_CONFIGURED")
        var r = try server.client.send("PUT", path, json: ["url": .string(receiver.url)], headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        var json = try r.json()
        let secret = try XCTUnwrap(json["secret"]?.stringValue)
        XCTAssertNotNil(secret.range(of: "^whsec_[0-9a-f]{64}$", options: .regularExpression), secret)
        XCTAssertEqual(json["url"]?.stringValue, receiver.url)
        XCTAssertEqual(json["events"]?.arrayValue?.count, 11)
        XCTAssertEqual(json["previous_secret_expires_at"], .null)
        // Stored sealed, never in clear.
        let stored = try db.query("SELECT sealed_secret FROM webhook_endpoints WHERE project_id = \(tenant.id)::uuid")
        let sealed = try XCTUnwrap(stored.first?.decode("sealed_secret", as: [UInt8].self))
        XCTAssertNil(String(decoding: sealed, as: UTF8.self).range(of: secret))

        // GET and a second PUT never show the secret; the second PUT keeps it and changes the events.
        r = try server.client.get(path, headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertNil(try r.json()["secret"])
        r = try server.client.send("PUT", path, json: ["url": .string(receiver.url), "events": ["ping", "entitlement.granted"]],
                                   headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        json = try r.json()
        XCTAssertNil(json["secret"])
        XCTAssertEqual(json["events"], ["entitlement.granted", "ping"])

        // Invalid event types: every problem named.
        r = try server.client.send("PUT", path, json: ["url": .string(receiver.url), "events": ["nope", "ping", "ping"]],
                                   headers: E2E.admin)
        assertError(r, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try r.json()["details"]?.arrayValue?.compactMap { $0["path"] }, [["events", "0"], ["events", "2"]])

        // Ping, signed with the one secret.
        r = try server.client.post("\(path)/test", json: [:], headers: E2E.admin)
        XCTAssertEqual(r.status, 202, r.description)
        let pingId = try XCTUnwrap(try r.json()["event_id"]?.stringValue)
        guard receiver.waitForEvents(1) else { return }
        assertSigned(receiver.requests[0], secrets: [secret])
        assertEvent(try receiver.events()[0], type: "ping", project: tenant.id, user: nil,
                    data: ["message": "Webhook test from Bouncer"])
        XCTAssertEqual(receiver.requests[0].header("Bouncer-Event-Id"), pingId)

        // Rotation: a new secret, shown once; both sign for a day (two v1= entries, the new one first).
        r = try server.client.post("\(path)/rotate-secret", json: [:], headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        let rotated = try XCTUnwrap(try r.json()["secret"]?.stringValue)
        XCTAssertNotEqual(rotated, secret)
        XCTAssertNotEqual(try r.json()["previous_secret_expires_at"], .null)
        r = try server.client.post("\(path)/test", json: [:], headers: E2E.admin)
        XCTAssertEqual(r.status, 202, r.description)
        guard receiver.waitForEvents(2) else { return }
        assertSigned(receiver.requests[1], secrets: [rotated, secret])

        // The deliveries list shows both pings delivered with their response codes.
        XCTAssertTrue(E2E.eventually {
            (try? server.client.get("\(path)/deliveries?status=delivered", headers: E2E.admin).json()["deliveries"]?
                .arrayValue?.count) == 2
        })
        r = try server.client.get("\(path)/deliveries?status=delivered", headers: E2E.admin)
        let first = try XCTUnwrap(try r.json()["deliveries"]?[1])
        XCTAssertEqual(first["event_id"]?.stringValue, pingId)
        XCTAssertEqual(first["status"], "delivered")
        XCTAssertEqual(first["attempts"]?[0]?["status_code"], 200)
        XCTAssertEqual(first["attempts"]?[0]?["error"], .null)
        assertError(try server.client.get("\(path)/deliveries?status=bogus", headers: E2E.admin), 400, "VALIDATION_ERROR")
        assertError(try server.client.post("\(path)/deliveries/evt_00000000000000000000000000000000/retry", json: [:],
                                           headers: E2E.admin), 404, "WEBHOOK_EVENT_NOT_FOUND")

        // The Python snippet of the README verifies the delivered request with the current secret.
        try assertPythonSnippetVerifies(receiver.requests[1], secret: rotated)

        r = try server.client.delete(path, headers: E2E.admin)
        XCTAssertEqual(r.status, 204, r.description)
        XCTAssertEqual(try db.count("webhook_events", project: tenant.id), 0)
        assertError(try server.client.delete(path, headers: E2E.admin), 404, "WEBHOOK_NOT_CONFIGURED")
    }

    /// README "Webhooks" Python snippet, run by python3 on the request as received.
    func assertPythonSnippetVerifies(_ request: LocalHTTPSServer.Request, secret: String,
                                     file: StaticString = #filePath, line: UInt = #line) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("whpy-\(E2E.uniqueId())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = Self.pythonSnippet + """

            import sys
            body = open(sys.argv[1], "rb").read()
            ok = verify(sys.argv[2], body, sys.argv[3], sys.argv[4], tolerance=600)
            bad = verify(sys.argv[2], body + b" ", sys.argv[3], sys.argv[4], tolerance=600)
            print("ok" if ok and not bad else "mismatch")
            """
        try script.write(to: dir.appendingPathComponent("verify.py"), atomically: true, encoding: .utf8)
        try Data(request.body).write(to: dir.appendingPathComponent("body"))
        let run = try ProcessRun.run(URL(fileURLWithPath: "/usr/bin/env"), [
            "python3", dir.appendingPathComponent("verify.py").path, dir.appendingPathComponent("body").path, secret,
            request.header("Bouncer-Timestamp") ?? "", request.header("Bouncer-Signature") ?? "",
        ])
        XCTAssertEqual(String(decoding: run.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), "ok",
                       run.stderr, file: file, line: line)

        // The Node snippet too, when node is installed.
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/node") else { return }
        let js = Self.nodeSnippet + """

            const fs = require("node:fs");
            const [body, secret, ts, sig] = [fs.readFileSync(process.argv[2]), ...process.argv.slice(3)];
            const ok = verify(secret, body, ts, sig, 600) && !verify(secret, Buffer.concat([body, Buffer.from(" ")]), ts, sig, 600);
            console.log(ok ? "ok" : "mismatch");
            """
        try js.write(to: dir.appendingPathComponent("verify.js"), atomically: true, encoding: .utf8)
        let node = try ProcessRun.run(URL(fileURLWithPath: "/usr/bin/node"), [
            dir.appendingPathComponent("verify.js").path, dir.appendingPathComponent("body").path, secret,
            request.header("Bouncer-Timestamp") ?? "", request.header("Bouncer-Signature") ?? "",
        ])
        XCTAssertEqual(String(decoding: node.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), "ok",
                       node.stderr, file: file, line: line)
    }

    /// The README shows exactly these snippets.
    func testREADMEShowsTheTestedSnippets() throws {
        let readme = try String(contentsOf: TestPaths.repoRoot.appendingPathComponent("README.md"), encoding: .utf8)
        XCTAssertTrue(readme.contains("```python\n" + Self.pythonSnippet + "\n```"))
        XCTAssertTrue(readme.contains("```js\n" + Self.nodeSnippet + "\n```"))
    }

    /// Kept identical to the README's Node example.
    static let nodeSnippet = """
        const crypto = require("node:crypto");

        function verify(secret, body /* Buffer */, timestamp, signature, tolerance = 300) {
          if (Math.abs(Date.now() / 1000 - Number(timestamp)) > tolerance) return false;
          const expected = crypto.createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex");
          return signature.split(",").map((s) => s.trim()).filter((s) => s.startsWith("v1="))
            .some((s) => s.length === 67 && crypto.timingSafeEqual(Buffer.from(s.slice(3)), Buffer.from(expected)));
        }
        """

    /// Kept identical to the README's Python example.
    static let pythonSnippet = """
        import hashlib, hmac, time

        def verify(secret: str, body: bytes, timestamp: str, signature: str, tolerance: int = 300) -> bool:
            if abs(time.time() - int(timestamp)) > tolerance:
                return False
            expected = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
            return any(hmac.compare_digest(expected, part.strip()[3:])
                       for part in signature.split(",") if part.strip().startswith("v1="))
        """

    // MARK: - Events from purchases, notifications and time

    func testPurchaseRenewalRefundTransferAndExpiryEvents() throws {
        // One delivery thread: events of different users then also arrive in outbox order, so this test can assert
        // one sequence (per-user order under concurrency is the two-instance test's).
        let (db, server, api, receiver, tenant, secret) = try startHooked("webhook_events", ["BOUNCER_WEBHOOK_CONCURRENCY": "1"])
        defer { server.stopAndAssertCleanExit() }

        // A purchase bound to alice: subscription.started, then entitlement.granted.
        var t = TransactionPayload(bundleId: tenant.bundleId)
        t.purchaseDate = E2E.ms(-600)
        t.signedDate = t.purchaseDate
        let r = try api.postReceipt(tenant.publicKey, try t.mint(), user: "alice")
        XCTAssertEqual(r.status, 201, r.description)
        guard receiver.waitForEvents(2) else { return }
        var events = try receiver.events()
        receiver.requests.forEach { assertSigned($0, secrets: [secret]) }
        assertEvent(events[0], type: "subscription.started", project: tenant.id, user: "alice",
                    data: Self.subscriptionData(t))
        assertEvent(events[1], type: "entitlement.granted", project: tenant.id, user: "alice",
                    data: Self.grantedData(t, expires: t.expiresDate))

        // DID_RENEW: a new transaction that ends later.
        var renewed = TransactionPayload(bundleId: tenant.bundleId, originalTransactionId: t.originalTransactionId)
        renewed.purchaseDate = E2E.ms(-60)
        renewed.signedDate = E2E.ms(-1)
        renewed.expiresDate = E2E.ms(60 * 86_400)
        var n = NotificationPayload("DID_RENEW", bundleId: tenant.bundleId, transaction: renewed)
        XCTAssertEqual(try api.notify(tenant.publicKey, try n.mint()).status, 200)
        guard receiver.waitForEvents(3) else { return }
        assertEvent(try receiver.events()[2], type: "subscription.renewed", project: tenant.id, user: "alice",
                    data: Self.subscriptionData(renewed))

        // The same purchase restored by bob (transfer policy): alice loses it, bob gets it.
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try renewed.mint(), user: "bob").status, 201)
        guard receiver.waitForEvents(7) else { return }
        events = try receiver.events()
        assertEvent(events[3], type: "entitlement.revoked", project: tenant.id, user: "alice",
                    data: Self.revokedData(renewed, reason: "transferred"))
        assertEvent(events[4], type: "purchase.transferred", project: tenant.id, user: "bob", data: [
            "environment": "Sandbox", "original_transaction_id": .string(t.originalTransactionId),
            "from_user_id": "alice", "to_user_id": "bob", "policy": "transfer",
        ])
        assertEvent(events[5], type: "subscription.started", project: tenant.id, user: "bob",
                    data: Self.subscriptionData(renewed))
        assertEvent(events[6], type: "entitlement.granted", project: tenant.id, user: "bob",
                    data: Self.grantedData(renewed, expires: renewed.expiresDate))

        // REFUND of the renewal: transaction.refunded, then the entitlement goes (refunded).
        var refunded = renewed
        refunded.revocationDate = E2E.ms(-1)
        refunded.revocationReason = 1
        refunded.signedDate = E2E.ms(0)
        n = NotificationPayload("REFUND", bundleId: tenant.bundleId, transaction: refunded)
        XCTAssertEqual(try api.notify(tenant.publicKey, try n.mint()).status, 200)
        guard receiver.waitForEvents(9) else { return }
        events = try receiver.events()
        assertEvent(events[7], type: "transaction.refunded", project: tenant.id, user: "bob", data: [
            "environment": "Sandbox", "transaction_id": .string(renewed.transactionId),
            "original_transaction_id": .string(t.originalTransactionId), "product_id": "com.e2e.pro.monthly",
            "revocation_date": .string(E2E.iso(refunded.revocationDate ?? 0)), "revocation_reason": 1,
            "revocation_type": .null, "revocation_percentage": .null,
        ])
        assertEvent(events[8], type: "entitlement.revoked", project: tenant.id, user: "bob",
                    data: Self.revokedData(renewed, reason: "refunded"))

        // Expiry by the passage of time: a subscription that ends in 4 s; no write happens, the sweep announces it.
        var short = TransactionPayload(bundleId: tenant.bundleId)
        short.expiresDate = E2E.ms(4)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try short.mint(), user: "carol").status, 201)
        guard receiver.waitForEvents(13) else { return XCTFail(server.stderr) }
        events = try receiver.events()
        assertEvent(events[9], type: "subscription.started", project: tenant.id, user: "carol",
                    data: Self.subscriptionData(short))
        assertEvent(events[10], type: "entitlement.granted", project: tenant.id, user: "carol",
                    data: Self.grantedData(short, expires: short.expiresDate))
        var expired = Self.subscriptionData(short).objectValue ?? JSONObject()
        expired["expired_at"] = .string(E2E.iso(short.expiresDate ?? 0))
        assertEvent(events[11], type: "subscription.expired", project: tenant.id, user: "carol", data: .object(expired))
        assertEvent(events[12], type: "entitlement.revoked", project: tenant.id, user: "carol",
                    data: Self.revokedData(short, reason: "expired"))
        receiver.requests.forEach { assertSigned($0, secrets: [secret]) }

        // Exactly once: no further events, every event delivered once, outbox rows all delivered.
        Thread.sleep(forTimeInterval: 1)
        XCTAssertEqual(receiver.requests.count, 13)
        XCTAssertEqual(Set(receiver.requests.compactMap { $0.header("Bouncer-Event-Id") }).count, 13)
        let rows = try db.query("""
            SELECT count(*) FILTER (WHERE status = 'delivered')::int8 AS delivered, count(*)::int8 AS total
            FROM webhook_events WHERE project_id = \(tenant.id)::uuid
            """)
        XCTAssertEqual(try rows.first?.decode("delivered", as: Int64.self), 13)
        XCTAssertEqual(try rows.first?.decode("total", as: Int64.self), 13)
    }

    /// Renewal-info changes: billing retry, grace period (which grants again), auto-renew turned off.
    func testRenewalFailedGracePeriodAndAutoRenewEvents() throws {
        let (_, server, api, receiver, tenant, secret) = try startHooked("webhook_grace", ["BOUNCER_WEBHOOK_CONCURRENCY": "1"])
        defer { server.stopAndAssertCleanExit() }

        // Expired yesterday: binding it announces nothing (no active subscription, no entitlement).
        var t = TransactionPayload(bundleId: tenant.bundleId)
        t.purchaseDate = E2E.ms(-31 * 86_400)
        t.originalPurchaseDate = t.purchaseDate
        t.expiresDate = E2E.ms(-86_400)
        t.signedDate = E2E.ms(-31 * 86_400)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try t.mint(), user: "erin").status, 201)

        let grace = E2E.ms(15 * 86_400)
        var resigned = t
        resigned.signedDate = E2E.ms(-60)
        var renewal = RenewalPayload(originalTransactionId: t.originalTransactionId)
        renewal.isInBillingRetryPeriod = true
        renewal.gracePeriodExpiresDate = grace
        renewal.expirationIntent = 2
        renewal.signedDate = E2E.ms(-60)
        let failed = NotificationPayload("DID_FAIL_TO_RENEW", "GRACE_PERIOD", bundleId: tenant.bundleId,
                                         transaction: resigned, renewal: renewal, signedDate: E2E.ms(-60))
        XCTAssertEqual(try api.notify(tenant.publicKey, try failed.mint()).status, 200)
        guard receiver.waitForEvents(3) else { return }
        var events = try receiver.events()
        assertEvent(events[0], type: "subscription.renewal_failed", project: tenant.id, user: "erin",
                    data: Self.subscriptionData(t))
        var graceData = Self.subscriptionData(t).objectValue ?? JSONObject()
        graceData["grace_period_expires_at"] = .string(E2E.iso(grace))
        assertEvent(events[1], type: "subscription.grace_period_started", project: tenant.id, user: "erin",
                    data: .object(graceData))
        assertEvent(events[2], type: "entitlement.granted", project: tenant.id, user: "erin",
                    data: Self.grantedData(t, expires: grace))

        // Auto-renew turned off (still in grace): only auto_renew_changed.
        renewal.autoRenewStatus = 0
        renewal.signedDate = E2E.ms(-30)
        resigned.signedDate = E2E.ms(-30)
        let off = NotificationPayload("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", bundleId: tenant.bundleId,
                                      transaction: resigned, renewal: renewal, signedDate: E2E.ms(-30))
        XCTAssertEqual(try api.notify(tenant.publicKey, try off.mint()).status, 200)
        guard receiver.waitForEvents(4) else { return }
        events = try receiver.events()
        var offData = Self.subscriptionData(t, autoRenew: false).objectValue ?? JSONObject()
        offData["auto_renew_product_id"] = "com.e2e.pro.monthly"
        assertEvent(events[3], type: "subscription.auto_renew_changed", project: tenant.id, user: "erin",
                    data: .object(offData))
        receiver.requests.forEach { assertSigned($0, secrets: [secret]) }
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(receiver.requests.count, 4)
    }

    // MARK: - Retries, failure, manual retry

    func testRetriesAfter500sThenFailsAfterMaxAgeAndManualRetryDelivers() throws {
        let (_, server, _, receiver, tenant, secret) = try startHooked(
            "webhook_retry", ["BOUNCER_WEBHOOK_MAX_AGE_SECONDS": "2"], status: 500, events: ["ping"])
        defer { server.stopAndAssertCleanExit() }
        let path = "/v1/admin/projects/\(tenant.id)/webhook"
        var r = try server.client.post("\(path)/test", json: [:], headers: E2E.admin)
        XCTAssertEqual(r.status, 202, r.description)
        let id = try XCTUnwrap(try r.json()["event_id"]?.stringValue)

        // 500s are retried (backoff from 0.1 s) until the 2 s maximum age, then the event is failed.
        XCTAssertTrue(E2E.eventually {
            (try? server.client.get("\(path)/deliveries?status=failed", headers: E2E.admin).json()["deliveries"]?
                .arrayValue?.count) == 1
        })
        r = try server.client.get("\(path)/deliveries?status=failed", headers: E2E.admin)
        let failed = try XCTUnwrap(try r.json()["deliveries"]?[0])
        XCTAssertEqual(failed["event_id"]?.stringValue, id)
        let attempts = try XCTUnwrap(failed["attempts"]?.arrayValue)
        XCTAssertGreaterThanOrEqual(attempts.count, 3, "\(failed)")
        XCTAssertEqual(attempts.filter { $0["status_code"] != 500 }, [])
        XCTAssertEqual(attempts.first?["error"], "HTTP 500")
        XCTAssertEqual(attempts.map { $0["attempt"]?.int64Value ?? 0 }, (1...Int64(attempts.count)).map { $0 })
        XCTAssertEqual(failed["next_attempt_at"], .null)
        let sent = receiver.requests.count
        XCTAssertEqual(sent, attempts.count, "one request per recorded attempt")
        receiver.requests.forEach { assertSigned($0, secrets: [secret]) }
        XCTAssertEqual(Set(receiver.requests.compactMap { $0.header("Bouncer-Event-Id") }), [id])

        // Replay after the receiver is fixed.
        receiver.answer(204)
        r = try server.client.post("\(path)/deliveries/\(id)/retry", json: [:], headers: E2E.admin)
        XCTAssertEqual(r.status, 202, r.description)
        XCTAssertEqual(try r.json()["status"], "pending")
        XCTAssertTrue(E2E.eventually {
            (try? server.client.get("\(path)/deliveries?status=delivered", headers: E2E.admin).json()["deliveries"]?
                .arrayValue?.count) == 1
        })
        r = try server.client.get("\(path)/deliveries", headers: E2E.admin)
        let delivered = try XCTUnwrap(try r.json()["deliveries"]?[0])
        XCTAssertEqual(delivered["attempts"]?.arrayValue?.last?["status_code"], 204)
        XCTAssertEqual(receiver.requests.count, sent + 1)
    }

    // MARK: - kill -9

    func testKill9BetweenChangeAndDeliveryLosesNothing() throws {
        let db = try E2EDatabase(label: "webhook_kill")
        let receiver = try WebhookReceiver()
        // Stalled: the receiver takes the first request and does not answer before the kill.
        receiver.answer(200, delay: 30)
        var server = try start(db)
        let api = API(client: server.client)
        let (tenant, secret) = try project(api, receiver: receiver)
        var t = TransactionPayload(bundleId: tenant.bundleId)
        t.expiresDate = E2E.ms(30 * 86_400)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try t.mint(), user: "dave").status, 201)
        // The change's two events are derived shortly after its commit.
        XCTAssertTrue(try E2E.eventually { try db.count("webhook_events", project: tenant.id) == 2 })
        guard receiver.waitForEvents(1) else { return }
        kill(server.process.processIdentifier, SIGKILL)
        server.process.waitUntilExit()
        XCTAssertEqual(try db.count("webhook_events", project: tenant.id), 2)
        let inFlight = try XCTUnwrap(receiver.requests.first?.header("Bouncer-Event-Id"))

        // Restarted: the dead instance's lease (20 s) expires, the event in flight is sent again (at-least-once:
        // receivers deduplicate by Bouncer-Event-Id), then the next one, in order.
        receiver.answer(200)
        server = try start(db)
        defer { server.stopAndAssertCleanExit() }
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let delivered = try db.query("""
                SELECT count(*)::int8 AS n FROM webhook_events WHERE project_id = \(tenant.id)::uuid AND status = 'delivered'
                """).first?.decode("n", as: Int64.self)
            if delivered == 2 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let after = Array(receiver.requests.dropFirst())
        let types = try after.map { try JSONParser.parse($0.body)["type"]?.stringValue ?? "" }
        XCTAssertEqual(types, ["subscription.started", "entitlement.granted"])
        XCTAssertEqual(after.first?.header("Bouncer-Event-Id"), inFlight)
        after.forEach { assertSigned($0, secrets: [secret]) }
    }

    /// The deriver killed in the middle of a batch (one event written, the next waiting for its user's lock): the
    /// batch is one transaction with the log rows' deletion, so after a restart every event of the change exists
    /// once and is delivered once. The receipt's own transaction never waits for that lock.
    func testKill9WhileDerivingDerivesEachEventExactlyOnce() throws {
        let db = try E2EDatabase(label: "webhook_derive_kill")
        let receiver = try WebhookReceiver()
        var server = try start(db)
        let api = API(client: server.client)
        let (tenant, _) = try project(api, receiver: receiver)
        let t = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try t.mint(), user: "alice").status, 201)
        XCTAssertTrue(try E2E.eventually { try delivered(db, tenant) == 2 })

        // bob's events wait behind a lock this test holds; bob's restore (a transfer) still answers at once.
        let blocker = try Connection(settings: db.settings)
        _ = try blocker.query("SELECT pg_advisory_lock(16979, hashtext(\(tenant.id)::text || '/' || 'bob'))")
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try t.mint(), user: "bob").status, 201)
        XCTAssertTrue(try E2E.eventually {
            try db.query("""
                SELECT count(*)::int8 AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted
                """).first?.decode("n", as: Int64.self) == 1
        }, "the deriver waits for bob's lock, alice's entitlement.revoked written but not committed")
        kill(server.process.processIdentifier, SIGKILL)
        server.process.waitUntilExit()
        XCTAssertEqual(try db.count("webhook_events", project: tenant.id), 2)
        XCTAssertEqual(try db.count("purchase_changes", project: tenant.id), 1)

        // The orphaned batch finishes or not; either way the restarted instance ends with each event once.
        _ = try blocker.query("SELECT pg_advisory_unlock_all()")
        server = try start(db)
        defer { server.stopAndAssertCleanExit() }
        XCTAssertTrue(try E2E.eventually { try delivered(db, tenant) == 6 })
        Thread.sleep(forTimeInterval: 1)
        XCTAssertEqual(try db.count("purchase_changes", project: tenant.id), 0)
        let rows = try db.query("""
            SELECT type, user_id FROM webhook_events WHERE project_id = \(tenant.id)::uuid ORDER BY seq
            """).map { "\(try $0.decode("user_id", as: String.self)) \(try $0.decode("type", as: String.self))" }
        XCTAssertEqual(rows, ["alice subscription.started", "alice entitlement.granted", "alice entitlement.revoked",
                              "bob purchase.transferred", "bob subscription.started", "bob entitlement.granted"])
        let ids = receiver.requests.compactMap { $0.header("Bouncer-Event-Id") }
        XCTAssertEqual(ids.count, 6, "each event sent once")
        XCTAssertEqual(Set(ids).count, 6)
    }

    /// Events of the tenant's project delivered so far.
    func delivered(_ db: E2EDatabase, _ tenant: Tenant) throws -> Int64? {
        try db.query("""
            SELECT count(*)::int8 AS n FROM webhook_events WHERE project_id = \(tenant.id)::uuid AND status = 'delivered'
            """).first?.decode("n", as: Int64.self)
    }

    // MARK: - Two instances, order per user

    func testTwoInstancesNeverDoubleDeliverAndKeepOrderPerUser() throws {
        let db = try E2EDatabase(label: "webhook_two")
        let a = try start(db)
        let b = try start(db)
        defer {
            a.stopAndAssertCleanExit()
            b.stopAndAssertCleanExit()
        }
        let receiver = try WebhookReceiver()
        receiver.answer(200, delay: 0.05)
        let api = API(client: a.client)
        let (tenant, _) = try project(api, receiver: receiver)
        try api.mapProduct(tenant, "com.e2e.pro.yearly", ["pro", "yearly"])

        // 8 users × 2 purchases each, posted concurrently to both instances.
        let users = (0..<8).map { "u\($0)" }
        let payloads: [(String, TransactionPayload)] = users.flatMap { user in
            ["com.e2e.pro.monthly", "com.e2e.pro.yearly"].map { product in
                var t = TransactionPayload(bundleId: tenant.bundleId)
                t.productId = product
                return (user, t)
            }
        }
        let minted = try payloads.map { ($0.0, try $0.1.mint()) }
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: minted.count) { i in
            let client = i % 2 == 0 ? a.client : b.client
            let status = (try? API(client: client).postReceipt(tenant.publicKey, minted[i].1, user: minted[i].0))?.status
            statuses.withLock { $0.append(status ?? -1) }
        }
        XCTAssertEqual(statuses.withLock { $0 }.filter { $0 != 201 }, [])
        // Every change derived (shortly after its commit), then the events counted.
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
        let total = try db.count("webhook_events", project: tenant.id)
        // Per user: 2 × subscription.started and entitlement.granted for pro and yearly (4 or 5 events by order).
        XCTAssertGreaterThanOrEqual(total, 8 * 4)
        guard receiver.waitForEvents(total) else { return }
        Thread.sleep(forTimeInterval: 0.5)
        let ids = receiver.requests.compactMap { $0.header("Bouncer-Event-Id") }
        XCTAssertEqual(ids.count, total, "no event sent twice")
        XCTAssertEqual(Set(ids).count, total)
        XCTAssertEqual(Set(receiver.maxConcurrentPerEvent.values), [1])
        // Attempts were recorded by the instances that made them (which share depends on timing).
        let instances = try db.query("""
            SELECT count(DISTINCT instance)::int8 AS n FROM webhook_attempts WHERE project_id = \(tenant.id)::uuid
            """).first?.decode("n", as: Int64.self)
        XCTAssertGreaterThanOrEqual(instances ?? 0, 1)
        // Order: per user, arrival order equals outbox order.
        let order = try db.query("""
            SELECT id, user_id FROM webhook_events WHERE project_id = \(tenant.id)::uuid ORDER BY seq
            """)
        var expected: [String: [String]] = [:]
        for row in order {
            expected[try row.decode("user_id", as: String.self), default: []].append(try row.decode("id", as: String.self))
        }
        var arrived: [String: [String]] = [:]
        for event in try receiver.events() {
            arrived[event["user_id"]?.stringValue ?? "", default: []].append(event["id"]?.stringValue ?? "")
        }
        XCTAssertEqual(arrived, expected)
    }

    // MARK: - SSRF

    func testPrivateAndLoopbackURLsAreRefusedAtConfigurationAndAtConnection() throws {
        let db = try E2EDatabase(label: "webhook_ssrf")
        // Strict: no private networks (the default); an API-only instance.
        let strict = try start(db, ["BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": nil, "BOUNCER_WEBHOOK_CONCURRENCY": "0"])
        defer { strict.stopAndAssertCleanExit() }
        let api = API(client: strict.client)
        let tenant = try api.createProject()
        let path = "/v1/admin/projects/\(tenant.id)/webhook"
        for url in ["https://127.0.0.1/hook", "https://10.1.2.3/hook", "https://169.254.169.254/latest",
                    "https://[::1]/hook", "https://localhost/hook", "https://[::ffff:127.0.0.1]/hook",
                    "https://192.168.1.10/", "https://[fd00::1]/", "https://0.0.0.0/"] {
            let r = try strict.client.send("PUT", path, json: ["url": .string(url)], headers: E2E.admin)
            assertError(r, 400, "WEBHOOK_URL_NOT_ALLOWED")
            XCTAssertEqual(try r.json()["details"]?[0]?["path"], ["url"], url)
        }
        for url in ["http://example.com/hook", "ftp://example.com/", "https://user:pw@example.com/", "not a url"] {
            let r = try strict.client.send("PUT", path, json: ["url": .string(url)], headers: E2E.admin)
            assertError(r, 400, "WEBHOOK_URL_NOT_ALLOWED")
        }
        XCTAssertEqual(try db.count("webhook_endpoints"), 0)

        // At connection time: a webhook stored by a permissive instance is still refused by a strict dispatcher,
        // which never connects to the loopback receiver.
        let permissive = try start(db, ["BOUNCER_WEBHOOK_CONCURRENCY": "0"])
        defer { permissive.stopAndAssertCleanExit() }
        let receiver = try WebhookReceiver()
        let (other, _) = try project(API(client: permissive.client), receiver: receiver, events: ["ping"],
                                     url: "https://127.0.0.1:\(receiver.server.port)/hooks")
        let dispatcher = try start(db, ["BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": nil])
        defer { dispatcher.stopAndAssertCleanExit() }
        let r = try permissive.client.post("/v1/admin/projects/\(other.id)/webhook/test", json: [:], headers: E2E.admin)
        XCTAssertEqual(r.status, 202, r.description)
        XCTAssertTrue(E2E.eventually {
            let rows = try? db.query("SELECT error FROM webhook_attempts WHERE project_id = \(other.id)::uuid")
            return (rows?.count ?? 0) > 0
        })
        let error = try db.query("SELECT error, status_code FROM webhook_attempts WHERE project_id = \(other.id)::uuid")
        XCTAssertEqual(try error.first?.decode("error", as: String?.self),
                       "addressNotAllowed: 127.0.0.1 resolves only to addresses that are not allowed")
        XCTAssertEqual(try error.first?.decode("status_code", as: Int?.self), nil)
        XCTAssertEqual(receiver.requests.count, 0)
    }
}
