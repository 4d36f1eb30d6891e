import Foundation
import Glibc
import JSON
import XCTest

/// `bouncer serve` as a real process with its embedded PostgreSQL: rate limits answer 429 at the configured
/// rate, health routes are never limited, and `/metrics` (token-protected) shows the live counts.
final class OperationsExecutableE2ETests: XCTestCase {
    func testRateLimitsAndMetricsEndToEnd() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("bouncer-ops-\(UUID().uuidString)")
        // As root the embedded PostgreSQL runs as `postgres`, which must be able to reach its data directory.
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: dir) }
        let metricsToken = "metrics-token-0123456789abcdef0123456789"
        let p = try BouncerProcess(overrides: [
            "BOUNCER_DATA_DIR": dir.appendingPathComponent("data").path, "BOUNCER_METRICS_TOKEN": metricsToken,
            "BOUNCER_RATE_LIMIT_PUBLIC_KEY": "1", "BOUNCER_RATE_LIMIT_PUBLIC_KEY_BURST": "2",
            "BOUNCER_RATE_LIMIT_CLIENT": "1000", "BOUNCER_ADMIN_TOKEN": "admin-token-0123456789abcdef0123456789",
            "BOUNCER_RATE_LIMIT_ADMIN": "0.5", "BOUNCER_RATE_LIMIT_ADMIN_BURST": "1",
        ])
        let port = p.port

        let c = try TestClient(port: port)
        let key = "pk_" + String(repeating: "ab", count: 16)
        func get(_ path: String, _ extra: String = "") throws -> TestClient.Response {
            try c.send("GET \(path) HTTP/1.1\r\nHost: t\r\n\(extra)\r\n")
            return try c.readResponse()
        }
        // Burst 2 at 1/s: the third request within a second is limited (unknown key: the API says 401 first).
        XCTAssertEqual(try get("/v1/subscriptions/\(key)/u1").status, 401)
        XCTAssertEqual(try get("/v1/subscriptions/\(key)/u2").status, 401)
        let limited = try get("/v1/subscriptions/\(key)/u3")
        XCTAssertEqual(limited.status, 429)
        XCTAssertEqual(limited.header("Retry-After"), "1")
        XCTAssertEqual(limited.header("RateLimit-Limit"), "2")
        XCTAssertEqual(limited.header("RateLimit-Remaining"), "0")
        XCTAssertEqual(limited.header("RateLimit-Reset"), "2")
        XCTAssertEqual(limited.header("Content-Type"), "application/json")
        try assertErrorShape(limited, code: "RATE_LIMITED", error: "Too many requests.")
        // Another key has its own bucket; a request presenting a secret key is not in the public-key bucket.
        XCTAssertEqual(try get("/v1/subscriptions/pk_\(String(repeating: "cd", count: 16))/u1").status, 401)
        XCTAssertEqual(try get("/v1/subscriptions/\(key)/u1", "Authorization: Bearer sk_\(String(repeating: "0", count: 64))\r\n").status, 401)
        // Operational routes are never limited.
        for _ in 0..<5 { XCTAssertEqual(try get("/healthz").status, 200) }
        // The admin token has one bucket for all its admin traffic: 1 at once (creating the project), then one per 2 s.
        let admin = "Authorization: Bearer admin-token-0123456789abcdef0123456789\r\n"
        let create = #"{"name":"ops","bundle_id":"com.example.ops"}"#
        try c.send("POST /v1/admin/projects HTTP/1.1\r\nHost: t\r\n\(admin)Content-Type: application/json\r\n"
                   + "Content-Length: \(create.utf8.count)\r\n\r\n\(create)")
        let project = try c.readResponse()
        XCTAssertEqual(project.status, 201, project.text)
        let projectKey = try XCTUnwrap(project.text.range(of: #""public_key":"(pk_[0-9a-f]+)""#, options: .regularExpression)
            .map { String(project.text[$0].dropFirst(14).dropLast()) })
        let adminLimited = try get("/v1/admin/projects", admin)
        XCTAssertEqual(adminLimited.status, 429)
        XCTAssertEqual(adminLimited.header("Retry-After"), "2")
        // The benchmark routes exist only in bench builds (-DBOUNCER_BENCH_ROUTES), never in this binary.
        for path in ["/v1/ping", "/v1/ping/pooled"] {
            let ping = try get(path)
            XCTAssertEqual(ping.status, 404, path)
            try assertErrorShape(ping, code: "NOT_FOUND")
        }
        // A notification signed by the test PKI (chain to the configured test root) is counted by type.
        let notification = try signedNotification(bundleId: "com.example.ops")
        try c.send("POST /v1/notifications/\(projectKey) HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                   + "Content-Length: \(notification.utf8.count)\r\n\r\n\(notification)")
        let stored = try c.readResponse()
        XCTAssertEqual(stored.status, 200, stored.text)
        // After the refill interval the key is served again.
        usleep(1_100_000)
        XCTAssertEqual(try get("/v1/subscriptions/\(key)/u4").status, 401)

        let denied = try get("/metrics")
        XCTAssertEqual(denied.status, 401)
        XCTAssertEqual(denied.header("WWW-Authenticate"), "Bearer")
        try assertErrorShape(denied, code: "AUTH_INVALID_METRICS_TOKEN", error: "A valid metrics token is required.")
        XCTAssertEqual(try get("/metrics", "Authorization: Bearer wrong-token-0123456789\r\n").status, 401)
        let metrics = try get("/metrics", "Authorization: Bearer \(metricsToken)\r\n")
        XCTAssertEqual(metrics.status, 200)
        XCTAssertEqual(metrics.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        let lines = Set(metrics.text.split(separator: "\n").map(String.init))
        for expected in [
            #"bouncer_http_requests_total{route="/v1/subscriptions/:publicKey/:userId",method="GET",status="401"} 5"#,
            #"bouncer_http_requests_total{route="/v1/subscriptions/:publicKey/:userId",method="GET",status="429"} 1"#,
            #"bouncer_http_requests_total{route="/healthz",method="GET",status="200"} 5"#,
            #"bouncer_http_requests_total{route="/metrics",method="GET",status="401"} 2"#,
            #"bouncer_http_request_duration_seconds_count{route="/healthz",method="GET"} 5"#,
            #"bouncer_rate_limited_total{scope="public_key"} 1"#,
            #"bouncer_rate_limited_total{scope="client"} 0"#,
            #"bouncer_rate_limited_total{scope="admin"} 1"#,
            #"bouncer_rate_limited_total{scope="secret_key"} 0"#,
            #"bouncer_http_requests_total{route="/v1/admin/projects",method="GET",status="429"} 1"#,
            #"bouncer_http_open_connections 1"#,
            "# TYPE bouncer_webhook_derive_lag_seconds gauge",
            "bouncer_webhook_derive_lag_seconds 0",  // the notification's facts were derived long before
            "# TYPE bouncer_receipt_batches_total counter",
            "bouncer_receipt_batches_total 0",  // a notification is not group-committed
            "# TYPE bouncer_receipt_batch_seconds_total counter",
            "bouncer_receipt_batch_seconds_total 0",
            #"bouncer_receipts_batched_total{waited="no"} 0"#,
            #"bouncer_receipts_batched_total{waited="yes"} 0"#,
            #"bouncer_access_log_dropped_lines_total 0"#,
            #"bouncer_notifications_total{type="SUBSCRIBED",subtype="INITIAL_BUY"} 1"#,
            #"bouncer_verifications_total{kind="notification",result="ok"} 1"#,
            #"bouncer_chain_cache_total{result="miss"} 1"#,
            #"bouncer_chain_cache_total{result="hit"} 0"#,
            #"bouncer_db_pool_timeouts_total 0"#,
            "# TYPE bouncer_http_request_duration_seconds histogram",
        ] {
            XCTAssertTrue(lines.contains(expected), "missing \(expected) in\n\(metrics.text)")
        }
        XCTAssertTrue(lines.contains { $0.hasPrefix("bouncer_db_pool_connections{state=\"idle\"} ") })
        let rss = lines.first { $0.hasPrefix("bouncer_process_resident_memory_bytes ") }.flatMap { Int($0.split(separator: " ")[1]) }
        XCTAssertGreaterThan(rss ?? 0, 1_000_000)
        XCTAssertFalse(metrics.text.contains(key), "no keys in labels")
        XCTAssertFalse(metrics.text.contains(projectKey), "no keys in labels")

        XCTAssertEqual(p.stop(), 0, p.stderr)
    }

    /// The client scope limits the forwarded client when the peer is a trusted proxy, and the peer itself otherwise:
    /// behind a balancer, one abusive client does not exhaust every other client's bucket.
    func testClientRateLimitFollowsForwardedClientOnlyFromTrustedProxies() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("bouncer-xff-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: dir) }
        func start(trusted: String) throws -> BouncerProcess {
            try BouncerProcess(overrides: [
                "BOUNCER_DATA_DIR": dir.appendingPathComponent("data").path,
                "BOUNCER_RATE_LIMIT_CLIENT": "0.01", "BOUNCER_RATE_LIMIT_CLIENT_BURST": "1",
                "BOUNCER_TRUSTED_PROXIES": trusted,
            ])
        }
        let key = "pk_" + String(repeating: "ab", count: 16)
        func status(_ c: TestClient, forwardedFor: String) throws -> Int {
            try c.send("GET /v1/subscriptions/\(key)/u HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: \(forwardedFor)\r\n\r\n")
            return try c.readResponse().status
        }
        // Trusted peer: each forwarded client has its own bucket of one.
        var p = try start(trusted: "127.0.0.1/32")
        var c = try TestClient(port: p.port)
        XCTAssertEqual(try status(c, forwardedFor: "198.51.100.7"), 401)
        XCTAssertEqual(try status(c, forwardedFor: "198.51.100.7"), 429)
        XCTAssertEqual(try status(c, forwardedFor: "198.51.100.8"), 401)
        // IPv6 clients are keyed by their /64: a new address in the same /64 finds the bucket spent.
        XCTAssertEqual(try status(c, forwardedFor: "2001:db8:1:2::7"), 401)
        XCTAssertEqual(try status(c, forwardedFor: "2001:db8:1:2:aaaa::8"), 429)
        XCTAssertEqual(try status(c, forwardedFor: "2001:db8:1:3::7"), 401)
        p.stop()
        // Untrusted peer: the header is ignored and the peer's one bucket is spent by the first request.
        p = try start(trusted: "10.0.0.0/8")
        c = try TestClient(port: p.port)
        XCTAssertEqual(try status(c, forwardedFor: "198.51.100.7"), 401)
        XCTAssertEqual(try status(c, forwardedFor: "198.51.100.8"), 429)
        XCTAssertEqual(p.stop(), 0, p.stderr)
    }

    /// `{"signedPayload": …}` for a SUBSCRIBED notification with a nested transaction, both signed by
    /// the test PKI (`TestPKI`, Apple's JWS shape).
    func signedNotification(bundleId: String) throws -> String {
        let now = Int(Date().timeIntervalSince1970 * 1000)
        let transaction = try TestPKI.sign(#"{"transactionId":"7000000000000001","originalTransactionId":"7000000000000001","bundleId":"\#(bundleId)","productId":"ops.monthly","purchaseDate":\#(now - 1000),"originalPurchaseDate":\#(now - 1000),"expiresDate":\#(now + 86_400_000),"type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":\#(now),"environment":"Sandbox","quantity":1}"#)
        let outer = try TestPKI.sign(#"{"notificationType":"SUBSCRIBED","subtype":"INITIAL_BUY","notificationUUID":"\#(UUID().uuidString.lowercased())","version":"2.0","signedDate":\#(now),"data":{"bundleId":"\#(bundleId)","environment":"Sandbox","signedTransactionInfo":"\#(transaction)"}}"#)
        return #"{"signedPayload":"\#(outer)"}"#
    }
}

/// The one error shape rendered by `HTTPError`: fields, and `request_id` equal to the `X-Request-Id` header.
func assertErrorShape(
    _ r: TestClient.Response, code: String, error: String? = nil, file: StaticString = #filePath, line: UInt = #line
) throws {
    XCTAssertEqual(r.header("Content-Type"), "application/json", file: file, line: line)
    let body = try JSONParser.parse(r.body)
    XCTAssertEqual(body["code"]?.stringValue, code, r.text, file: file, line: line)
    if let error { XCTAssertEqual(body["error"]?.stringValue, error, file: file, line: line) }
    XCTAssertNotNil(body["error"]?.stringValue, file: file, line: line)
    XCTAssertNotNil(body["suggestion"]?.stringValue, file: file, line: line)
    XCTAssertNotNil(r.header("X-Request-Id"), file: file, line: line)
    XCTAssertEqual(body["request_id"]?.stringValue, r.header("X-Request-Id"), file: file, line: line)
}
