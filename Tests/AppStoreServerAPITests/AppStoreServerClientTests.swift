import AppStoreServerAPI
import Crypto
@testable import Domain
import Foundation
import HTTPClient
import JSON
import TestSupport
import XCTest

/// The client against `FakeAppleServer` over real TLS: every endpoint, the JWT as the fake checks it, and every
/// failure Apple can produce mapped to its `AppStoreAPIError` kind.
final class AppStoreServerClientTests: XCTestCase {
    static let bundleId = "com.example.bouncer"
    var apple: FakeAppleServer!
    var key: FakeAppleServer.Key!

    override func setUpWithError() throws {
        apple = try FakeAppleServer()
        key = try FakeAppleServer.Key.generate()
        apple.expect(key: key, bundleId: Self.bundleId)
    }

    override func tearDown() { apple.stop() }

    func credentials(_ key: FakeAppleServer.Key? = nil, bundleId: String = bundleId) throws -> AppStoreAPICredentials {
        let key = key ?? self.key!
        let fingerprint = try P256.PrivateKey(pem: key.privateKeyPEM).fingerprint
        let meta = AppStoreCredentials(issuerId: key.issuerId, keyId: key.keyId, keyFingerprint: fingerprint,
                                       createdAt: Date(), updatedAt: Date())
        return AppStoreAPICredentials(credentials: UnsealedAppStoreCredentials(credentials: meta, privateKeyPEM: key.privateKeyPEM),
                                      bundleId: bundleId, projectId: UUID())
    }

    func client(caFile: String? = nil, trust: Bool = true, budget: Duration = .seconds(10), maxAttempts: Int = 3,
                        maxRetryAfter: Duration = .seconds(5)) throws -> AppStoreServerClient {
        let http = try HTTPClient(configuration: HTTPClient.Configuration(
            tls: TLSClientConfiguration(trustsSystemRoots: !trust, additionalCAFile: trust ? (caFile ?? apple.caFile) : nil),
            connectTimeout: .seconds(5), readTimeout: .seconds(5)))
        return AppStoreServerClient(http: http, configuration: AppStoreServerClient.Configuration(
            productionURL: apple.productionURL, sandboxURL: apple.sandboxURL, callBudget: budget,
            retry: RetryPolicy(maxAttempts: maxAttempts, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20),
                               maxRetryAfter: maxRetryAfter)))
    }

    func assertAPIError(_ kind: AppStoreAPIError.Kind, file: StaticString = #filePath, line: UInt = #line,
                                _ body: () throws -> Void, check: (AppStoreAPIError) -> Void = { _ in }) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            guard let error = error as? AppStoreAPIError else { return XCTFail("not an AppStoreAPIError: \(error)", file: file, line: line) }
            XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: line)
            check(error)
        }
    }

    // MARK: - Endpoints

    /// Apple's recommended domain (since 2026-05-05) is the default; the variables override it (ServeSettingsTests).
    func testDefaultBaseURLsAreApplesStoreKitDomain() {
        let configuration = AppStoreServerClient.Configuration()
        XCTAssertEqual(configuration.productionURL, "https://api.storekit.apple.com")
        XCTAssertEqual(configuration.sandboxURL, "https://api.storekit-sandbox.apple.com")
    }

    func testTransactionInfoReturnsTheSignedTransactionAndSendsAValidJWT() throws {
        apple.setTransaction("2000000000000001", signed: "header.payload.sig", environment: .production)
        apple.setTransaction("2000000000000001", signed: "sandbox.payload.sig", environment: .sandbox)
        let client = try client()
        XCTAssertEqual(try client.transactionInfo(transactionId: "2000000000000001", environment: .production,
                                                  credentials: credentials()), "header.payload.sig")
        XCTAssertEqual(try client.transactionInfo(transactionId: "2000000000000001", environment: .sandbox,
                                                  credentials: credentials()), "sandbox.payload.sig")
        let requests = apple.requests
        XCTAssertEqual(requests.map(\.endpoint), [.transactionInfo, .transactionInfo])
        XCTAssertEqual(requests.map(\.environment), [.production, .sandbox])
        XCTAssertEqual(requests.map(\.path), ["/inApps/v1/transactions/2000000000000001", "/inApps/v1/transactions/2000000000000001"])
        let first = try XCTUnwrap(requests.first)
        XCTAssertNil(first.jwtProblem)
        XCTAssertEqual(first.jwtHeader?.keys.sorted(), ["alg", "kid", "typ"])
        XCTAssertEqual(first.jwtHeader?["alg"], "ES256")
        XCTAssertEqual(first.jwtHeader?["kid"], .string(key.keyId))
        XCTAssertEqual(first.jwtHeader?["typ"], "JWT")
        let claims = try XCTUnwrap(first.jwtClaims)
        XCTAssertEqual(claims.keys.sorted(), ["aud", "bid", "exp", "iat", "iss"])
        XCTAssertEqual(claims["iss"], .string(key.issuerId))
        XCTAssertEqual(claims["aud"], "appstoreconnect-v1")
        XCTAssertEqual(claims["bid"], .string(Self.bundleId))
        let iat = try XCTUnwrap(claims["iat"]?.int64Value), exp = try XCTUnwrap(claims["exp"]?.int64Value)
        XCTAssertEqual(exp - iat, 20 * 60)
        // The second call reused the cached token.
        XCTAssertEqual(requests[1].header("Authorization"), first.header("Authorization"))
        XCTAssertEqual(client.tokens.tokensSigned, 1)
    }

    func testSubscriptionStatuses() throws {
        apple.setSubscriptionStatuses("77", groups: [
            .init(identifier: "group.pro", lastTransactions: [
                .init(status: 1, originalTransactionId: "77", signedTransactionInfo: "t.1.s", signedRenewalInfo: "r.1.s"),
                .init(status: 2, originalTransactionId: "78", signedTransactionInfo: "t.2.s", signedRenewalInfo: "r.2.s"),
            ]),
            .init(identifier: "group.lite", lastTransactions: [
                .init(status: 5, originalTransactionId: "90", signedTransactionInfo: "t.3.s", signedRenewalInfo: "r.3.s"),
            ]),
        ], environment: .sandbox)
        let statuses = try client().subscriptionStatuses(transactionId: "77", environment: .sandbox, credentials: credentials())
        XCTAssertEqual(statuses, [
            SignedSubscriptionStatus(subscriptionGroupIdentifier: "group.pro", originalTransactionId: "77", status: 1,
                                     signedTransactionInfo: "t.1.s", signedRenewalInfo: "r.1.s"),
            SignedSubscriptionStatus(subscriptionGroupIdentifier: "group.pro", originalTransactionId: "78", status: 2,
                                     signedTransactionInfo: "t.2.s", signedRenewalInfo: "r.2.s"),
            SignedSubscriptionStatus(subscriptionGroupIdentifier: "group.lite", originalTransactionId: "90", status: 5,
                                     signedTransactionInfo: "t.3.s", signedRenewalInfo: "r.3.s"),
        ])
        XCTAssertEqual(apple.requests.map(\.path), ["/inApps/v1/subscriptions/77"])
    }

    func testTransactionHistoryPagesWithRevision() throws {
        apple.setTransactionHistory("55", pages: [["a.1.s", "a.2.s"], ["b.1.s"]], environment: .production)
        let client = try client()
        let first = try client.transactionHistory(transactionId: "55", revision: nil, environment: .production, credentials: credentials())
        XCTAssertEqual(first, TransactionHistoryPage(signedItems: ["a.1.s", "a.2.s"], next: "revision-1", hasMore: true))
        let second = try client.transactionHistory(transactionId: "55", revision: first.next, environment: .production,
                                                   credentials: credentials())
        XCTAssertEqual(second, TransactionHistoryPage(signedItems: ["b.1.s"], next: "revision-2", hasMore: false))
        XCTAssertEqual(apple.requests.map(\.path), ["/inApps/v2/history/55", "/inApps/v2/history/55"])
        XCTAssertEqual(apple.requests.map { $0.query.map(\.value) }, [[], ["revision-1"]])
    }

    func testNotificationHistoryPostsDatesAndPages() throws {
        apple.setNotificationHistory(pages: [["n.1.s"], ["n.2.s", "n.3.s"]], environment: .production)
        let client = try client()
        let start = Date(timeIntervalSince1970: 1_700_000_000.123), end = Date(timeIntervalSince1970: 1_700_086_400)
        let first = try client.notificationHistory(from: start, to: end, paginationToken: nil, environment: .production,
                                                   credentials: credentials())
        XCTAssertEqual(first, NotificationHistoryPage(signedItems: ["n.1.s"], next: "page-1", hasMore: true))
        let second = try client.notificationHistory(from: start, to: end, paginationToken: "page-1", environment: .production,
                                                    credentials: credentials())
        XCTAssertEqual(second, NotificationHistoryPage(signedItems: ["n.2.s", "n.3.s"], next: "page-2", hasMore: false))
        let requests = apple.requests
        XCTAssertEqual(requests.map(\.method), ["POST", "POST"])
        XCTAssertEqual(requests.first?.jsonBody, ["startDate": 1_700_000_000_123, "endDate": 1_700_086_400_000])
        XCTAssertEqual(requests.first?.header("Content-Type"), "application/json")
        XCTAssertEqual(requests.last?.query.first?.name, "paginationToken")
    }

    func testSendConsumptionInformationSendsAppleV2Body() throws {
        try client().sendConsumptionInformation(
            transactionId: "99", ConsumptionInformation(deliveryStatus: "DELIVERED", consumptionPercentage: 25_000,
                                                        sampleContentProvided: false, refundPreference: "DECLINE"),
            environment: .production, credentials: credentials())
        let recorded = apple.consumptionRequests
        XCTAssertEqual(recorded.map(\.transactionId), ["99"])
        XCTAssertEqual(recorded.first?.body, ["customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": false,
                                              "consumptionPercentage": 25_000, "refundPreference": "DECLINE"])
        XCTAssertEqual(apple.requests.first?.method, "PUT")
        XCTAssertEqual(apple.requests.first?.path, "/inApps/v2/transactions/consumption/99")
    }

    func testTestNotificationRequestAndStatus() throws {
        apple.setTestNotification(token: "token-1/x", signedPayload: "p.1.s",
                                  attempts: [.init(attemptDate: 1_700_000_000_000, result: "SUCCESS")], environment: .sandbox)
        let client = try client()
        let token = try client.requestTestNotification(environment: .sandbox, credentials: credentials())
        XCTAssertEqual(token, "token-1/x")
        let status = try client.testNotificationStatus(token: token, environment: .sandbox, credentials: credentials())
        XCTAssertEqual(status, TestNotificationStatus(signedPayload: "p.1.s", sendAttempts: [
            .init(attemptDate: Date(timeIntervalSince1970: 1_700_000_000), result: "SUCCESS"),
        ]))
        // The "/" in the token was percent-encoded: one path segment, decoded back by the fake.
        XCTAssertEqual(apple.requests.last?.id, "token-1/x")
        XCTAssertEqual(apple.requests.last?.path, "/inApps/v1/notifications/test/token-1%2Fx")
    }

    func testExtendRenewalDate() throws {
        apple.setExtendResult("1000", .init(effectiveDate: 1_800_000_000_000, success: true, webOrderLineItemId: "w1"),
                              environment: .production)
        let id = UUID()
        let result = try client().extendRenewalDate(originalTransactionId: "1000",
                                                    RenewalExtensionRequest(extendByDays: 7, reasonCode: 3, requestIdentifier: id),
                                                    environment: .production, credentials: credentials())
        XCTAssertEqual(result, RenewalExtensionResult(effectiveDate: Date(timeIntervalSince1970: 1_800_000_000),
                                                      originalTransactionId: "1000", success: true, webOrderLineItemId: "w1"))
        XCTAssertEqual(apple.requests.first?.jsonBody, ["extendByDays": 7, "extendReasonCode": 3,
                                                        "requestIdentifier": .string(id.uuidString.lowercased())])
    }

    func testPathIdsAreEncodedAsOneSegment() throws {
        let hostile = "../1?x=#y z"
        apple.setTransaction(hostile, signed: "h.p.s", environment: .production)
        XCTAssertEqual(try client().transactionInfo(transactionId: hostile, environment: .production, credentials: credentials()), "h.p.s")
        XCTAssertEqual(apple.requests.first?.path, "/inApps/v1/transactions/..%2F1%3Fx%3D%23y%20z")
        XCTAssertEqual(apple.requests.first?.id, hostile)
    }

    // MARK: - Failures

    func testUnknownIdIsNotFoundWithApplesCode() throws {
        assertAPIError(.notFound, { _ = try client().transactionInfo(transactionId: "404", environment: .production, credentials: credentials()) }) {
            XCTAssertEqual($0.httpStatus, 404)
            XCTAssertEqual($0.appleErrorCode, 4040010)
            XCTAssertEqual($0.appleErrorMessage, "Transaction id not found.")
        }
        XCTAssertEqual(apple.requests.count, 1)   // a verdict: not retried
    }

    func testRetryableNotFoundCodesAreUnavailable() throws {
        for code in [4040002, 4040004, 4040006] {
            apple.inject(.notFound(errorCode: code), on: .transactionInfo)
            assertAPIError(.unavailable, { _ = try client().transactionInfo(transactionId: "1", environment: .sandbox, credentials: credentials()) }) {
                XCTAssertEqual($0.appleErrorCode, code)
                XCTAssertNotNil($0.retryAfterSeconds)
            }
        }
    }

    func testWrongKeyIsUnauthorizedAsTheFakeChecksTheSignature() throws {
        apple.setTransaction("1", signed: "h.p.s", environment: .production)
        var other = try FakeAppleServer.Key.generate()
        other.issuerId = key.issuerId   // same ids, another key: only the signature differs
        assertAPIError(.unauthorized, { _ = try client().transactionInfo(transactionId: "1", environment: .production,
                                                                          credentials: credentials(other)) }) {
            XCTAssertEqual($0.httpStatus, 401)
        }
        XCTAssertEqual(apple.requests.map(\.jwtProblem), ["signature does not verify"])
    }

    func testWrongBundleIdIsUnauthorized() throws {
        assertAPIError(.unauthorized, { _ = try client().transactionInfo(transactionId: "1", environment: .production,
                                                                          credentials: credentials(bundleId: "com.other")) })
        XCTAssertEqual(apple.requests.map(\.jwtProblem), ["bid is not the expected bundle id"])
    }

    func testRateLimitedWithRetryAfterThenSuccess() throws {
        apple.setTransaction("1", signed: "h.p.s", environment: .production)
        apple.inject(.rateLimited(retryAfter: 1), on: .transactionInfo)
        XCTAssertEqual(try client().transactionInfo(transactionId: "1", environment: .production, credentials: credentials()), "h.p.s")
        XCTAssertEqual(apple.requests.count, 2)
    }

    func testRateLimitedBeyondTheCapIsUnavailableAtOnceWithRetryAfter() throws {
        apple.inject(.rateLimited(retryAfter: 120), on: .transactionInfo, times: nil)
        assertAPIError(.unavailable, { _ = try client().transactionInfo(transactionId: "1", environment: .production, credentials: credentials()) }) {
            XCTAssertEqual($0.httpStatus, 429)
            XCTAssertEqual($0.appleErrorCode, 4290000)
            XCTAssertEqual($0.retryAfterSeconds, 120)
        }
        XCTAssertEqual(apple.requests.count, 1)
    }

    /// Apple's documented form: a UNIX time in milliseconds. Within the cap it is waited for, not replaced by backoff.
    func testRateLimitedWithApplesMillisecondsIsWaitedFor() throws {
        apple.setTransaction("1", signed: "h.p.s", environment: .production)
        apple.inject(.rateLimited(retryAfter: .appleMilliseconds(fromNow: 1500)), on: .transactionInfo)
        let started = ContinuousClock.now
        XCTAssertEqual(try client().transactionInfo(transactionId: "1", environment: .production, credentials: credentials()), "h.p.s")
        let waited = ContinuousClock.now - started
        XCTAssertEqual(apple.requests.count, 2)
        XCTAssertGreaterThanOrEqual(waited, .milliseconds(1300), "retried after \(waited), before Apple's time")
    }

    /// Beyond the cap in Apple's form: no retry, and Apple's delay (not the 30 s default) is reported.
    func testRateLimitedWithApplesMillisecondsBeyondTheCapStopsWithApplesDelay() throws {
        apple.inject(.rateLimited(retryAfter: .appleMilliseconds(fromNow: 120_000)), on: .transactionInfo, times: nil)
        assertAPIError(.unavailable, { _ = try client().transactionInfo(transactionId: "1", environment: .production, credentials: credentials()) }) {
            XCTAssertEqual($0.httpStatus, 429)
            XCTAssertEqual($0.retryAfterSeconds, 120)
        }
        XCTAssertEqual(apple.requests.count, 1)
    }

    /// The HTTP-date form (second resolution, so 119...121 s).
    func testRateLimitedWithAnHTTPDateBeyondTheCapStopsWithItsDelay() throws {
        apple.inject(.rateLimited(retryAfter: .httpDate(secondsFromNow: 120)), on: .transactionInfo, times: nil)
        assertAPIError(.unavailable, { _ = try client().transactionInfo(transactionId: "1", environment: .production, credentials: credentials()) }) {
            XCTAssertEqual($0.httpStatus, 429)
            XCTAssertTrue((119...121).contains($0.retryAfterSeconds ?? 0), "\(String(describing: $0.retryAfterSeconds))")
        }
        XCTAssertEqual(apple.requests.count, 1)
    }

    /// Garbage: the client's own backoff, and the default delay reported.
    func testRateLimitedWithAnUnreadableRetryAfterBacksOffAndReportsTheDefault() throws {
        apple.inject(.rateLimited(retryAfter: .raw("soon")), on: .transactionInfo, times: nil)
        assertAPIError(.unavailable, { _ = try client().transactionInfo(transactionId: "1", environment: .production, credentials: credentials()) }) {
            XCTAssertEqual($0.retryAfterSeconds, 30)
        }
        XCTAssertEqual(apple.requests.count, 3)
    }

    func testPersistent500IsUnavailableAfterTheBoundedAttempts() throws {
        apple.inject(.serverError(), times: nil)
        assertAPIError(.unavailable, { _ = try client(maxAttempts: 3).transactionInfo(transactionId: "1", environment: .production,
                                                                                       credentials: credentials()) }) {
            XCTAssertEqual($0.httpStatus, 500)
            XCTAssertEqual($0.appleErrorCode, 5000000)
            XCTAssertEqual($0.retryAfterSeconds, 30)
        }
        XCTAssertEqual(apple.requests.count, 3)
    }

    func testTransient500ThenSuccess() throws {
        apple.setTransaction("1", signed: "h.p.s", environment: .production)
        apple.inject(.serverError(status: 503), times: 2)
        XCTAssertEqual(try client().transactionInfo(transactionId: "1", environment: .production, credentials: credentials()), "h.p.s")
        XCTAssertEqual(apple.requests.count, 3)
    }

    func testStallIsUnavailableWithinTheBudget() throws {
        apple.inject(.stall(seconds: 8), times: nil)
        let started = ContinuousClock.now
        assertAPIError(.unavailable, { _ = try client(budget: .seconds(1)).transactionInfo(transactionId: "1", environment: .production,
                                                                                            credentials: credentials()) }) {
            XCTAssertNil($0.httpStatus)
            XCTAssertEqual($0.retryAfterSeconds, 30)
        }
        // Bounded by the budget, not by the stall (a generous bound, not a timing assertion).
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(6))
    }

    func testUntrustedCertificateIsUnavailableNeverASuccess() throws {
        apple.setTransaction("1", signed: "h.p.s", environment: .production)
        assertAPIError(.unavailable, { _ = try client(trust: false).transactionInfo(transactionId: "1", environment: .production,
                                                                                     credentials: credentials()) }) {
            XCTAssertTrue($0.reason.contains("tls"), $0.reason)
        }
        assertAPIError(.unavailable, { _ = try client(caFile: apple.pki.otherCAFile).transactionInfo(
            transactionId: "1", environment: .production, credentials: credentials()) })
        XCTAssertEqual(apple.requests.count, 0)
    }

    func testOther4xxIsRejected() throws {
        apple.inject(.appleError(status: 400, errorCode: 4000006, message: "Invalid transaction id."))
        assertAPIError(.rejected, { _ = try client().transactionInfo(transactionId: "x", environment: .production, credentials: credentials()) }) {
            XCTAssertEqual($0.httpStatus, 400)
            XCTAssertEqual($0.appleErrorCode, 4000006)
        }
    }

    func testUnreadable2xxIsInvalidResponse() throws {
        for body in ["not json", #"{"signedTransactionInfo": 5}"#, "[]", #"{}"#] {
            apple.inject(.body(body))
            assertAPIError(.invalidResponse, { _ = try client().transactionInfo(transactionId: "1", environment: .production,
                                                                                 credentials: credentials()) })
        }
        apple.inject(.body(#"{"hasMore": "yes", "signedTransactions": []}"#))
        assertAPIError(.invalidResponse, { _ = try client().transactionHistory(transactionId: "1", revision: nil, environment: .production,
                                                                                credentials: credentials()) })
    }

    func testXcodeEnvironmentHasNoServer() throws {
        assertAPIError(.invalidRequest, { _ = try client().transactionInfo(transactionId: "1", environment: .xcode, credentials: credentials()) })
        XCTAssertEqual(apple.requests.count, 0)
    }

    func testKeepAliveReusesOneConnection() throws {
        apple.setTransaction("1", signed: "h.p.s", environment: .production)
        let client = try client()
        for _ in 0..<4 { _ = try client.transactionInfo(transactionId: "1", environment: .production, credentials: credentials()) }
        XCTAssertEqual(client.connectionsOpened, 1)
        XCTAssertEqual(apple.requests.map(\.connection), [1, 1, 1, 1])
        XCTAssertEqual(apple.server.connectionCount, 1)
    }
}
