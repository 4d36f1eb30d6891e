@testable import BouncerClient
import Foundation
import JSON
import Synchronization
import TestSupport
import XCTest

/// Every `BouncerClient` method and every error kind against a real `bouncer serve` (real PostgreSQL, real HTTP),
/// with a fake Apple over real TLS for lookups and offer credentials.
final class BouncerClientLiveTests: XCTestCase {
    /// One server (and fake Apple) for the class.
    private static let shared = Mutex<LiveBouncer?>(nil)

    private var live: LiveBouncer {
        get throws {
            try Self.shared.withLock { current in
                if let current { return current }
                let made = try LiveBouncer(label: "live", apple: try FakeAppleServer())
                current = made
                return made
            }
        }
    }

    override class func tearDown() {
        let live = shared.withLock { current -> LiveBouncer? in
            defer { current = nil }
            return current
        }
        live?.stop()
        super.tearDown()
    }

    override func tearDown() { try? live.apple?.clearFailures() }

    // MARK: - Purchases

    func testPostSignedTransactionRecordsItAndTheUserReadsItBack() async throws {
        let live = try live
        let project = try live.project()
        let client = live.client(project)
        let id = LiveBouncer.uniqueId()
        let expires = LiveBouncer.ms(30 * 86_400)
        let jws = try LiveBouncer.signedTransaction(bundleId: project.bundleId, transactionId: id, expires: expires)

        let result = try await client.postSignedTransaction(jws, userId: "alice", deviceId: "device-1")
        XCTAssertEqual(result, ReceiptResult(
            valid: true, transactionId: id, originalTransactionId: id, productId: "com.client.pro.monthly",
            entitlements: ["pro"], expiresDate: date(expires), status: .active, environment: .sandbox))
        XCTAssertEqual(try live.transactionRows(project), ["\(id) com.client.pro.monthly Sandbox alice"])

        // Idempotent: the same purchase again, one row.
        _ = try await client.postSignedTransaction(jws, userId: "alice")
        XCTAssertEqual(try live.transactionRows(project).count, 1)

        let user = try await client.subscriptions(userId: "alice")
        XCTAssertEqual(user, UserSubscriptions(
            userId: "alice", status: .active, entitlements: ["pro"],
            subscriptions: [Subscription(
                productId: "com.client.pro.monthly", status: .active, currentPeriodEnd: date(expires),
                autoRenewEnabled: true, originalTransactionId: id, environment: .sandbox, entitlements: ["pro"],
                inGracePeriod: false, inBillingRetry: false, gracePeriodExpiresDate: nil, expirationIntent: nil,
                autoRenewProductId: nil, ownershipType: "PURCHASED", revocationDate: nil)]))

        // A user id that needs percent-encoding in the path reaches the server intact.
        let odd = "a/b c?d#é"
        _ = try await client.postSignedTransaction(
            try LiveBouncer.signedTransaction(bundleId: project.bundleId, transactionId: LiveBouncer.uniqueId()),
            userId: odd)
        let oddUser = try await client.subscriptions(userId: odd)
        XCTAssertEqual(oddUser.userId, odd)
        XCTAssertEqual(oddUser.entitlements, ["pro"])

        // Nobody: status none, no purchases.
        let nobody = try await client.subscriptions(userId: "nobody")
        XCTAssertEqual(nobody, UserSubscriptions(userId: "nobody", status: PurchaseStatus.none, entitlements: [],
                                                 subscriptions: []))
    }

    func testPostTransactionIdAsksAppleAndRecords() async throws {
        let live = try live
        let apple = try XCTUnwrap(live.apple)
        let project = try live.project()
        _ = try live.storeCredentials(project)
        let id = LiveBouncer.uniqueId()
        let expires = LiveBouncer.ms(30 * 86_400)
        apple.setTransaction(id, signed: try LiveBouncer.signedTransaction(
            bundleId: project.bundleId, transactionId: id, expires: expires, environment: "Production"),
            environment: .production)

        let result = try await live.client(project).postTransactionId(id, userId: "bob")
        XCTAssertEqual(result, ReceiptResult(
            valid: true, transactionId: id, originalTransactionId: id, productId: "com.client.pro.monthly",
            entitlements: ["pro"], expiresDate: date(expires), status: .active, environment: .production))
        XCTAssertEqual(try live.transactionRows(project), ["\(id) com.client.pro.monthly Production bob"])
        XCTAssertEqual(apple.requests.filter { $0.id == id }.map(\.environment), [.production])
    }

    func testPostAppTransactionAndTheUsersAppPurchases() async throws {
        let live = try live
        let project = try live.project(extra: [
            ("app_purchase_entitlements", ["purchased_before_version": "2.0", "entitlements": ["legacy"]]),
        ], product: nil)
        let client = live.client(project)
        let appTransactionId = "7040" + LiveBouncer.uniqueId()
        let purchased = LiveBouncer.ms(-400 * 86_400)
        let jws = try LiveBouncer.signedAppTransaction(bundleId: project.bundleId, appTransactionId: appTransactionId,
                                                       originalPurchase: purchased)

        let result = try await client.postAppTransaction(jws, userId: "carol")
        XCTAssertEqual(result, AppTransactionResult(
            appTransactionId: appTransactionId, bundleId: project.bundleId, environment: .sandbox,
            originalApplicationVersion: "1.9", originalPurchaseDate: date(purchased), entitlements: ["legacy"],
            consentRescindedAt: nil))

        let user = try await client.subscriptions(userId: "carol")
        XCTAssertEqual(user, UserSubscriptions(
            userId: "carol", status: .active, entitlements: ["legacy"], subscriptions: [],
            appPurchases: [AppPurchase(source: "app_purchase", appTransactionId: appTransactionId, environment: .sandbox,
                                       originalApplicationVersion: "1.9", originalPurchaseDate: date(purchased),
                                       entitlements: ["legacy"], consentRescindedAt: nil)],
            consentRescinded: false, consentRescindedAt: nil))
    }

    func testOfferSignaturesInBothFormats() async throws {
        let live = try live
        let project = try live.project()
        let key = try live.storeCredentials(project, keyId: "OFFERKEY01")
        let client = live.client(project)

        let token = UUID()
        let legacy = try await client.legacyOfferSignature(productId: "com.client.pro.monthly", offerId: "WINBACK50",
                                                           appAccountToken: token)
        XCTAssertEqual(legacy.keyId, key.keyId)
        XCTAssertEqual(legacy.nonce, legacy.nonce.lowercased())
        XCTAssertNotNil(UUID(uuidString: legacy.nonce))
        XCTAssertGreaterThan(legacy.timestamp, LiveBouncer.ms(-3600))
        XCTAssertNotNil(Data(base64Encoded: legacy.signature))

        let jws = try await client.jwsOfferSignature(productId: "com.client.pro.monthly", offerId: "WINBACK50",
                                                     transactionId: "2000000000000001")
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3, jws)
        let header = try JSONParser.parse(Array(try XCTUnwrap(base64URL(parts.first ?? ""))))
        XCTAssertEqual(header["kid"], .string(key.keyId))
        XCTAssertEqual(header["alg"], "ES256")
    }

    func testSubscriptionsWithTheSecretKeyWhenTheProjectRequiresIt() async throws {
        let live = try live
        let project = try live.project(extra: [("require_secret_key_for_reads", true)])
        let withKey = try await live.client(project, secretKey: project.secretKey).subscriptions(userId: "dave")
        XCTAssertEqual(withKey.status, PurchaseStatus.none)
        XCTAssertTrue(live.client(project, secretKey: project.secretKey).hasSecretKey)

        // Without it: 401 AUTH_SECRET_KEY_REQUIRED; with a wrong one: 401 AUTH_INVALID_SECRET_KEY.
        let missing = await bouncerError { try await live.client(project).subscriptions(userId: "dave") }
        assertServerError(missing, 401, "AUTH_SECRET_KEY_REQUIRED", message: "Secret key required.")
        let wrong = await bouncerError {
            try await live.client(project, secretKey: "sk_" + String(repeating: "0", count: 48)).subscriptions(userId: "dave")
        }
        assertServerError(wrong, 401, "AUTH_INVALID_SECRET_KEY", message: "Invalid secret key.")
        // The key never shows in what an app might log.
        let described = "\(live.client(project, secretKey: project.secretKey))"
        XCTAssertFalse(described.contains(project.secretKey), described)
        var dumped = ""
        dump(live.client(project, secretKey: project.secretKey), to: &dumped)
        XCTAssertFalse(dumped.contains(project.secretKey), dumped)
        XCTAssertFalse(String(reflecting: live.client(project, secretKey: project.secretKey)).contains(project.secretKey))
    }

    /// The token route (`GET …/:userId/token`) is added by the `tokens` branch: skipped only while this server
    /// answers 404 `NOT_FOUND` (no such route).
    func testEntitlementTokenWithTheSecretKey() async throws {
        let live = try live
        let project = try live.project()
        // Tokens are opt-in per project.
        let enabled = try live.server.client.send("PATCH", "/v1/admin/projects/\(project.id)",
                                                  json: ["entitlement_tokens": true], headers: live.admin)
        let client = live.client(project, secretKey: project.secretKey)
        do {
            let token = try await client.entitlementToken(userId: "erin")
            XCTAssertEqual(enabled.status, 200, enabled.description)
            XCTAssertEqual(token.token.split(separator: ".").count, 3, token.token)
            XCTAssertGreaterThan(token.expiresAt, Date(timeIntervalSinceNow: -60))
            let payload = try JSONParser.parse(Array(try XCTUnwrap(base64URL(token.token.split(separator: ".")[1]))))
            XCTAssertEqual(payload["sub"], "erin")
            XCTAssertEqual(payload["aud"], .string(project.id))
        } catch let error as BouncerError where error.status == 404 && error.code == "NOT_FOUND" {
            throw XCTSkip("this server has no token route yet (GET /v1/subscriptions/:pk/:user/token answered 404)")
        }

        // Without a secret key the client refuses before sending anything.
        let noKey = await bouncerError { try await live.client(project).entitlementToken(userId: "erin") }
        XCTAssertEqual(noKey?.kind, .secretKeyMissing)
        XCTAssertEqual(noKey?.attempts, 0)
        XCTAssertNil(noKey?.status)
        // A wrong secret key: 401.
        let wrong = await bouncerError {
            try await live.client(project, secretKey: "sk_" + String(repeating: "1", count: 48)).entitlementToken(userId: "erin")
        }
        assertServerError(wrong, 401, "AUTH_INVALID_SECRET_KEY", message: "Invalid secret key.")
    }

    // MARK: - Errors

    func testValidationErrorCarriesItsDetails() async throws {
        let live = try live
        let project = try live.project()
        let error = await bouncerError {
            try await live.client(project).postSignedTransaction("", userId: String(repeating: "u", count: 300))
        }
        assertServerError(error, 400, "VALIDATION_ERROR", message: "Validation error", details: [
            BouncerError.Detail(path: ["signed_transaction_info"], message: "String must contain at least 1 character(s)"),
            BouncerError.Detail(path: ["user_id"], message: "String must contain at most 256 character(s)"),
        ])
        XCTAssertEqual(error?.isRetryable, false)

        // A JWS that fails verification: 400 with the step that refused it.
        let forged = await bouncerError { try await live.client(project).postSignedTransaction("a.b.c") }
        XCTAssertEqual(forged?.status, 400)
        XCTAssertEqual(forged?.details.first?.path, ["signed_transaction_info"])
        XCTAssertNotNil(forged?.details.first?.step, "\(String(describing: forged))")
        XCTAssertEqual(try live.transactionRows(project), [])
    }

    func testBadPublicKeyIs401() async throws {
        let live = try live
        let client = BouncerClient(baseURL: live.baseURL, publicKey: "pk_" + String(repeating: "0", count: 32))
        let error = await bouncerError { try await client.subscriptions(userId: "x") }
        assertServerError(error, 401, "AUTH_INVALID_PUBLIC_KEY", message: "Invalid public key.")
    }

    func testUnmappedOfferProductIs404() async throws {
        let live = try live
        let project = try live.project()
        _ = try live.storeCredentials(project)
        let error = await bouncerError {
            try await live.client(project).legacyOfferSignature(productId: "com.client.unmapped", offerId: "X")
        }
        assertServerError(error, 404, "PRODUCT_NOT_FOUND", message: "Product not found in this project.")
    }

    func testConflictingTransactionIs409AndWritesNothing() async throws {
        let live = try live
        let project = try live.project()
        let client = live.client(project)
        let id = LiveBouncer.uniqueId()
        _ = try await client.postSignedTransaction(try LiveBouncer.signedTransaction(bundleId: project.bundleId, transactionId: id))
        let other = try LiveBouncer.signedTransaction(bundleId: project.bundleId, transactionId: id, productId: "com.client.other")
        let error = await bouncerError { try await client.postSignedTransaction(other) }
        assertServerError(error, 409, "TRANSACTION_CONFLICT")
        XCTAssertEqual(try live.transactionRows(project), ["\(id) com.client.pro.monthly Sandbox -"])
    }

    func testAppleUnavailableIs503WithRetryAfterBeyondTheCapSoItIsSurfacedAtOnce() async throws {
        let live = try live
        let apple = try XCTUnwrap(live.apple)
        let project = try live.project()
        _ = try live.storeCredentials(project)
        let id = LiveBouncer.uniqueId()
        apple.inject(.serverError(), on: .transactionInfo, times: nil)
        // Bouncer answers Retry-After: 30; the default policy waits at most 10 s in all: no retry.
        let error = await bouncerError { try await live.client(project).postTransactionId(id) }
        assertServerError(error, 503, "APPLE_UNAVAILABLE", message: "Apple's App Store Server API is unavailable.")
        XCTAssertEqual(error?.retryAfter, 30)
        XCTAssertEqual(error?.isRetryable, true)
        XCTAssertEqual(try live.transactionRows(project), [])
    }

    func testConnectionRefusedIsATransportError() async throws {
        // A port that was just listening and is closed now.
        let closed = try LocalHTTPSServer { _ in .close }
        let port = closed.port
        closed.stop()
        let client = BouncerClient(baseURL: URL(fileURLWithPath: "/").withPort(port), publicKey: "pk_x")
        let error = await bouncerError { try await client.subscriptions(userId: "x") }
        XCTAssertEqual(error?.kind, .transport)
        XCTAssertNil(error?.status)
        XCTAssertNil(error?.code)
        XCTAssertEqual(error?.attempts, 1)
        XCTAssertEqual((error?.underlying as? URLError)?.code, .cannotConnectToHost, "\(String(describing: error?.underlying))")
        XCTAssertEqual(error?.isRetryable, true)
    }
}

/// base64url → bytes.
func base64URL(_ text: Substring) -> Data? {
    var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while b64.count % 4 != 0 { b64 += "=" }
    return Data(base64Encoded: b64)
}
