import Foundation
import Glibc
import JSON
import Postgres
import XCTest

/// Refund defense (CONSUMPTION_REQUEST answered by Send Consumption Information) and the operator helpers (test
/// notification, renewal extension), over real `bouncer serve` processes, real PostgreSQL and the fake Apple over
/// real TLS, which checks every JWT with the project's public key.
final class RefundDefenseE2ETests: AppleConnectedTestCase {
    static let encryptionKey = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()

    /// The variables every server here adds: a quick responder (short poll, retry and lease).
    static let quick: [String: String?] = [
        "BOUNCER_APPLE_API_TIMEOUT_SECONDS": "2",
        "BOUNCER_CONSUMPTION_POLL_SECONDS": "0.1",
        "BOUNCER_CONSUMPTION_RETRY_BASE_SECONDS": "0.2",
        "BOUNCER_CONSUMPTION_LEASE_SECONDS": "3",
    ]

    /// A fake Apple and a server (started on first use) wired to it, with `quick`.
    static func connected(_ label: String) throws -> AppleConnectedBouncer {
        try AppleConnectedBouncer(label: label, encryptionKey: encryptionKey, overrides: quick)
    }

    override class func connect() throws -> AppleConnectedBouncer { try connected("refund") }

    // MARK: - Helpers

    /// A project with `settings`, the product mapped, credentials stored; `apple` expects its key and bundle id.
    static func tenant(_ api: API, _ apple: FakeAppleServer, settings: [(String, JSONValue)] = [],
                       keyId: String = "REFUND0001") throws -> Tenant {
        try api.createProject(connectedTo: apple, settings: settings, keyId: keyId).0
    }

    static let answering: [(String, JSONValue)] = [
        ("consumption_response", "auto"), ("consumption_customer_consented", true),
    ]

    /// A CONSUMPTION_REQUEST about a subscription bought 10 days before Apple asks and expiring 20 days after:
    /// a third of the period used (33333 milli-units).
    static func consumptionRequest(_ tenant: Tenant, environment: String = "Sandbox") -> (NotificationPayload, TransactionPayload) {
        let asked = E2E.ms(0)
        var transaction = TransactionPayload(bundleId: tenant.bundleId)
        transaction.environment = environment
        transaction.purchaseDate = asked - 10 * 86_400_000
        transaction.originalPurchaseDate = transaction.purchaseDate
        transaction.expiresDate = asked + 20 * 86_400_000
        transaction.signedDate = asked
        var notification = NotificationPayload("CONSUMPTION_REQUEST", bundleId: tenant.bundleId, transaction: transaction,
                                               signedDate: asked)
        notification.environment = environment
        notification.extra = [("consumptionRequestReason", "UNINTENDED_PURCHASE")]
        return (notification, transaction)
    }

    /// The queue row of `notification`.
    static func queueRow(_ db: E2EDatabase, _ tenant: Tenant, _ uuid: String) throws -> Row? {
        try db.query("""
            SELECT status, attempts, transaction_id, last_error, apple_error_code, request_body::text AS body,
                   sent_at IS NOT NULL AS has_sent_at
            FROM consumption_requests WHERE project_id = \(tenant.id)::uuid AND notification_uuid = \(uuid)::uuid
            """).first
    }

    static func status(_ db: E2EDatabase, _ tenant: Tenant, _ uuid: String) throws -> String? {
        try queueRow(db, tenant, uuid)?.decode("status", as: String.self)
    }

    /// The notification log's entry for `uuid`.
    static func logEntry(_ api: API, _ tenant: Tenant, _ uuid: String) throws -> JSONValue? {
        let r = try api.client.get("/v1/admin/projects/\(tenant.id)/notifications", headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        return try r.json()["notifications"]?.arrayValue?.first { $0["notification_uuid"]?.stringValue == uuid }
    }

    static func consumptionCalls(_ apple: FakeAppleServer, _ transactionId: String) -> [FakeAppleServer.ReceivedRequest] {
        apple.requests.filter { $0.endpoint == .consumption && $0.id == transactionId }
    }

    // MARK: - Refund defense

    func testAutoWithConsentSendsExactlyOneV2BodyAndTheLogShowsSent() throws {
        let api = API(client: try server.client)
        let tenant = try Self.tenant(api, try apple, settings: Self.answering + [
            ("consumption_sample_content_provided", true), ("consumption_refund_preference", "DECLINE"),
        ])
        let (notification, transaction) = Self.consumptionRequest(tenant)
        try api.deliver(tenant.publicKey, notification)

        XCTAssertTrue(try E2E.eventually { try Self.status(db, tenant, notification.uuid) == "sent" })
        let calls = Self.consumptionCalls(try apple, transaction.transactionId)
        XCTAssertEqual(calls.count, 1)
        let call = try XCTUnwrap(calls.first)
        XCTAssertEqual(call.method, "PUT")
        XCTAssertEqual(call.path, "/inApps/v2/transactions/consumption/\(transaction.transactionId)")
        XCTAssertEqual(call.environment, .sandbox)
        XCTAssertNil(call.jwtProblem)
        XCTAssertEqual(call.jwtClaims?["bid"], .string(tenant.bundleId))
        XCTAssertEqual(call.jsonBody, [
            "customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": true,
            "consumptionPercentage": 33333, "refundPreference": "DECLINE",
        ])

        let row = try XCTUnwrap(try Self.queueRow(db, tenant, notification.uuid))
        XCTAssertEqual(try row.decode("attempts", as: Int.self), 1)
        XCTAssertEqual(try row.decode("transaction_id", as: String.self), transaction.transactionId)
        XCTAssertNil(try row.decode("last_error", as: String?.self))
        XCTAssertTrue(try row.decode("has_sent_at", as: Bool.self))
        let stored = try JSONParser.parse(Array(try row.decode("body", as: String.self).utf8))
        XCTAssertEqual(stored, call.jsonBody)

        let entry = try XCTUnwrap(try Self.logEntry(api, tenant, notification.uuid))
        XCTAssertEqual(entry["type"], "CONSUMPTION_REQUEST")
        XCTAssertEqual(entry["consumption"]?["status"], "sent")
        XCTAssertEqual(entry["consumption"]?["attempts"], 1)
        XCTAssertEqual(entry["consumption"]?["last_error"], .null)
        XCTAssertNotNil(entry["consumption"]?["sent_at"]?.stringValue)
    }

    func testWithoutConsentNothingIsSentAndTheLogSaysWhy() throws {
        let api = API(client: try server.client)
        let tenant = try Self.tenant(api, try apple, settings: [("consumption_response", "auto")])
        XCTAssertEqual(tenant.created["consumption_customer_consented"], false)
        let (notification, transaction) = Self.consumptionRequest(tenant)
        try api.deliver(tenant.publicKey, notification)

        XCTAssertTrue(try E2E.eventually { try Self.status(db, tenant, notification.uuid) == "skipped_no_consent" })
        XCTAssertEqual(Self.consumptionCalls(try apple, transaction.transactionId).count, 0)
        let entry = try XCTUnwrap(try Self.logEntry(api, tenant, notification.uuid))
        XCTAssertEqual(entry["consumption"]?["status"], "skipped_no_consent")
        XCTAssertEqual(entry["consumption"]?["sent_at"], .null)
        XCTAssertEqual(entry["consumption"]?["last_error"]?.stringValue?.hasPrefix("consumption_customer_consented is false"), true)
        let lines = try server.stderr.split(separator: "\n").filter {
            $0.contains(notification.uuid) && $0.contains(#""event":"consumption""#)
        }
        XCTAssertEqual(lines.count, 1, lines.joined(separator: "\n"))
        XCTAssertTrue(lines.first?.contains("skipped_no_consent") == true)
        XCTAssertTrue(lines.first?.contains("customer's consent") == true)
    }

    func testOffByDefaultIsRecordedAsSkippedOff() throws {
        let api = API(client: try server.client)
        let tenant = try Self.tenant(api, try apple)
        XCTAssertEqual(tenant.created["consumption_response"], "off")
        let (notification, transaction) = Self.consumptionRequest(tenant)
        try api.deliver(tenant.publicKey, notification)
        XCTAssertTrue(try E2E.eventually { try Self.status(db, tenant, notification.uuid) == "skipped_off" })
        XCTAssertEqual(Self.consumptionCalls(try apple, transaction.transactionId).count, 0)
    }

    func testApple500ThenOKIsSentAfterARetry() throws {
        let api = API(client: try server.client)
        let apple = try apple
        let tenant = try Self.tenant(api, apple, settings: Self.answering)
        apple.inject(.serverError(), on: .consumption, times: nil)
        let (notification, transaction) = Self.consumptionRequest(tenant)
        try api.deliver(tenant.publicKey, notification)

        // The first attempt fails (Apple 500 for the whole call budget): the row waits for a retry.
        XCTAssertTrue(try E2E.eventually {
            guard let row = try Self.queueRow(db, tenant, notification.uuid) else { return false }
            return try row.decode("status", as: String.self) == "pending" && row.decode("last_error", as: String?.self) != nil
        })
        let failed = Self.consumptionCalls(apple, transaction.transactionId).count
        XCTAssertGreaterThanOrEqual(failed, 1)
        apple.clearFailures()

        XCTAssertTrue(try E2E.eventually { try Self.status(db, tenant, notification.uuid) == "sent" })
        let row = try XCTUnwrap(try Self.queueRow(db, tenant, notification.uuid))
        XCTAssertGreaterThanOrEqual(try row.decode("attempts", as: Int.self), 2)
        XCTAssertNil(try row.decode("last_error", as: String?.self))
        XCTAssertTrue(try row.decode("has_sent_at", as: Bool.self))
        // Exactly one call after Apple recovered.
        XCTAssertEqual(Self.consumptionCalls(apple, transaction.transactionId).count, failed + 1)
        XCTAssertEqual(try Self.logEntry(api, tenant, notification.uuid)?["consumption"]?["status"], "sent")
    }

    func testApple4xxIsFinalRejectedWithAppleErrorCode() throws {
        let api = API(client: try server.client)
        let apple = try apple
        let tenant = try Self.tenant(api, apple, settings: Self.answering)
        apple.inject(.appleError(status: 400, errorCode: 4000183, message: "Invalid customer consented."),
                     on: .consumption, times: nil)
        let (notification, transaction) = Self.consumptionRequest(tenant)
        try api.deliver(tenant.publicKey, notification)
        XCTAssertTrue(try E2E.eventually { try Self.status(db, tenant, notification.uuid) == "rejected" })
        let row = try XCTUnwrap(try Self.queueRow(db, tenant, notification.uuid))
        XCTAssertEqual(try row.decode("apple_error_code", as: Int.self), 4000183)
        XCTAssertEqual(try row.decode("attempts", as: Int.self), 1)
        XCTAssertEqual(Self.consumptionCalls(apple, transaction.transactionId).count, 1)
    }

    /// A request older than Apple's 12-hour window (e.g. recovered late) expires unanswered.
    func testRequestPastApplesWindowExpiresWithoutCallingApple() throws {
        let api = API(client: try server.client)
        let tenant = try Self.tenant(api, try apple, settings: Self.answering)
        var (notification, transaction) = Self.consumptionRequest(tenant)
        notification.signedDate = E2E.ms(-13 * 3600)
        try api.deliver(tenant.publicKey, notification)
        XCTAssertTrue(try E2E.eventually { try Self.status(db, tenant, notification.uuid) == "expired" })
        XCTAssertEqual(Self.consumptionCalls(try apple, transaction.transactionId).count, 0)
        let entry = try XCTUnwrap(try Self.logEntry(api, tenant, notification.uuid))
        XCTAssertEqual(entry["consumption"]?["status"], "expired")
        XCTAssertEqual(entry["consumption"]?["last_error"], "Apple's 12-hour window to answer had passed")
    }

    /// The queue row commits with the notification: killed (-9) while Apple stalls the answer, a restarted server
    /// (after the lease lapses) sends it.
    func testKilledWhileAnsweringTheRestartedServerSendsIt() throws {
        let connected = try Self.connected("refund_crash")
        let apple = connected.apple
        defer { apple.stop() }
        let db = try connected.db
        let first = try connected.server
        let api = API(client: first.client)
        let tenant = try Self.tenant(api, apple, settings: Self.answering)
        apple.inject(.stall(seconds: 30), on: .consumption, times: 1)
        let (notification, transaction) = Self.consumptionRequest(tenant)
        try api.deliver(tenant.publicKey, notification)
        // In the queue as soon as the webhook answered 200.
        XCTAssertNotNil(try Self.queueRow(db, tenant, notification.uuid))

        XCTAssertTrue(E2E.eventually { Self.consumptionCalls(apple, transaction.transactionId).count == 1 })
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        XCTAssertEqual(try Self.status(db, tenant, notification.uuid), "pending")

        let second = try connected.startServer(on: db)
        defer { second.stopAndAssertCleanExit() }
        XCTAssertTrue(try E2E.eventually { try Self.status(db, tenant, notification.uuid) == "sent" })
        XCTAssertEqual(Self.consumptionCalls(apple, transaction.transactionId).count, 2)
        XCTAssertEqual(try Self.logEntry(API(client: second.client), tenant, notification.uuid)?["consumption"]?["status"],
                       "sent")
    }

    /// Two servers on one database: every request is answered exactly once.
    func testTwoInstancesSendEachAnswerOnce() throws {
        let connected = try Self.connected("refund_two")
        let apple = connected.apple
        defer { apple.stop() }
        let db = try connected.db
        let one = try connected.server
        defer { one.stopAndAssertCleanExit() }
        let two = try connected.startServer(on: db)
        defer { two.stopAndAssertCleanExit() }
        let tenant = try Self.tenant(API(client: one.client), apple, settings: Self.answering)
        var sent: [(NotificationPayload, TransactionPayload)] = []
        for i in 0..<8 {
            let request = Self.consumptionRequest(tenant)
            try API(client: (i % 2 == 0 ? one : two).client).deliver(tenant.publicKey, request.0)
            sent.append(request)
        }
        XCTAssertTrue(try E2E.eventually {
            try db.count("consumption_requests", project: tenant.id) == 8
                && db.query("SELECT count(*)::int8 AS n FROM consumption_requests WHERE status = 'sent'")
                    .first?.decode("n", as: Int64.self) == 8
        })
        for (_, transaction) in sent {
            XCTAssertEqual(Self.consumptionCalls(apple, transaction.transactionId).count, 1, transaction.transactionId)
        }
        XCTAssertEqual(apple.requests.filter { $0.endpoint == .consumption }.count, 8)
    }

    // MARK: - Settings

    func testConsumptionSettingsAreValidatedAndShown() throws {
        let api = API(client: try server.client)
        let tenant = try api.createProject()
        XCTAssertEqual(tenant.created["consumption_response"], "off")
        XCTAssertEqual(tenant.created["consumption_customer_consented"], false)
        XCTAssertEqual(tenant.created["consumption_sample_content_provided"], false)
        XCTAssertEqual(tenant.created["consumption_refund_preference"], .null)

        let bad = try api.client.send("PATCH", "/v1/admin/projects/\(tenant.id)", json: [
            "consumption_response": "always", "consumption_refund_preference": "MAYBE",
            "consumption_customer_consented": "yes",
        ], headers: E2E.admin)
        assertError(bad, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try bad.json()["details"]?.arrayValue?.compactMap { $0["path"]?[0]?.stringValue }.sorted(), [
            "consumption_customer_consented", "consumption_refund_preference", "consumption_response",
        ])

        let ok = try api.client.send("PATCH", "/v1/admin/projects/\(tenant.id)", json: [
            "consumption_response": "auto", "consumption_customer_consented": true,
            "consumption_refund_preference": "GRANT_PRORATED",
        ], headers: E2E.admin)
        XCTAssertEqual(ok.status, 200, ok.description)
        XCTAssertEqual(try ok.json()["consumption_response"], "auto")
        XCTAssertEqual(try ok.json()["consumption_customer_consented"], true)
        XCTAssertEqual(try ok.json()["consumption_refund_preference"], "GRANT_PRORATED")
        let cleared = try api.client.send("PATCH", "/v1/admin/projects/\(tenant.id)",
                                          json: ["consumption_refund_preference": .null], headers: E2E.admin)
        XCTAssertEqual(try cleared.json()["consumption_refund_preference"], .null)
        XCTAssertEqual(try cleared.json()["consumption_response"], "auto")
        let row = try XCTUnwrap(try db.query("""
            SELECT consumption_response, consumption_customer_consented, consumption_refund_preference
            FROM projects WHERE id = \(tenant.id)::uuid
            """).first)
        XCTAssertEqual(try row.decode("consumption_response", as: String.self), "auto")
        XCTAssertEqual(try row.decode("consumption_customer_consented", as: Bool.self), true)
        XCTAssertNil(try row.decode("consumption_refund_preference", as: String?.self))
    }

    // MARK: - Test notification

    func testTestNotificationRoundTripReportsWhetherAppleReachedUs() throws {
        let server = try server
        let api = API(client: server.client)
        let apple = try apple
        let tenant = try Self.tenant(api, apple)
        let uuid = UUID().uuidString.lowercased()
        let payload: JSONValue = [
            "notificationType": "TEST", "notificationUUID": .string(uuid), "version": "2.0",
            "signedDate": JSONValue(E2E.ms(0)),
            "data": ["bundleId": .string(tenant.bundleId), "environment": "Production"],
        ]
        let token = "\(UUID().uuidString.lowercased())_\(E2E.ms(0))"
        apple.setTestNotification(token: token, signedPayload: try E2E.mint(payload), attempts: [], environment: .production)

        let asked = try api.client.post("/v1/admin/projects/\(tenant.id)/app-store/test-notification", json: [:],
                                        headers: E2E.admin)
        XCTAssertEqual(asked.status, 200, asked.description)
        XCTAssertEqual(try asked.json(), ["token": .string(token), "environment": "Production"])
        XCTAssertEqual(apple.requests.last?.endpoint, .requestTestNotification)
        XCTAssertEqual(apple.requests.last?.environment, .production)

        let path = "/v1/admin/projects/\(tenant.id)/app-store/test-notification/\(token)"
        let before = try api.client.get(path, headers: E2E.admin)
        XCTAssertEqual(before.status, 200, before.description)
        XCTAssertEqual(try before.json(), [
            "token": .string(token), "environment": "Production", "notification_uuid": .string(uuid),
            "apple_send_attempts": [], "received": false, "received_at": .null,
        ])

        XCTAssertEqual(try apple.deliverTestNotification(environment: .production, toPort: server.port,
                                                         publicKey: tenant.publicKey), 200)
        let after = try api.client.get(path, headers: E2E.admin)
        XCTAssertEqual(after.status, 200, after.description)
        let json = try after.json()
        XCTAssertEqual(json["received"], true)
        XCTAssertNotNil(json["received_at"]?.stringValue)
        XCTAssertEqual(json["apple_send_attempts"]?.arrayValue?.count, 1)
        XCTAssertEqual(json["apple_send_attempts"]?[0]?["result"], "SUCCESS")

        assertError(try api.client.get("/v1/admin/projects/\(tenant.id)/app-store/test-notification/nope_1",
                                       headers: E2E.admin), 404, "TEST_NOTIFICATION_NOT_FOUND")
        let badEnvironment = try api.client.post(
            "/v1/admin/projects/\(tenant.id)/app-store/test-notification?environment=Xcode", json: [:], headers: E2E.admin)
        assertError(badEnvironment, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try badEnvironment.json()["details"]?[0]?["path"], ["environment"])
    }

    func testTestNotificationWhoseSignatureDoesNotVerifyIsRefused() throws {
        let api = API(client: try server.client)
        let apple = try apple
        let tenant = try Self.tenant(api, apple, settings: [("environments", ["Sandbox"])])
        let payload: JSONValue = [
            "notificationType": "TEST", "notificationUUID": .string(UUID().uuidString.lowercased()), "version": "2.0",
            "signedDate": JSONValue(E2E.ms(0)), "data": ["bundleId": .string(tenant.bundleId), "environment": "Sandbox"],
        ]
        apple.setTestNotification(token: "forged_1", signedPayload: try FakeAppleServer.forge(payload.serializedString()),
                                  attempts: [], environment: .sandbox)
        let r = try api.client.get("/v1/admin/projects/\(tenant.id)/app-store/test-notification/forged_1",
                                   headers: E2E.admin)
        XCTAssertEqual(r.status, 400, r.description)
        XCTAssertEqual(apple.requests.last?.environment, .sandbox)
    }

    // MARK: - Extend

    func testExtendRecordsTheCallAndAnswersAppleResult() throws {
        let api = API(client: try server.client)
        let apple = try apple
        let tenant = try Self.tenant(api, apple)
        let transaction = TransactionPayload(bundleId: tenant.bundleId)   // Sandbox
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try transaction.mint(), user: "u1").status, 201)
        let effective = E2E.ms(60 * 86_400)
        apple.setExtendResult(transaction.originalTransactionId, .init(effectiveDate: effective, success: true,
                                                                       webOrderLineItemId: "9000"), environment: .sandbox)

        let path = "/v1/admin/projects/\(tenant.id)/subscriptions/\(transaction.originalTransactionId)/extend"
        let r = try api.client.post(path, json: ["extend_by_days": 30, "reason_code": 3], headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        let call = try XCTUnwrap(apple.requests.last)
        XCTAssertEqual(call.endpoint, .extendRenewalDate)
        XCTAssertEqual(call.environment, .sandbox)
        XCTAssertNil(call.jwtProblem)
        let requestIdentifier = try XCTUnwrap(call.jsonBody?["requestIdentifier"]?.stringValue)
        XCTAssertEqual(call.jsonBody, ["extendByDays": 30, "extendReasonCode": 3,
                                       "requestIdentifier": .string(requestIdentifier)])
        XCTAssertEqual(try r.json(), [
            "original_transaction_id": .string(transaction.originalTransactionId), "environment": "Sandbox",
            "request_identifier": .string(requestIdentifier), "extend_by_days": 30, "reason_code": 3,
            "success": true, "effective_date": .string(E2E.iso(effective)), "web_order_line_item_id": "9000",
        ])
        let row = try XCTUnwrap(try db.query("""
            SELECT request_identifier::text AS id, environment, extend_by_days, reason_code, success,
                   (extract(epoch FROM effective_date) * 1000)::int8 AS effective_ms, apple_error_code, error
            FROM renewal_extensions WHERE project_id = \(tenant.id)::uuid
            """).first)
        XCTAssertEqual(try row.decode("id", as: String.self), requestIdentifier)
        XCTAssertEqual(try row.decode("environment", as: String.self), "Sandbox")
        XCTAssertEqual(try row.decode("extend_by_days", as: Int.self), 30)
        XCTAssertEqual(try row.decode("reason_code", as: Int.self), 3)
        XCTAssertEqual(try row.decode("success", as: Bool.self), true)
        XCTAssertEqual(try row.decode("effective_ms", as: Int64.self), effective)
        XCTAssertNil(try row.decode("apple_error_code", as: Int?.self))

        // A second call has a fresh request identifier.
        XCTAssertEqual(try api.client.post(path, json: ["extend_by_days": 1, "reason_code": 0], headers: E2E.admin).status, 200)
        let identifiers = try db.query("SELECT DISTINCT request_identifier FROM renewal_extensions WHERE project_id = \(tenant.id)::uuid")
        XCTAssertEqual(identifiers.count, 2)
    }

    func testExtendIneligibleUnknownAndInvalidAreMapped() throws {
        let api = API(client: try server.client)
        let apple = try apple
        let tenant = try Self.tenant(api, apple)
        let transaction = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try transaction.mint()).status, 201)
        let path = "/v1/admin/projects/\(tenant.id)/subscriptions/\(transaction.originalTransactionId)/extend"

        apple.inject(.appleError(status: 403, errorCode: 4030004, message: "Subscription extension ineligible."),
                     on: .extendRenewalDate)
        assertError(try api.client.post(path, json: ["extend_by_days": 7, "reason_code": 1], headers: E2E.admin),
                    422, "SUBSCRIPTION_EXTENSION_INELIGIBLE")
        let row = try XCTUnwrap(try db.query("""
            SELECT success, apple_error_code FROM renewal_extensions WHERE project_id = \(tenant.id)::uuid
            """).first)
        XCTAssertEqual(try row.decode("success", as: Bool.self), false)
        XCTAssertEqual(try row.decode("apple_error_code", as: Int.self), 4030004)

        apple.inject(.appleError(status: 403, errorCode: 4030005, message: "Subscription max extension."),
                     on: .extendRenewalDate)
        assertError(try api.client.post(path, json: ["extend_by_days": 7, "reason_code": 1], headers: E2E.admin),
                    409, "SUBSCRIPTION_EXTENSION_LIMIT_REACHED")

        assertError(try api.client.post("/v1/admin/projects/\(tenant.id)/subscriptions/123456789/extend",
                                        json: ["extend_by_days": 7, "reason_code": 1], headers: E2E.admin),
                    404, "PURCHASE_NOT_FOUND")

        let invalid = try api.client.post(path, json: ["extend_by_days": 91, "reason_code": 4], headers: E2E.admin)
        assertError(invalid, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try invalid.json()["details"], [
            ["path": ["extend_by_days"], "message": "Number must be less than or equal to 90"],
            ["path": ["reason_code"], "message": "Number must be less than or equal to 3"],
        ])
        let missing = try api.client.post(path, json: [:], headers: E2E.admin)
        assertError(missing, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try missing.json()["details"]?.arrayValue?.count, 2)
        XCTAssertEqual(try db.count("renewal_extensions", project: tenant.id), 2)
    }
}

extension RefundDefenseE2ETests {
    /// The CLI sets the refund defense settings through the same use case (and prints what the admin API shows).
    func testCLISetsConsumptionSettingsLikeTheAdminAPI() throws {
        let server = try server
        let api = API(client: server.client)
        let tenant = try api.createProject()
        var env = server.environment
        env["BOUNCER_PORT"] = nil
        let run = try CLIRun.run(["project", "update", tenant.id, "--consumption-response", "auto",
                                  "--consumption-customer-consented", "true",
                                  "--consumption-sample-content-provided", "true",
                                  "--consumption-refund-preference", "GRANT_FULL"], environment: env)
        XCTAssertEqual(run.status, 0, run.stderr)
        let printed = try JSONParser.parse(run.stdout)
        XCTAssertEqual(printed["consumption_response"], "auto")
        XCTAssertEqual(printed["consumption_customer_consented"], true)
        XCTAssertEqual(printed["consumption_sample_content_provided"], true)
        XCTAssertEqual(printed["consumption_refund_preference"], "GRANT_FULL")
        XCTAssertTrue(try E2E.eventually {
            try api.client.get("/v1/admin/projects/\(tenant.id)", headers: E2E.admin).json()["consumption_refund_preference"]
                == "GRANT_FULL"
        })
        let cleared = try CLIRun.run(["project", "update", tenant.id, "--consumption-refund-preference", "none"],
                                     environment: env)
        XCTAssertEqual(try JSONParser.parse(cleared.stdout)["consumption_refund_preference"], .null)
        let bad = try CLIRun.run(["project", "update", tenant.id, "--consumption-response", "always"], environment: env)
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("--consumption-response must be off or auto"), bad.stderr)
    }
}
