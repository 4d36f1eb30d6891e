import Crypto
public import Foundation
public import JSON
import Synchronization

/// A fake App Store Server API over real TLS, for tests of anything that calls Apple (the client, lookups,
/// reconciliation, consumption, operator tools).
///
/// One HTTPS server (`LocalHTTPSServer`, certificate from a throwaway `TLSTestPKI` CA) serves both environments
/// under two base URLs: `productionURL` (`https://127.0.0.1:PORT/production`) and `sandboxURL` (`…/sandbox`).
/// Point a client at them and trust `caFile` (for a `bouncer serve` process: BOUNCER_APPLE_API_PRODUCTION_URL,
/// BOUNCER_APPLE_API_SANDBOX_URL, BOUNCER_APPLE_API_CA_FILE, see `environment`).
///
/// Like Apple it checks every request's JWT (ES256 signature with the expected public key, header `alg`/`kid`/`typ`,
/// claims `iss`/`aud`/`bid`, `exp - iat <= 3600`, not expired) and answers `401` with no body when anything is
/// wrong (`ReceivedRequest.jwtProblem` says what). Scenario data (signed with `TestPKI` like Apple signs) is set per
/// environment; unknown ids answer `404` with Apple's `{"errorCode": 4040010, "errorMessage": …}`.
///
/// ```swift
/// let apple = try FakeAppleServer()
/// let key = try FakeAppleServer.Key.generate()
/// apple.expect(key: key, bundleId: "com.example.app")
/// apple.setTransaction("2000000000000001", signed: try FakeAppleServer.sign(payloadJSON), environment: .production)
/// apple.inject(.serverError(), on: .transactionInfo, times: 2)     // then the scenario answers
/// … call Apple …
/// XCTAssertEqual(apple.requests.map(\.endpoint), [.transactionInfo, .transactionInfo, .transactionInfo])
/// ```
public final class FakeAppleServer: Sendable {
    /// Apple's environments, as the fake's base URLs name them.
    public enum Environment: String, Sendable, CaseIterable {
        case production = "Production"
        case sandbox = "Sandbox"
        var pathPrefix: String { self == .production ? "/production" : "/sandbox" }
    }

    /// The endpoints served.
    public enum Endpoint: String, Sendable, CaseIterable {
        /// `GET /inApps/v1/transactions/{transactionId}`
        case transactionInfo
        /// `GET /inApps/v1/subscriptions/{transactionId}`
        case subscriptionStatuses
        /// `GET /inApps/v2/history/{transactionId}[?revision=]`
        case transactionHistory
        /// `POST /inApps/v1/notifications/history[?paginationToken=]`
        case notificationHistory
        /// `PUT /inApps/v2/transactions/consumption/{transactionId}`
        case consumption
        /// `POST /inApps/v1/notifications/test`
        case requestTestNotification
        /// `GET /inApps/v1/notifications/test/{token}`
        case testNotificationStatus
        /// `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`
        case extendRenewalDate
        /// `GET /inApps/v1/lookup/{orderId}` (Production only, as Apple documents)
        case lookUpOrder
        /// Retention Messaging API (FakeAppleRetention.swift): `PUT|DELETE /inApps/v1/messaging/message/{id}`,
        /// `GET …/message/list`, the same for `image`, `PUT|DELETE …/default/{productId}/{locale}`,
        /// `PUT …/realtime/url`, `POST …/performanceTest` (Sandbox only).
        case uploadMessage, messageList, deleteMessage, uploadImage, imageList, deleteImage
        case configureDefaultMessage, deleteDefaultMessage, configureRealtimeURL, initiatePerformanceTest
        // The newer endpoints (issue 25), served by FakeAppleServer+Newer.swift.
        /// `GET /inApps/v1/transactions/appTransactions/{transactionId}`
        case appTransactionInfo
        /// `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`
        case setAppAccountToken
        /// `GET /inApps/v2/refund/lookup/{transactionId}[?revision=]`
        case refundHistory
        /// `POST /inApps/v1/subscriptions/extend/mass`
        case massExtendRenewalDate
        /// `GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}` (the id is the request's)
        case massExtendRenewalDateStatus
        /// `POST /inApps/v1/transactions/{transactionId}/finish`
        case finishTransaction
    }

    /// A failure to answer instead of the scenario's data.
    public enum Failure: Sendable {
        /// `404` with Apple's body and this `errorCode` (4040010 TransactionIdNotFound; 4040002/4/6 are "retryable").
        case notFound(errorCode: Int = 4040010)
        /// `401`, no body (what Apple sends for a refused JWT).
        case unauthorized
        /// `429` with Apple's 4290000 body and `Retry-After` in the given form (an integer literal: delta-seconds).
        case rateLimited(retryAfter: RetryAfter)
        /// A `5xx` (default 500, Apple's 5000000 body).
        case serverError(status: Int = 500)
        /// Any status with Apple's error body.
        case appleError(status: Int, errorCode: Int, message: String)
        /// `200` with this body (e.g. not JSON, a field missing).
        case body(String)
        /// Reads the request, then answers nothing for `seconds` and closes.
        case stall(seconds: Double)
        /// Closes the connection without answering.
        case close
    }

    /// How a `429` says when to come back; times are computed when the fake answers.
    public enum RetryAfter: Sendable, ExpressibleByIntegerLiteral {
        /// Delta-seconds (RFC 9110 §10.2.3): `Retry-After: 120`.
        case seconds(Int)
        /// An IMF-fixdate this many seconds after the answer, rounded up to a whole second.
        case httpDate(secondsFromNow: Int)
        /// What Apple documents for the App Store Server API: a UNIX time in milliseconds, this many ms ahead.
        case appleMilliseconds(fromNow: Int64)
        /// The value exactly as given (garbage, a time in the past).
        case raw(String)

        /// `.seconds(value)`.
        public init(integerLiteral value: Int) { self = .seconds(value) }

        /// The header value at `now`.
        public func value(now: Date) -> String {
            switch self {
            case .seconds(let seconds): return String(seconds)
            case .raw(let text): return text
            case .appleMilliseconds(let ahead): return String(Int64((now.timeIntervalSince1970 * 1000).rounded(.down)) + ahead)
            case .httpDate(let ahead):
                let formatter = DateFormatter()
                formatter.locale = Locale(identifier: "en_US_POSIX")
                formatter.timeZone = TimeZone(identifier: "GMT")
                formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
                return formatter.string(from: Date(timeIntervalSince1970: (now.timeIntervalSince1970 + Double(ahead)).rounded(.up)))
            }
        }
    }

    /// An App Store Connect In-App Purchase key as a test holds it: what the admin API stores, what the fake checks.
    public struct Key: Sendable {
        /// Issuer ID (lowercase UUID).
        public var issuerId: String
        /// 10-character key id.
        public var keyId: String
        /// The `.p8` contents (PKCS#8 PEM).
        public var privateKeyPEM: String
        /// The public half (PEM), which the fake verifies with.
        public var publicKeyPEM: String

        /// Creates a value.
        public init(issuerId: String, keyId: String, privateKeyPEM: String, publicKeyPEM: String) {
            self.issuerId = issuerId
            self.keyId = keyId
            self.privateKeyPEM = privateKeyPEM
            self.publicKeyPEM = publicKeyPEM
        }

        /// A fresh random P-256 key with a random issuer id and key id.
        public static func generate(keyId: String = "FAKEKEY001") throws -> Key {
            let key = try P256.PrivateKey()
            return Key(issuerId: UUID().uuidString.lowercased(), keyId: keyId, privateKeyPEM: try key.pkcs8PEM(),
                       publicKeyPEM: try key.publicKey.pemRepresentation)
        }
    }

    /// One received request, as the fake understood it.
    public struct ReceivedRequest: Sendable {
        /// e.g. "GET".
        public var method: String
        /// The path without the environment prefix and query, e.g. "/inApps/v1/transactions/123".
        public var path: String
        /// Query parameters in order (percent-decoded).
        public var query: [(name: String, value: String)]
        /// Which base URL it came to (nil: neither prefix).
        public var environment: Environment?
        /// Which endpoint it matched (nil: none; answered a plain-text 404).
        public var endpoint: Endpoint?
        /// The id in the path (transaction id, original transaction id, token), percent-decoded.
        public var id: String?
        /// Header fields as sent.
        public var headers: [(String, String)]
        /// The body.
        public var body: [UInt8]
        /// The JWT's header, when the Authorization header held a decodable JWT.
        public var jwtHeader: JSONObject?
        /// The JWT's claims, likewise.
        public var jwtClaims: JSONObject?
        /// Why the JWT was refused (nil: accepted).
        public var jwtProblem: String?
        /// Which connection carried it (1-based): requests on one connection show keep-alive reuse.
        public var connection: Int

        /// First value of a header, case-insensitive.
        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        /// The body as JSON (nil when empty or not JSON).
        public var jsonBody: JSONValue? { body.isEmpty ? nil : try? JSONParser.parse(body) }
    }

    /// One subscription group in Get All Subscription Statuses.
    public struct SubscriptionGroup: Sendable {
        /// One `lastTransactions` item.
        public struct LastTransaction: Sendable {
            /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
            public var status: Int
            /// The purchase.
            public var originalTransactionId: String
            /// JWS.
            public var signedTransactionInfo: String
            /// JWS.
            public var signedRenewalInfo: String

            /// Creates a value.
            public init(status: Int, originalTransactionId: String, signedTransactionInfo: String, signedRenewalInfo: String) {
                self.status = status
                self.originalTransactionId = originalTransactionId
                self.signedTransactionInfo = signedTransactionInfo
                self.signedRenewalInfo = signedRenewalInfo
            }
        }

        /// The group id.
        public var identifier: String
        /// Its latest transactions.
        public var lastTransactions: [LastTransaction]

        /// Creates a value.
        public init(identifier: String, lastTransactions: [LastTransaction]) {
            self.identifier = identifier
            self.lastTransactions = lastTransactions
        }
    }

    /// One send attempt in Get Test Notification Status.
    public struct SendAttempt: Sendable {
        /// Milliseconds since 1970.
        public var attemptDate: Int64
        /// e.g. "SUCCESS".
        public var result: String

        /// Creates a value.
        public init(attemptDate: Int64, result: String) {
            self.attemptDate = attemptDate
            self.result = result
        }
    }

    /// What Extend a Subscription Renewal Date answers for one original transaction id.
    public struct ExtendResult: Sendable {
        /// The new renewal date (ms), nil when not extended.
        public var effectiveDate: Int64?
        /// Whether Apple extended it.
        public var success: Bool
        /// The period's web order line item id.
        public var webOrderLineItemId: String?

        /// Creates a value.
        public init(effectiveDate: Int64?, success: Bool, webOrderLineItemId: String?) {
            self.effectiveDate = effectiveDate
            self.success = success
            self.webOrderLineItemId = webOrderLineItemId
        }
    }

    struct Rule {
        var failure: Failure
        var endpoint: Endpoint?
        var environment: Environment?
        var remaining: Int?   // nil: always
    }

    struct Expected {
        var issuerId: String
        var keyId: String
        var bundleId: String
        var publicKey: P256.PublicKey
    }

    struct Scenario {
        var expected: Expected?
        var newer = NewerScenario()
        var transactions: [Environment: [String: String]] = [:]
        var statuses: [Environment: [String: [SubscriptionGroup]]] = [:]
        var history: [Environment: [String: [[String]]]] = [:]
        var notifications: [Environment: [[String]]] = [:]
        var testNotification: [Environment: (token: String, signedPayload: String, attempts: [SendAttempt])] = [:]
        var extendResults: [Environment: [String: ExtendResult]] = [:]
        var orders: [String: [String]] = [:]
        var retention: [Environment: RetentionScenario] = [:]
        var rules: [Rule] = []
        var requests: [ReceivedRequest] = []
    }

    /// The TLS PKI whose CA signed the server's certificate.
    public let pki: TLSTestPKI
    /// The server underneath (connection and request counts).
    public let server: LocalHTTPSServer
    /// The scenario behind a lock, in a class so the server's handler and `self` share it.
    final class Store: Sendable { let mutex = Mutex(Scenario()) }
    let store: Store

    /// Starts on 127.0.0.1 (port 0) with a fresh CA. Call `expect(key:bundleId:)` before any request, or every
    /// request is refused with `401`.
    public init() throws {
        let pki = try TLSTestPKI.make()
        let store = Store()
        self.pki = pki
        self.store = store
        server = try LocalHTTPSServer(tls: pki.serverConfiguration) { request in
            FakeAppleServer.handle(request, store)
        }
    }

    deinit {
        server.stop()
        pki.remove()
    }

    /// Stops serving (connections are closed).
    public func stop() { server.stop() }

    /// The PEM file of the CA that signed the server's certificate (BOUNCER_APPLE_API_CA_FILE).
    public var caFile: String { pki.caFile }
    /// Base URL of the fake Production API.
    public var productionURL: String { "https://127.0.0.1:\(server.port)/production" }
    /// Base URL of the fake Sandbox API.
    public var sandboxURL: String { "https://127.0.0.1:\(server.port)/sandbox" }
    /// The three BOUNCER_APPLE_API_* variables pointing a `bouncer serve` process here.
    public var environment: [String: String] {
        ["BOUNCER_APPLE_API_PRODUCTION_URL": productionURL, "BOUNCER_APPLE_API_SANDBOX_URL": sandboxURL,
         "BOUNCER_APPLE_API_CA_FILE": caFile]
    }

    // MARK: - Scenario

    /// Accept JWTs signed by `key` for `bundleId` (replaces any earlier expectation).
    public func expect(key: Key, bundleId: String) {
        do {
            let publicKey = try P256.PublicKey(pem: key.publicKeyPEM)
            store.mutex.withLock { $0.expected = Expected(issuerId: key.issuerId, keyId: key.keyId, bundleId: bundleId, publicKey: publicKey) }
        } catch {
            preconditionFailure("FakeAppleServer.expect: the key's public PEM does not load: \(error)")
        }
    }

    /// The Retention Messaging state the fake holds for `environment` (FakeAppleRetention.swift).
    public func retention(_ environment: Environment) -> RetentionScenario {
        store.mutex.withLock { $0.retention[environment] ?? RetentionScenario() }
    }

    /// Get Transaction Info answers `signed` for `transactionId` in `environment`.
    public func setTransaction(_ transactionId: String, signed: String, environment: Environment) {
        store.mutex.withLock { $0.transactions[environment, default: [:]][transactionId] = signed }
    }

    /// Get All Subscription Statuses answers `groups` for `transactionId`.
    public func setSubscriptionStatuses(_ transactionId: String, groups: [SubscriptionGroup], environment: Environment) {
        store.mutex.withLock { $0.statuses[environment, default: [:]][transactionId] = groups }
    }

    /// Get Transaction History answers these pages for `transactionId`: page n carries `revision` "revision-n"
    /// (pass it to get page n+1) and `hasMore` until the last.
    public func setTransactionHistory(_ transactionId: String, pages: [[String]], environment: Environment) {
        store.mutex.withLock { $0.history[environment, default: [:]][transactionId] = pages }
    }

    /// Get Notification History answers these pages of signed payloads: page n carries `paginationToken`
    /// "page-n" (pass it to get page n+1) and `hasMore` until the last. The request's dates are not filtered on:
    /// assert them from `requests`.
    public func setNotificationHistory(pages: [[String]], environment: Environment) {
        store.mutex.withLock { $0.notifications[environment] = pages }
    }

    /// Request a Test Notification answers `token`; Get Test Notification Status for it answers the rest.
    public func setTestNotification(token: String, signedPayload: String, attempts: [SendAttempt], environment: Environment) {
        store.mutex.withLock { $0.testNotification[environment] = (token, signedPayload, attempts) }
    }

    /// Extend a Subscription Renewal Date answers `result` for `originalTransactionId` (unset ids: `404` 4040005).
    public func setExtendResult(_ originalTransactionId: String, _ result: ExtendResult, environment: Environment) {
        store.mutex.withLock { $0.extendResults[environment, default: [:]][originalTransactionId] = result }
    }

    /// Look Up Order ID answers `status` 0 with `signedTransactions` for `orderId` in Production; any other order id
    /// answers `status` 1 without transactions, and Sandbox has no such endpoint (`404`), as Apple documents.
    public func setOrder(_ orderId: String, signedTransactions: [String]) {
        store.mutex.withLock { $0.orders[orderId] = signedTransactions }
    }

    /// Answers `failure` instead of the scenario: on `endpoint` (nil: any) in `environment` (nil: both), for the
    /// next `times` matching requests (nil: always). Rules are consulted in the order injected; the JWT is checked
    /// first (a bad JWT is always `401`).
    public func inject(_ failure: Failure, on endpoint: Endpoint? = nil, environment: Environment? = nil, times: Int? = 1) {
        store.mutex.withLock { $0.rules.append(Rule(failure: failure, endpoint: endpoint, environment: environment, remaining: times)) }
    }

    /// Removes every injected failure.
    public func clearFailures() { store.mutex.withLock { $0.rules.removeAll() } }

    /// Every request received, in order.
    public var requests: [ReceivedRequest] { store.mutex.withLock { $0.requests } }

    /// Bodies of Send Consumption Information requests that were accepted (202), with their transaction ids.
    public var consumptionRequests: [(transactionId: String, body: JSONValue?)] {
        requests.filter { $0.endpoint == .consumption && $0.jwtProblem == nil }.map { ($0.id ?? "", $0.jsonBody) }
    }

    /// Does what Apple does after Request a Test Notification: POSTs the scenario's signed TEST payload for
    /// `environment` to a Bouncer's webhook (`POST /v1/notifications/:publicKey` on 127.0.0.1:`port`), and appends
    /// a send attempt (`SUCCESS` on a 200, else `UNSUCCESSFUL_HTTP_RESPONSE_CODE`) to what Get Test Notification
    /// Status answers. Returns the webhook's status.
    @discardableResult
    public func deliverTestNotification(environment: Environment, toPort port: Int, publicKey: String) throws -> Int {
        guard let payload = store.mutex.withLock({ $0.testNotification[environment]?.signedPayload }) else {
            preconditionFailure("FakeAppleServer.deliverTestNotification: no test notification set for \(environment)")
        }
        let response = try RawHTTPClient(port: port).post("/v1/notifications/\(publicKey)",
                                                           json: ["signedPayload": .string(payload)])
        let attempt = SendAttempt(attemptDate: Int64(Date().timeIntervalSince1970 * 1000),
                                  result: response.status == 200 ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE")
        store.mutex.withLock { $0.testNotification[environment]?.attempts.append(attempt) }
        return response.status
    }

    /// Signs `payloadJSON` like Apple (ES256, x5c of `TestPKI`'s chain).
    public static func sign(_ payloadJSON: String) throws -> String { try TestPKI.sign(payloadJSON) }

    /// Signs `payloadJSON` with a key that does not chain to `TestPKI`'s root (a forgery the verifier must refuse).
    public static func forge(_ payloadJSON: String) throws -> String {
        try TestPKI.sign(payloadJSON, x5c: [TestPKI.leaf, TestPKI.intermediate, TestPKI.root], key: TestPKI.file("keys/other-root.key"))
    }

    // MARK: - Serving

    private static func handle(_ raw: LocalHTTPSServer.Request, _ store: Store) -> LocalHTTPSServer.Action {
        var request = parse(raw)
        let answered = store.mutex.withLock { state -> LocalHTTPSServer.Action in
            defer { state.requests.append(request) }
            let (header, claims, problem) = checkJWT(raw.header("Authorization"), expected: state.expected)
            request.jwtHeader = header
            request.jwtClaims = claims
            request.jwtProblem = problem
            guard let environment = request.environment, let endpoint = request.endpoint else {
                return .respond(status: 404, headers: [("Content-Type", "text/plain")], body: "no such endpoint")
            }
            if problem != nil { return .respond(status: 401) }
            if let index = state.rules.firstIndex(where: { ($0.endpoint ?? endpoint) == endpoint && ($0.environment ?? environment) == environment }) {
                let failure = state.rules[index].failure
                if let remaining = state.rules[index].remaining {
                    if remaining <= 1 { state.rules.remove(at: index) } else { state.rules[index].remaining = remaining - 1 }
                }
                return action(failure)
            }
            return answer(endpoint, request, environment, &state)
        }
        return answered
    }

    private static func action(_ failure: Failure) -> LocalHTTPSServer.Action {
        switch failure {
        case .notFound(let code): return appleError(404, code, "Transaction id not found.")
        case .unauthorized: return .respond(status: 401)
        case .rateLimited(let retryAfter):
            return .respond(status: 429, headers: [("Content-Type", "application/json"), ("Retry-After", retryAfter.value(now: Date()))],
                            body: #"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#)
        case .serverError(let status): return appleError(status, 5000000, "An unknown error occurred.")
        case .appleError(let status, let code, let message): return appleError(status, code, message)
        case .body(let text): return .respond(status: 200, headers: [("Content-Type", "application/json")], body: text)
        case .stall(let seconds): return .stall(seconds: seconds)
        case .close: return .close
        }
    }

    static func appleError(_ status: Int, _ code: Int, _ message: String) -> LocalHTTPSServer.Action {
        let body: JSONValue = ["errorCode": JSONValue(code), "errorMessage": .string(message)]
        return .respond(status: status, headers: [("Content-Type", "application/json")], body: body.serializedString())
    }

    static func ok(_ body: JSONValue, status: Int = 200) -> LocalHTTPSServer.Action {
        .respond(status: status, headers: [("Content-Type", "application/json")], body: body.serializedString())
    }

    /// Page n of `pages` for a continuation token "`prefix`n" (nil: the first page), the next token and whether more
    /// follow; nil for a token the fake never gave.
    static func page(_ pages: [[String]], token: String?, prefix: String) -> (items: [String], next: String, hasMore: Bool)? {
        var index = 0
        if let token {
            guard token.hasPrefix(prefix), let n = Int(token.dropFirst(prefix.count)), n >= 1, n < pages.count else { return nil }
            index = n
        }
        let items = index < pages.count ? pages[index] : []
        return (items, "\(prefix)\(index + 1)", index + 1 < pages.count)
    }

    private static func answer(_ endpoint: Endpoint, _ request: ReceivedRequest, _ environment: Environment,
                               _ state: inout Scenario) -> LocalHTTPSServer.Action {
        let id = request.id ?? ""
        let bundleId = state.expected?.bundleId ?? ""
        switch endpoint {
        case .transactionInfo:
            guard let signed = state.transactions[environment]?[id] else { return appleError(404, 4040010, "Transaction id not found.") }
            return ok(["signedTransactionInfo": .string(signed)])
        case .subscriptionStatuses:
            guard let groups = state.statuses[environment]?[id] else { return appleError(404, 4040010, "Transaction id not found.") }
            let data = groups.map { group -> JSONValue in
                ["subscriptionGroupIdentifier": .string(group.identifier),
                 "lastTransactions": .array(group.lastTransactions.map {
                     ["status": JSONValue($0.status), "originalTransactionId": .string($0.originalTransactionId),
                      "signedTransactionInfo": .string($0.signedTransactionInfo), "signedRenewalInfo": .string($0.signedRenewalInfo)]
                 })]
            }
            return ok(["environment": .string(environment.rawValue), "bundleId": .string(bundleId), "data": .array(data)])
        case .transactionHistory:
            guard let pages = state.history[environment]?[id] else { return appleError(404, 4040010, "Transaction id not found.") }
            let revision = request.query.first { $0.name == "revision" }?.value
            guard let result = page(pages, token: revision, prefix: "revision-") else {
                return appleError(400, 4000005, "Invalid revision.")
            }
            return ok(["revision": .string(result.next), "hasMore": .bool(result.hasMore), "bundleId": .string(bundleId),
                       "environment": .string(environment.rawValue), "signedTransactions": .array(result.items.map { .string($0) })])
        case .notificationHistory:
            guard let body = request.jsonBody?.objectValue, body["startDate"]?.int64Value != nil, body["endDate"]?.int64Value != nil else {
                return appleError(400, 4000016, "Invalid start date or end date.")
            }
            let pages = state.notifications[environment] ?? []
            let token = request.query.first { $0.name == "paginationToken" }?.value
            guard let result = page(pages, token: token, prefix: "page-") else {
                return appleError(400, 4000014, "Invalid pagination token.")
            }
            let items = result.items.map { JSONValue.object(["signedPayload": .string($0), "sendAttempts": .array([])]) }
            return ok(["paginationToken": .string(result.next), "hasMore": .bool(result.hasMore), "notificationHistory": .array(items)])
        case .consumption:
            guard let body = request.jsonBody?.objectValue, body["customerConsented"]?.boolValue == true else {
                return appleError(400, 4000183, "Invalid customer consented.")
            }
            return .respond(status: 202)
        case .requestTestNotification:
            guard let test = state.testNotification[environment] else { return appleError(500, 5000000, "No test notification scenario.") }
            return ok(["testNotificationToken": .string(test.token)])
        case .testNotificationStatus:
            guard let test = state.testNotification[environment], test.token == id else {
                return appleError(404, 4040008, "Test notification not found.")
            }
            return ok(["signedPayload": .string(test.signedPayload), "sendAttempts": .array(test.attempts.map {
                ["attemptDate": JSONValue($0.attemptDate), "sendAttemptResult": .string($0.result)]
            })])
        case .extendRenewalDate:
            guard let result = state.extendResults[environment]?[id] else {
                return appleError(404, 4040005, "Original transaction id not found.")
            }
            var body: JSONObject = ["originalTransactionId": .string(id), "success": .bool(result.success)]
            if let date = result.effectiveDate { body["effectiveDate"] = JSONValue(date) }
            if let line = result.webOrderLineItemId { body["webOrderLineItemId"] = .string(line) }
            return ok(.object(body))
        case .uploadMessage, .messageList, .deleteMessage, .uploadImage, .imageList, .deleteImage,
             .configureDefaultMessage, .deleteDefaultMessage, .configureRealtimeURL, .initiatePerformanceTest:
            return retentionAnswer(endpoint, request, environment, &state.retention[environment, default: RetentionScenario()])
        case .lookUpOrder:
            guard environment == .production else { return .respond(status: 404) }
            guard let signed = state.orders[id] else { return ok(["status": JSONValue(1)]) }
            return ok(["status": JSONValue(0), "signedTransactions": .array(signed.map { .string($0) })])
        case .appTransactionInfo, .setAppAccountToken, .refundHistory, .massExtendRenewalDate, .massExtendRenewalDateStatus,
             .finishTransaction:
            return answerNewer(endpoint, request, environment, &state.newer)
        }
    }

    private static func parse(_ raw: LocalHTTPSServer.Request) -> ReceivedRequest {
        let parts = raw.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var path = parts.first.map(String.init) ?? ""
        let query: [(name: String, value: String)] = parts.count > 1 ? parts[1].split(separator: "&").map { pair in
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = kv.first.map(String.init) ?? ""
            return (name.removingPercentEncoding ?? name, kv.count > 1 ? (String(kv[1]).removingPercentEncoding ?? String(kv[1])) : "")
        } : []
        var environment: Environment?
        for candidate in Environment.allCases where path.hasPrefix(candidate.pathPrefix + "/") {
            environment = candidate
            path.removeFirst(candidate.pathPrefix.count)
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        func decoded(_ segment: String) -> String { segment.removingPercentEncoding ?? segment }
        var endpoint: Endpoint?
        var id: String?
        switch (raw.method, segments.count) {
        case ("GET", 5) where segments[1] == "inApps" && segments[2] == "v1" && segments[3] == "transactions":
            endpoint = .transactionInfo; id = decoded(segments[4])
        case ("GET", 5) where segments[1] == "inApps" && segments[2] == "v1" && segments[3] == "subscriptions":
            endpoint = .subscriptionStatuses; id = decoded(segments[4])
        case ("GET", 5) where segments[1] == "inApps" && segments[2] == "v2" && segments[3] == "history":
            endpoint = .transactionHistory; id = decoded(segments[4])
        case ("GET", 5) where segments[1] == "inApps" && segments[2] == "v1" && segments[3] == "lookup":
            endpoint = .lookUpOrder; id = decoded(segments[4])
        case ("POST", 5) where path == "/inApps/v1/notifications/history":
            endpoint = .notificationHistory
        case ("POST", 5) where path == "/inApps/v1/notifications/test":
            endpoint = .requestTestNotification
        case ("GET", 6) where segments[1...4] == ["inApps", "v1", "notifications", "test"]:
            endpoint = .testNotificationStatus; id = decoded(segments[5])
        case ("PUT", 6) where segments[1...4] == ["inApps", "v2", "transactions", "consumption"]:
            endpoint = .consumption; id = decoded(segments[5])
        case ("PUT", 6) where segments[1...4] == ["inApps", "v1", "subscriptions", "extend"]:
            endpoint = .extendRenewalDate; id = decoded(segments[5])
        case (_, 5...7) where segments[1...3] == ["inApps", "v1", "messaging"]:
            (endpoint, id) = retentionEndpoint(raw.method, Array(segments.dropFirst(4)).map(decoded))
        default:
            (endpoint, id) = parseNewer(raw.method, path, segments)
        }
        if id?.isEmpty == true { endpoint = nil }
        return ReceivedRequest(method: raw.method, path: path, query: query, environment: environment, endpoint: endpoint, id: id,
                               headers: raw.headers, body: raw.body, jwtHeader: nil, jwtClaims: nil, jwtProblem: nil,
                               connection: raw.connection)
    }

    /// Checks a JWT like Apple: returns its decoded header and claims and the first problem found (nil: valid).
    private static func checkJWT(_ authorization: String?, expected: Expected?) -> (JSONObject?, JSONObject?, String?) {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return (nil, nil, "no Bearer token") }
        let parts = authorization.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = base64URL(parts[0]), let claimBytes = base64URL(parts[1]),
              let signature = base64URL(parts[2]) else { return (nil, nil, "not a compact JWS") }
        let header = (try? JSONParser.parse(headerBytes))?.objectValue
        let claims = (try? JSONParser.parse(claimBytes))?.objectValue
        guard let header, let claims else { return (header, claims, "header or claims are not JSON objects") }
        guard let expected else { return (header, claims, "the fake expects no key (call expect(key:bundleId:))") }
        let now = Int64(Date().timeIntervalSince1970)
        let problem: String? = {
            if header["alg"]?.stringValue != "ES256" { return "alg is not ES256" }
            if header["typ"]?.stringValue != "JWT" { return "typ is not JWT" }
            if header["kid"]?.stringValue != expected.keyId { return "kid is not the expected key id" }
            let signingInput = Array("\(parts[0]).\(parts[1])".utf8)
            if !expected.publicKey.verifyES256(rawSignature: signature, message: signingInput) { return "signature does not verify" }
            if claims["iss"]?.stringValue != expected.issuerId { return "iss is not the expected issuer id" }
            if claims["aud"]?.stringValue != "appstoreconnect-v1" { return "aud is not appstoreconnect-v1" }
            if claims["bid"]?.stringValue != expected.bundleId { return "bid is not the expected bundle id" }
            guard let iat = claims["iat"]?.int64Value, let exp = claims["exp"]?.int64Value else { return "iat or exp missing" }
            if exp - iat > 3600 { return "exp is more than 60 minutes after iat" }
            if exp <= now { return "expired" }
            if iat > now + 60 { return "iat is in the future" }
            return nil
        }()
        return (header, claims, problem)
    }

    private static func base64URL(_ text: Substring) -> [UInt8]? {
        var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !b64.contains("=") else { return nil }
        while b64.count % 4 != 0 { b64 += "=" }
        return Data(base64Encoded: b64).map(Array.init)
    }
}
