import API
import Domain
import Foundation
@testable import HTTPCore
import JSON
import Synchronization
import XCTest

/// A clock tests move by hand (rotation graces, expiries); starts at `Harness.now`.
final class TestClock: Sendable {
    private let instant = Mutex(Harness.now)
    var now: Date { instant.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { instant.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// An in-process API: the real routes over in-memory ports, dispatched through HTTPCore's router without sockets.
final class Harness {
    static let now = Date(timeIntervalSince1970: 1_780_272_000)  // 2026-06-01T00:00:00Z
    static let adminToken = "admin-token-for-tests-0123456789"
    static let publicKey = "pk_0123456789abcdef0123456789abcdef"
    static let secretKey = "sk_" + String(repeating: "ab", count: 32)
    static let otherPublicKey = "pk_ffffffffffffffffffffffffffffffff"

    let projects = FakeProjectStore()
    let purchases: FakePurchaseStore
    let verifier = FakeVerifier()
    let credentials: FakeCredentialStore
    let log = LogSink()
    let clock = TestClock()
    var router = Router()
    let project: Project

    init(adminToken: String? = Harness.adminToken, policy: TransferPolicy = .transfer, requireSecret: Bool = false,
         tokenPolicy: AppAccountTokenPolicy = .ignore,
         sealer: FakeSealer? = FakeSealer()) {
        purchases = FakePurchaseStore(projects: projects)
        credentials = FakeCredentialStore(projects: projects)
        project = projects.seed(
            Project(id: FakeProjectStore.uuid(900), name: "My App", bundleId: "com.example.app",
                    transferPolicy: policy, requireSecretKeyForReads: requireSecret,
                    appAccountTokenPolicy: tokenPolicy, publicKey: Harness.publicKey,
                    createdAt: Harness.now, updatedAt: Harness.now),
            secretKey: Harness.secretKey,
            products: ["com.myapp.pro.yearly": ["pro"], "com.myapp.lifetime": ["pro", "extras"]])
        let sink = log
        let clock = clock
        let deps = APIDependencies(
            projects: projects, purchases: purchases, verifier: verifier, hasher: FakeHasher(),
            adminToken: adminToken, credentials: credentials, sealer: sealer, keyInspector: FakeKeyInspector(),
            now: { clock.now }, log: { sink.write($0) })
        Routes.register(on: &router, deps)
    }

    /// Sends a request through the router; a path no route matches answers 404/405 like the server would.
    func send(
        _ method: HTTPMethod, _ path: String, headers: [(String, String)] = [], body: String? = nil
    ) -> Response {
        switch router.match(method, path) {
        case .found(let route, let parameters):
            let request = Request(
                method: method, path: path, headers: HTTPHeaders(headers), body: Array((body ?? "").utf8),
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

    func postJSON(_ path: String, _ body: String, headers: [(String, String)] = []) -> Response {
        send(.post, path, headers: [("Content-Type", "application/json")] + headers, body: body)
    }

    func admin(_ method: HTTPMethod, _ path: String, body: String? = nil) -> Response {
        var headers = [("Authorization", "Bearer " + Harness.adminToken)]
        if body != nil { headers.append(("Content-Type", "application/json")) }
        return send(method, path, headers: headers, body: body)
    }

    func postReceipt(_ jws: String, userId: String? = nil, key: String = Harness.publicKey) -> Response {
        var body = #"{"signed_transaction_info":"# + quote(jws)
        if let userId { body += #","user_id":"# + quote(userId) }
        body += "}"
        return postJSON("/v1/receipts/" + key, body)
    }

    /// Registers a transaction the fake verifier will accept as `jws`.
    func register(_ jws: String, _ facts: TransactionFacts) {
        verifier.register(jws, .success(facts))
    }

    private func quote(_ s: String) -> String { JSONValue.string(s).serializedString() }
}

extension Response {
    var text: String { String(decoding: body, as: UTF8.self) }

    var json: JSONValue? { try? JSONParser.parse(body) }
}

/// Test facts with the issue's example values.
func facts(
    transactionId: String = "1000000123456789", originalTransactionId: String = "1000000123456000",
    productId: String = "com.myapp.pro.yearly", type: ProductType = .autoRenewable,
    environment: StoreEnvironment = .production, purchaseDate: Date = Date(timeIntervalSince1970: 1_774_051_200),
    expiresDate: Date? = Date(timeIntervalSince1970: 1_805_500_800), revocationDate: Date? = nil,
    signedDate: Date = Date(timeIntervalSince1970: 1_774_051_200), appAccountToken: UUID? = nil
) -> TransactionFacts {
    TransactionFacts(
        transactionId: transactionId, originalTransactionId: originalTransactionId, productId: productId, type: type,
        environment: environment, purchaseDate: purchaseDate, expiresDate: expiresDate,
        revocationDate: revocationDate, appAccountToken: appAccountToken, ownershipType: .purchased,
        signedDate: signedDate, payloadJSON: "{}")
}

/// Asserts the exact error shape of a response.
func assertError(
    _ response: Response, status: Int, code: String, error: String? = nil, suggestion: String? = nil,
    details: [[String: Any]]? = nil, file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertEqual(response.status, status, "status; body: \(response.text)", file: file, line: line)
    XCTAssertEqual(response.headers["Content-Type"], "application/json", file: file, line: line)
    guard let json = response.json else { return XCTFail("body is not JSON: \(response.text)", file: file, line: line) }
    XCTAssertEqual(json["code"]?.stringValue, code, file: file, line: line)
    XCTAssertNotNil(json["error"]?.stringValue, file: file, line: line)
    XCTAssertNotNil(json["suggestion"]?.stringValue, file: file, line: line)
    if let error { XCTAssertEqual(json["error"]?.stringValue, error, file: file, line: line) }
    if let suggestion { XCTAssertEqual(json["suggestion"]?.stringValue, suggestion, file: file, line: line) }
    // Every error body carries the request id, equal to the X-Request-Id the harness sends.
    XCTAssertEqual(json["request_id"]?.stringValue, "req-test-1", file: file, line: line)
    if let details {
        let actual = json["details"]?.arrayValue ?? []
        XCTAssertEqual(actual.count, details.count, "details: \(response.text)", file: file, line: line)
        for (a, e) in zip(actual, details) {
            XCTAssertEqual(a["path"]?.arrayValue?.compactMap(\.stringValue), e["path"] as? [String], file: file, line: line)
            XCTAssertEqual(a["message"]?.stringValue, e["message"] as? String, file: file, line: line)
            XCTAssertEqual(a["step"]?.stringValue, e["step"] as? String, "step", file: file, line: line)
        }
    }
}
