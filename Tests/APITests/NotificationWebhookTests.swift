import API
import Domain
import Foundation
@testable import HTTPCore
import JSON
import Synchronization
import XCTest

/// Verifies notifications from a table: the JWS text names the result.
final class FakeNotificationVerifier: SignedDataVerifying, Sendable {
    let table: Mutex<[String: Result<NotificationFacts, VerificationFailure>]> = Mutex([:])

    func register(_ jws: String, _ result: Result<NotificationFacts, VerificationFailure>) {
        table.withLock { $0[jws] = result }
    }

    func verifyTransaction(_ jws: String, for project: Project) throws -> TransactionFacts {
        throw VerificationFailure(code: .jwsVerificationFailed, reason: "not used by these tests")
    }

    func verifyNotification(_ jws: String, for project: Project) throws -> NotificationFacts {
        guard let result = table.withLock({ $0[jws] }) else {
            throw VerificationFailure(code: .jwsVerificationFailed, reason: "signature does not verify",
                                      step: "signature")
        }
        return try result.get()
    }

    func verifyAppTransaction(_ jws: String, for project: Project) throws -> AppTransactionFacts {
        throw VerificationFailure(code: .jwsVerificationFailed, reason: "not used by these tests")
    }
}

/// An in-memory `NotificationStore` with the port's semantics: first delivery processed, redelivery duplicate.
final class FakeNotificationStore: NotificationStore, Sendable {
    struct State: Sendable {
        var stored: [(projectId: UUID, facts: NotificationFacts, at: Date)] = []
        var failure: StoreFailure = .none
        var lastListCall: (UUID, String?, Int)?
    }

    let state = Mutex(State())

    var failure: StoreFailure {
        get { state.withLock { $0.failure } }
        set { state.withLock { $0.failure = newValue } }
    }

    var storedUUIDs: [UUID] { state.withLock { $0.stored.map(\.facts.notificationUUID) } }
    var lastListCall: (UUID, String?, Int)? { state.withLock { $0.lastListCall } }

    func recordNotification(_ notification: NotificationFacts, project: Project, now: Date) throws
        -> NotificationOutcome
    {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            if s.stored.contains(where: {
                $0.projectId == project.id && $0.facts.notificationUUID == notification.notificationUUID
            }) {
                return .duplicate
            }
            s.stored.append((project.id, notification, now))
            return .processed
        }
    }

    func notifications(projectId: UUID, originalTransactionId: String?, limit: Int) throws -> [StoredNotification] {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            s.lastListCall = (projectId, originalTransactionId, limit)
            return s.stored.reversed()
                .filter { $0.projectId == projectId }
                .filter { originalTransactionId == nil || $0.facts.originalTransactionId == originalTransactionId }
                .prefix(limit)
                .map {
                    StoredNotification(
                        notificationUUID: $0.facts.notificationUUID, type: $0.facts.type, subtype: $0.facts.subtype,
                        originalTransactionId: $0.facts.originalTransactionId, environment: $0.facts.environment,
                        signedDate: $0.facts.signedDate, receivedAt: $0.at, processedAt: $0.at)
                }
        }
    }
}

final class NotificationWebhookTests: XCTestCase {
    static let now = Date(timeIntervalSince1970: 1_780_272_000)  // 2026-06-01T00:00:00Z
    static let uuid1 = UUID(uuidString: "5E2A4C1F-0000-4000-8000-000000000001") ?? UUID()
    static let uuid2 = UUID(uuidString: "5E2A4C1F-0000-4000-8000-000000000002") ?? UUID()

    let projects = FakeProjectStore()
    let verifier = FakeNotificationVerifier()
    let notifications = FakeNotificationStore()
    let log = LogSink()
    var router = Router()
    var project: Project!

    override func setUp() {
        project = projects.seed(
            Project(id: FakeProjectStore.uuid(900), name: "My App", bundleId: "com.example.app",
                    publicKey: Harness.publicKey, createdAt: Self.now, updatedAt: Self.now),
            secretKey: Harness.secretKey)
        let sink = log
        let deps = APIDependencies(
            projects: projects, purchases: FakePurchaseStore(projects: projects), verifier: verifier,
            hasher: FakeHasher(), adminToken: Harness.adminToken, notifications: notifications, now: { Self.now },
            log: { sink.write($0) })
        Routes.register(on: &router, deps)
        verifier.register("h.refund.s", .success(NotificationFacts(
            notificationUUID: Self.uuid1, type: "REFUND", signedDate: Self.now, environment: .production,
            transaction: facts(revocationDate: Self.now, signedDate: Self.now), payloadJSON: "{}")))
        verifier.register("h.test.s", .success(NotificationFacts(
            notificationUUID: Self.uuid2, type: "TEST", signedDate: Self.now, environment: .sandbox,
            payloadJSON: "{}")))
        verifier.register("h.foreign.s", .failure(VerificationFailure(
            code: .bundleIdMismatch, reason: "bundleId com.other.app is not com.example.app", step: "claims")))
        verifier.register("h.ocsp.s", .failure(VerificationFailure(
            code: .init(rawValue: "VERIFICATION_UNAVAILABLE"), reason: "revocation check unreachable", isRetryable: true)))
    }

    func send(
        _ method: HTTPMethod, _ path: String, query: String? = nil, headers: [(String, String)] = [],
        body: String = ""
    ) -> Response {
        switch router.match(method, path) {
        case .found(let route, let parameters):
            let request = Request(
                method: method, path: path, query: query, headers: HTTPHeaders(headers), body: Array(body.utf8),
                pathParameters: parameters, routeTemplate: route.template, rateLimitScopes: route.rateLimits,
                requestID: "req-test-1",
                remoteAddress: "127.0.0.1")
            // As the server does: a thrown HTTPError is rendered with the request id, anything else is a 500.
            return ServerCore.invoke(route.handler, request, retryAfterSeconds: 1).0
        case .methodNotAllowed: return Response(status: 405)
        case .notFound: return Response(status: 404)
        case .badPath: return Response(status: 400)
        }
    }

    func notify(_ jws: String, key: String = Harness.publicKey, contentType: String? = "application/json")
        -> Response
    {
        send(.post, "/v1/notifications/" + key, headers: contentType.map { [("Content-Type", $0)] } ?? [],
             body: #"{"signedPayload":"\#(jws)"}"#)
    }

    func listNotifications(_ query: String?, projectId: String? = nil, token: String = Harness.adminToken)
        -> Response
    {
        send(.get, "/v1/admin/projects/\(projectId ?? project.id.uuidString.lowercased())/notifications",
             query: query, headers: [("Authorization", "Bearer " + token)])
    }

    // MARK: - Webhook

    func testFirstDeliveryIsProcessedAndRedeliveryIsDuplicate() {
        let first = notify("h.refund.s")
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.headers["Content-Type"], "application/json")
        XCTAssertEqual(first.text, #"{"status":"processed","notification_uuid":"5e2a4c1f-0000-4000-8000-000000000001"}"#)
        let again = notify("h.refund.s")
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(again.text, #"{"status":"duplicate","notification_uuid":"5e2a4c1f-0000-4000-8000-000000000001"}"#)
        XCTAssertEqual(notifications.storedUUIDs, [Self.uuid1])
    }

    func testRecordOnlyTypeIsAcknowledged() {
        XCTAssertEqual(notify("h.test.s").text,
                       #"{"status":"processed","notification_uuid":"5e2a4c1f-0000-4000-8000-000000000002"}"#)
    }

    func testMissingContentTypeIsAcceptedButAnotherMediaTypeIsNot() {
        XCTAssertEqual(notify("h.refund.s", contentType: nil).status, 200)
        assertError(notify("h.test.s", contentType: "text/plain"), status: 415, code: "UNSUPPORTED_MEDIA_TYPE")
        XCTAssertEqual(notifications.storedUUIDs, [Self.uuid1])
    }

    func testUnknownOrMalformedPublicKeyIs401() {
        assertError(notify("h.refund.s", key: Harness.otherPublicKey), status: 401, code: "AUTH_INVALID_PUBLIC_KEY")
        assertError(notify("h.refund.s", key: "not-a-key"), status: 401, code: "AUTH_INVALID_PUBLIC_KEY")
        XCTAssertEqual(notifications.storedUUIDs, [])
    }

    func testBadBodiesAre400() {
        let path = "/v1/notifications/" + Harness.publicKey
        let json = [("Content-Type", "application/json")]
        assertError(send(.post, path, headers: json, body: "{"), status: 400, code: "INVALID_JSON")
        assertError(send(.post, path, headers: json, body: "[]"), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": [], "message": "Expected object"]])
        assertError(send(.post, path, headers: json, body: "{}"), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["signedPayload"], "message": "Required"]])
        assertError(send(.post, path, headers: json, body: #"{"signedPayload":42}"#), status: 400,
                    code: "VALIDATION_ERROR", details: [["path": ["signedPayload"], "message": "Expected string"]])
        assertError(send(.post, path, headers: json, body: #"{"signedPayload":"only.two"}"#), status: 400,
                    code: "INVALID_JWS_FORMAT", error: "Invalid JWS format: expected 3 dot-separated parts")
        XCTAssertEqual(notifications.storedUUIDs, [])
    }

    func testVerificationFailuresAre400AndStoreNothing() {
        assertError(notify("h.forged.s"), status: 400, code: "JWS_VERIFICATION_FAILED",
                    error: "JWS signature verification failed: signature does not verify",
                    details: [["path": ["signedPayload"], "message": "signature does not verify", "step": "signature"]])
        assertError(notify("h.forged.s"), status: 400, code: "JWS_VERIFICATION_FAILED",
                    suggestion: "Only App Store Server Notifications V2 signed by Apple are accepted: send Apple's body "
                        + "{\"signedPayload\": \"...\"} unchanged.")
        assertError(notify("h.foreign.s"), status: 400, code: "BUNDLE_ID_MISMATCH",
                    error: "Bundle ID mismatch: bundleId com.other.app is not com.example.app",
                    suggestion: "This notification is for another app or environment: in App Store Connect, use the "
                        + "URL with the public key of the project whose bundle_id, app_apple_id and environments "
                        + "match the app.",
                    details: [["path": ["signedPayload"], "message": "bundleId com.other.app is not com.example.app",
                               "step": "claims"]])
        XCTAssertEqual(notifications.storedUUIDs, [])
    }

    func testRetryableVerificationFailureIs503WithRetryAfter() {
        let response = notify("h.ocsp.s")
        assertError(response, status: 503, code: "SERVICE_UNAVAILABLE")
        XCTAssertEqual(response.headers["Retry-After"], "1")
    }

    func testStorageOutageIs503WithRetryAfterAndABugIs500() {
        notifications.failure = .unavailable
        let response = notify("h.refund.s")
        assertError(response, status: 503, code: "SERVICE_UNAVAILABLE")
        XCTAssertEqual(response.headers["Retry-After"], "1")
        XCTAssertEqual(response.json?["request_id"]?.stringValue, "req-test-1")
        XCTAssertEqual(log.all.count, 1)

        notifications.failure = .internalBug
        let bug = notify("h.refund.s")
        assertError(bug, status: 500, code: "INTERNAL_ERROR")
        XCTAssertFalse(bug.text.contains("SQLSTATE"))
    }

    func testProjectStoreOutageIs503() {
        projects.failure = .unavailable
        assertError(notify("h.refund.s"), status: 503, code: "SERVICE_UNAVAILABLE")
    }

    func testUnwiredNotificationStoreIs503SoAppleRetries() {
        var bare = Router()
        Routes.register(on: &bare, APIDependencies(
            projects: projects, purchases: FakePurchaseStore(projects: projects), verifier: verifier,
            hasher: FakeHasher(), adminToken: nil, now: { Self.now }, log: { _ in }))
        router = bare
        assertError(notify("h.refund.s"), status: 503, code: "SERVICE_UNAVAILABLE")
    }

    // MARK: - Admin list

    func testListRendersNewestFirstWithEveryField() {
        _ = notify("h.refund.s")
        _ = notify("h.test.s")
        let response = listNotifications(nil)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, """
            {"notifications":[\
            {"notification_uuid":"5e2a4c1f-0000-4000-8000-000000000002","type":"TEST","subtype":null,\
            "original_transaction_id":null,"environment":"Sandbox","signed_date":"2026-06-01T00:00:00.000Z",\
            "received_at":"2026-06-01T00:00:00.000Z","processed_at":"2026-06-01T00:00:00.000Z"},\
            {"notification_uuid":"5e2a4c1f-0000-4000-8000-000000000001","type":"REFUND","subtype":null,\
            "original_transaction_id":"1000000123456000","environment":"Production",\
            "signed_date":"2026-06-01T00:00:00.000Z","received_at":"2026-06-01T00:00:00.000Z",\
            "processed_at":"2026-06-01T00:00:00.000Z"}]}
            """)
        XCTAssertEqual(notifications.lastListCall?.2, 100)
    }

    func testListPassesFilterAndLimit() {
        _ = notify("h.refund.s")
        _ = notify("h.test.s")
        let response = listNotifications("original_transaction_id=1000000123456000&limit=1000")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.json?["notifications"]?.arrayValue?.count, 1)
        XCTAssertEqual(notifications.lastListCall?.1, "1000000123456000")
        XCTAssertEqual(notifications.lastListCall?.2, 1000)
        XCTAssertEqual(listNotifications("limit=1").json?["notifications"]?.arrayValue?.count, 1)
    }

    func testListValidatesQuery() {
        assertError(listNotifications("limit=0"), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["limit"], "message": "Number must be greater than or equal to 1"]])
        assertError(listNotifications("limit=1001"), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["limit"], "message": "Number must be less than or equal to 1000"]])
        assertError(listNotifications("limit=99999999999999999999"), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["limit"], "message": "Expected integer"]])
        assertError(listNotifications("limit=ten&original_transaction_id="), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["limit"], "message": "Expected integer"],
                              ["path": ["original_transaction_id"],
                               "message": "String must contain at least 1 character(s)"]])
        XCTAssertNil(notifications.lastListCall)
    }

    func testListNeedsAdminAndAnExistingProject() {
        assertError(listNotifications(nil, token: "wrong"), status: 401, code: "AUTH_INVALID_ADMIN_TOKEN")
        assertError(listNotifications(nil, projectId: "not-a-uuid"), status: 400, code: "VALIDATION_ERROR")
        assertError(listNotifications(nil, projectId: UUID().uuidString), status: 404, code: "PROJECT_NOT_FOUND")
        XCTAssertNil(notifications.lastListCall)
    }
}
