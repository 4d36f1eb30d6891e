import Foundation
import JSON
import Postgres
import XCTest

/// Apple's side of Retention Messaging through Bouncer's admin routes (`/v1/admin/projects/{id}/retention/…`) over
/// the real `bouncer serve`, real PostgreSQL and the fake Apple over TLS: messages, images, default messages, the
/// Realtime URL and the performance test; Apple's refusals as our codes; one audit entry per change Apple accepted.
final class RetentionAdminE2ETests: AppleConnectedTestCase {
    override class func connect() throws -> AppleConnectedBouncer {
        try AppleConnectedBouncer(label: "retadmin", overrides: ["BOUNCER_APPLE_API_TIMEOUT_SECONDS": "3"])
    }

    private func tenant() throws -> Tenant { try Self.fixture.get().createProject(keyId: "RETADM0001").0 }

    private func path(_ t: Tenant, _ rest: String) -> String { "/v1/admin/projects/\(t.id)/retention/\(rest)" }

    private func put(_ t: Tenant, _ rest: String, _ body: JSONValue) throws -> HTTPResponse {
        try api.client.send("PUT", path(t, rest), json: body, headers: E2E.admin)
    }

    /// The project's entries of `action`: actor, target and changes.
    private func audit(_ t: Tenant, _ action: String) throws -> [JSONValue] {
        try db.query("""
            SELECT actor_label, target, changes::text AS changes FROM audit_log
            WHERE project_id = \(t.id)::uuid AND action = \(action) ORDER BY at
            """).map { row in
            ["actor": .string(try row.decode("actor_label", as: String.self)),
             "target": .string(try row.decode("target", as: String.self)),
             "changes": try JSONParser.parse(Array(try row.decode("changes", as: String.self).utf8))]
        }
    }

    private static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]

    func testMessagesAreUploadedListedAndDeletedAtApple() throws {
        let t = try tenant()
        let id = UUID().uuidString.lowercased()
        let imageId = UUID().uuidString.lowercased()

        let image = try api.client.request("PUT", path(t, "images/\(imageId)"),
                                           headers: E2E.admin.merging(["Content-Type": "image/png"]) { $1 },
                                           body: Self.png)
        XCTAssertEqual(image.status, 200, image.description)
        XCTAssertEqual(try image.json(), ["image_id": .string(imageId), "environment": "Sandbox", "bytes": 16])
        XCTAssertEqual(try apple.retention(.sandbox).images[imageId]?.state, "APPROVED")

        let r = try put(t, "messages/\(id)", ["header": "Stay with us", "body": "Half price for 3 months",
                                               "image_id": .string(imageId), "alt_text": "A gift"])
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertEqual(try r.json(), [
            "message_id": .string(id), "environment": "Sandbox", "header": "Stay with us",
            "body": "Half price for 3 months", "image_id": .string(imageId), "alt_text": "A gift",
        ])
        let sent = try XCTUnwrap(try apple.requests.last { $0.endpoint == .uploadMessage && $0.id == id })
        XCTAssertEqual(sent.environment, .sandbox)
        XCTAssertEqual(sent.jsonBody, ["header": "Stay with us", "body": "Half price for 3 months",
                                       "image": ["imageIdentifier": .string(imageId), "altText": "A gift"]])

        let list = try api.client.get(path(t, "messages"), headers: E2E.admin)
        XCTAssertEqual(list.status, 200, list.description)
        XCTAssertTrue(try XCTUnwrap(list.json()["messages"]?.arrayValue).contains(
            ["message_id": .string(id), "state": "APPROVED"]))
        let images = try api.client.get(path(t, "images"), headers: E2E.admin)
        XCTAssertTrue(try XCTUnwrap(images.json()["images"]?.arrayValue).contains(
            ["image_id": .string(imageId), "state": "APPROVED"]))

        // Apple's refusals, as our codes.
        assertError(try put(t, "messages/\(id)", ["header": "Again", "body": "Same id"]), 409, "RETENTION_MESSAGE_EXISTS")
        assertError(try put(t, "messages/\(UUID())", ["header": "H", "body": "B", "image_id": .string(UUID().uuidString),
                                                       "alt_text": "x"]), 422, "RETENTION_REJECTED_BY_APPLE")

        XCTAssertEqual(try api.client.delete(path(t, "messages/\(id)"), headers: E2E.admin).status, 204)
        XCTAssertNil(try apple.retention(.sandbox).messages[id])
        assertError(try api.client.delete(path(t, "messages/\(id)"), headers: E2E.admin), 404,
                    "RETENTION_MESSAGE_NOT_FOUND")
        XCTAssertEqual(try api.client.delete(path(t, "images/\(imageId)?environment=Sandbox"), headers: E2E.admin).status,
                       204)
        assertError(try api.client.delete(path(t, "images/\(imageId)"), headers: E2E.admin), 404,
                    "RETENTION_IMAGE_NOT_FOUND")

        XCTAssertEqual(try audit(t, "retention.upload_message"), [[
            "actor": "operator", "target": .string("retention_message:\(id)"), "changes": [
                "environment": [nil, "Sandbox"], "header": [nil, "Stay with us"], "body": [nil, "Half price for 3 months"],
                "image_id": [nil, .string(imageId)], "alt_text": [nil, "A gift"],
            ],
        ]])
        XCTAssertEqual(try audit(t, "retention.delete_message").count, 1)
        XCTAssertEqual(try audit(t, "retention.upload_image").count, 1)
        XCTAssertEqual(try audit(t, "retention.delete_image").count, 1)
    }

    func testDefaultMessagesRealtimeURLAndThePerformanceTest() throws {
        let t = try tenant()
        let id = UUID().uuidString.lowercased()
        XCTAssertEqual(try put(t, "messages/\(id)", ["header": "H", "body": "B", "environment": "Production"]).status, 200)
        XCTAssertEqual(try apple.retention(.production).messages[id]?.state, "PENDING")

        let set = try put(t, "default-messages/com.e2e.pro.monthly/en-US",
                          ["message_id": .string(id), "environment": "Production"])
        XCTAssertEqual(set.status, 200, set.description)
        XCTAssertEqual(try set.json(), ["product_id": "com.e2e.pro.monthly", "locale": "en-US",
                                        "message_id": .string(id), "environment": "Production"])
        XCTAssertEqual(try apple.retention(.production).defaults["com.e2e.pro.monthly/en-US"], id)
        assertError(try put(t, "default-messages/com.e2e.pro.monthly/en-US", ["message_id": .string(UUID().uuidString)]),
                    404, "RETENTION_MESSAGE_NOT_FOUND")
        let deleted = try api.client.delete(path(t, "default-messages/com.e2e.pro.monthly/en-US?environment=Production"),
                                            headers: E2E.admin)
        XCTAssertEqual(deleted.status, 204, deleted.description)
        assertError(try api.client.delete(path(t, "default-messages/com.e2e.pro.monthly/en-US?environment=Production"),
                                          headers: E2E.admin), 404, "RETENTION_DEFAULT_MESSAGE_NOT_FOUND")

        let url = "https://bouncer.example.com/v1/retention/\(t.publicKey)"
        let configured = try put(t, "realtime-url", ["url": .string(url)])
        XCTAssertEqual(configured.status, 200, configured.description)
        XCTAssertEqual(try configured.json(), ["url": .string(url), "environment": "Sandbox"])
        XCTAssertEqual(try apple.retention(.sandbox).realtimeURL, url)
        let before = try apple.requests.filter { $0.endpoint == .configureRealtimeURL }.count
        let plain = try put(t, "realtime-url", ["url": "http://bouncer.example.com/x"])
        XCTAssertEqual(plain.status, 400, plain.description)
        XCTAssertEqual(try plain.json()["details"], [
            ["path": ["url"], "message": "Must be an https URL of at most 2048 characters"],
        ])
        XCTAssertEqual(try apple.requests.filter { $0.endpoint == .configureRealtimeURL }.count, before)

        let test = try api.client.post(path(t, "performance-test"), json: ["original_transaction_id": "2000000000001"],
                                       headers: E2E.admin)
        XCTAssertEqual(test.status, 200, test.description)
        let requestId = try XCTUnwrap(test.json()["request_id"]?.stringValue)
        XCTAssertEqual(try test.json(), [
            "request_id": .string(requestId), "environment": "Sandbox", "config": [
                "max_concurrent_requests": 10, "total_requests": 1000, "total_duration_ms": 60_000,
                "response_time_threshold_ms": 700, "success_rate_threshold_percent": 99,
            ],
        ])
        XCTAssertEqual(try apple.requests.last { $0.endpoint == .initiatePerformanceTest }?.environment, .sandbox)
        let production = try api.client.post(path(t, "performance-test"),
                                             json: ["original_transaction_id": "2000000000001", "environment": "Production"],
                                             headers: E2E.admin)
        XCTAssertEqual(production.status, 400, production.description)

        XCTAssertEqual(try audit(t, "retention.set_default_message"), [[
            "actor": "operator", "target": "product:com.e2e.pro.monthly", "changes": [
                "environment": [nil, "Production"], "locale": [nil, "en-US"], "message_id": [nil, .string(id)],
            ],
        ]])
        XCTAssertEqual(try audit(t, "retention.delete_default_message").count, 1)
        XCTAssertEqual(try audit(t, "retention.set_realtime_url").count, 1)
        XCTAssertEqual(try audit(t, "retention.performance_test"), [[
            "actor": "operator", "target": .string("project:\(t.id)"), "changes": [
                "environment": [nil, "Sandbox"], "original_transaction_id": [nil, "2000000000001"],
                "request_id": [nil, .string(requestId)],
            ],
        ]])
    }

    func testOutagesMissingCredentialsAndBadInputsNeverReachOrBlameApple() throws {
        let t = try tenant()
        try apple.inject(.appleError(status: 500, errorCode: 5000000, message: "Internal"), on: .messageList, times: nil)
        let down = try api.client.get(path(t, "messages"), headers: E2E.admin)
        XCTAssertEqual(down.status, 503, down.description)
        XCTAssertEqual(try down.json()["code"], "APPLE_UNAVAILABLE")
        try apple.clearFailures()

        let bare = try Self.fixture.get().createProject(keyId: "RETADM0002", credentials: false).0
        assertError(try api.client.get(path(bare, "messages"), headers: E2E.admin), 400, "APP_STORE_CREDENTIALS_MISSING")

        let before = try apple.requests.count
        let long = try put(t, "messages/\(UUID())", ["header": .string(String(repeating: "h", count: 67)), "body": "B"])
        XCTAssertEqual(long.status, 400, long.description)
        XCTAssertEqual(try long.json()["details"], [["path": ["header"], "message": "String must contain at most 66 character(s)"]])
        assertError(try put(t, "messages/not-a-uuid", ["header": "H", "body": "B"]), 400, "VALIDATION_ERROR")
        let text = try api.client.request("PUT", path(t, "images/\(UUID())"),
                                          headers: E2E.admin.merging(["Content-Type": "image/png"]) { $1 },
                                          body: Array("not a png".utf8))
        XCTAssertEqual(text.status, 400, text.description)
        assertError(try api.client.get(path(t, "messages?environment=Xcode"), headers: E2E.admin), 400, "VALIDATION_ERROR")
        XCTAssertEqual(try apple.requests.count, before)
        XCTAssertEqual(try audit(t, "retention.upload_message"), [])
    }

    func testTheCLIUploadsListsSetsAndTestsAsTheAPIDoesAuditedAsCLI() throws {
        let t = try tenant()
        let env = try Self.fixture.get().cliEnvironment()
        let id = UUID().uuidString.lowercased()
        func run(_ args: [String]) throws -> CLIRun { try CLIRun.run(["retention"] + args, environment: env) }
        func json(_ r: CLIRun) throws -> JSONValue { try JSONParser.parse(Array(r.stdout.utf8)) }

        let upload = try run(["messages", "upload", t.id, "--header", "Stay", "--body", "Half price", "--message-id", id])
        XCTAssertEqual(upload.status, 0, upload.stderr)
        XCTAssertEqual(try json(upload), ["message_id": .string(id), "environment": "Sandbox", "header": "Stay",
                                          "body": "Half price", "image_id": nil, "alt_text": nil])
        XCTAssertEqual(try apple.retention(.sandbox).messages[id]?.header, "Stay")
        let list = try run(["messages", "list", t.id])
        XCTAssertEqual(list.status, 0, list.stderr)
        XCTAssertTrue(try XCTUnwrap(json(list)["messages"]?.arrayValue).contains(["message_id": .string(id), "state": "APPROVED"]))

        let set = try run(["default-message", "set", t.id, "com.e2e.pro.monthly", "fr-FR", id])
        XCTAssertEqual(set.status, 0, set.stderr)
        XCTAssertEqual(try apple.retention(.sandbox).defaults["com.e2e.pro.monthly/fr-FR"], id)
        let url = try run(["realtime-url", "set", t.id, "https://cli.example.com/v1/retention/\(t.publicKey)"])
        XCTAssertEqual(url.status, 0, url.stderr)
        XCTAssertEqual(try json(url), ["url": .string("https://cli.example.com/v1/retention/\(t.publicKey)"),
                                       "environment": "Sandbox"])
        let test = try run(["performance-test", t.id, "2000000000009"])
        XCTAssertEqual(test.status, 0, test.stderr)
        XCTAssertEqual(try json(test)["config"]?["total_requests"], 1000)
        let delete = try run(["messages", "delete", t.id, id])
        XCTAssertEqual(delete.status, 0, delete.stderr)
        XCTAssertNil(try apple.retention(.sandbox).messages[id])

        // Apple's refusal: exit 1 with our code; bad arguments: exit 2 and Apple is not asked.
        let again = try run(["messages", "delete", t.id, id])
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stderr.contains("RETENTION_MESSAGE_NOT_FOUND"), again.stderr)
        let before = try apple.requests.count
        XCTAssertEqual(try run(["realtime-url", "set", t.id, "http://plain.example.com"]).status, 2)
        XCTAssertEqual(try run(["messages", "upload", t.id, "--header", "H"]).status, 2)
        XCTAssertEqual(try run(["performance-test", t.id, "1", "--environment", "Production"]).status, 2)
        XCTAssertEqual(try apple.requests.count, before)

        let actors = try db.query("""
            SELECT action || ' ' || actor_type || ' ' || actor_label AS r FROM audit_log
            WHERE project_id = \(t.id)::uuid AND action LIKE 'retention.%' ORDER BY at
            """).map { try $0.decode("r", as: String.self) }
        XCTAssertEqual(actors, [
            "retention.upload_message operator cli", "retention.set_default_message operator cli",
            "retention.set_realtime_url operator cli", "retention.performance_test operator cli",
            "retention.delete_message operator cli",
        ])
    }

    /// The CLI's images (upload from a PNG file, list, delete) and default-message delete, as the API does them,
    /// audited as `cli`; a file that is not a PNG is an invalid argument (exit 2), Apple not asked.
    func testTheCLIManagesImagesAndDeletesADefaultMessage() throws {
        let t = try tenant()
        let env = try Self.fixture.get().cliEnvironment()
        let imageId = UUID().uuidString.lowercased(), messageId = UUID().uuidString.lowercased()
        func run(_ args: [String]) throws -> CLIRun { try CLIRun.run(["retention"] + args, environment: env) }
        func json(_ r: CLIRun) throws -> JSONValue { try JSONParser.parse(Array(r.stdout.utf8)) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("retention-cli-\(E2E.uniqueId())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("offer.png")
        try Data(Self.png).write(to: file)
        let notPNG = dir.appendingPathComponent("offer.txt")
        try Data("not a png".utf8).write(to: notPNG)

        let upload = try run(["images", "upload", t.id, file.path, "--image-id", imageId])
        XCTAssertEqual(upload.status, 0, upload.stderr)
        XCTAssertEqual(try json(upload), ["image_id": .string(imageId), "environment": "Sandbox", "bytes": 16])
        XCTAssertEqual(try apple.retention(.sandbox).images[imageId]?.bytes, 16)
        let list = try run(["images", "list", t.id])
        XCTAssertEqual(list.status, 0, list.stderr)
        XCTAssertTrue(try XCTUnwrap(json(list)["images"]?.arrayValue).contains(["image_id": .string(imageId), "state": "APPROVED"]))
        let before = try apple.requests.count
        XCTAssertEqual(try run(["images", "upload", t.id, notPNG.path]).status, 2, "an invalid image: exit 2")
        XCTAssertEqual(try apple.requests.count, before, "Apple not asked")
        let deleted = try run(["images", "delete", t.id, imageId])
        XCTAssertEqual(deleted.status, 0, deleted.stderr)
        XCTAssertNil(try apple.retention(.sandbox).images[imageId])

        XCTAssertEqual(try run(["messages", "upload", t.id, "--header", "H", "--body", "B", "--message-id", messageId]).status, 0)
        XCTAssertEqual(try run(["default-message", "set", t.id, "com.e2e.pro.monthly", "de-DE", messageId]).status, 0)
        let unset = try run(["default-message", "delete", t.id, "com.e2e.pro.monthly", "de-DE"])
        XCTAssertEqual(unset.status, 0, unset.stderr)
        XCTAssertNil(try apple.retention(.sandbox).defaults["com.e2e.pro.monthly/de-DE"])

        let actors = try db.query("""
            SELECT action || ' ' || actor_label AS r FROM audit_log
            WHERE project_id = \(t.id)::uuid AND action LIKE 'retention.%' ORDER BY at
            """).map { try $0.decode("r", as: String.self) }
        XCTAssertEqual(actors, [
            "retention.upload_image cli", "retention.delete_image cli", "retention.upload_message cli",
            "retention.set_default_message cli", "retention.delete_default_message cli",
        ])
    }

    /// The console's Retention page in headless Chromium (`Tests/EndToEndTests/console/retention_browser_test.py`):
    /// the rules, Apple's messages with their state, a text message uploaded from the form, the latest decisions.
    /// Skips when Chromium or Selenium is missing, unless `CI=true`.
    func testRetentionPageInHeadlessChromium() throws {
        let t = try tenant()
        let id = UUID().uuidString.lowercased()
        XCTAssertEqual(try put(t, "messages/\(id)", ["header": "H", "body": "B"]).status, 200)
        XCTAssertEqual(try put(t, "rules", ["rules": [["name": "everyone", "action": ["message_id": .string(id)]]]]).status,
                       200)
        _ = try db.query("""
            INSERT INTO retention_decisions (project_id, request_identifier, environment, original_transaction_id,
                product_id, locale, signed_date, rule_index, rule_name, action, message_id, reason, decided_at)
            VALUES (\(t.id)::uuid, gen_random_uuid(), 'Sandbox', '2000000000077', 'com.e2e.pro.monthly', 'en-US', now(),
                0, 'everyone', 'message', \(id)::uuid, 'Rule 1 "everyone" matched.', now())
            """)
        let decisions = try api.client.get(path(t, "decisions"), headers: E2E.admin)
        XCTAssertEqual(decisions.status, 200, decisions.description)
        XCTAssertEqual(try decisions.json()["decisions"]?.arrayValue?.first?["original_transaction_id"], "2000000000077")

        let output = try BrowserScript.run("retention_browser_test.py", [
            "BOUNCER_URL": "http://127.0.0.1:\(try server.port)", "ADMIN_TOKEN": E2E.adminToken, "PROJECT_ID": t.id,
            "MESSAGE_ID": id, "ORIGINAL_TRANSACTION_ID": "2000000000077",
        ])
        for step in ["signed in", "rules shown", "messages listed with their state", "latest decisions listed",
                     "text message uploaded and listed", "a refused upload shows the error", "no CSP violations"] {
            XCTAssertTrue(output.contains("STEP \(step)"), "missing step \(step):\n\(output)")
        }
        // The form's upload reached Apple and was audited like the API's.
        let uploaded = try XCTUnwrap(output.split(separator: "\n").first { $0.hasPrefix("UPLOADED ") }?.dropFirst(9), output)
        XCTAssertEqual(try apple.retention(.sandbox).messages[String(uploaded)]?.header, "Stay with us")
        XCTAssertEqual(try audit(t, "retention.upload_message").count, 2)
    }
}
