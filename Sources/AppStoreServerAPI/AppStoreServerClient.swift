public import Domain
public import Foundation
public import HTTPClient
import JSON
public import Primitives

/// The App Store Server API over our own HTTPS client: Domain's `AppleServerAPI` port.
///
/// Each call signs (or reuses) the project's JWT, sends one request per attempt with a total time budget, retries
/// 5xx, network failures and 429 per `Configuration.retry` while the budget allows, and maps what Apple answered
/// to a value or an `AppStoreAPIError`. Signed values come back as Apple sent them (unverified).
///
/// Calls block the calling thread for at most about `callBudget` (plus one connect timeout at worst): run them on
/// the API's worker threads, never on Swift's cooperative pool.
public final class AppStoreServerClient: AppleServerAPI, Sendable {
    /// Settings, gathered in one place.
    public struct Configuration: Sendable {
        /// Apple's documented production host (the recommended domain; `api.storekit.itunes.apple.com` still
        /// answers and can be set through BOUNCER_APPLE_API_PRODUCTION_URL).
        public static let defaultProductionURL = "https://api.storekit.apple.com"
        /// Apple's documented sandbox host (`api.storekit-sandbox.itunes.apple.com` still answers).
        public static let defaultSandboxURL = "https://api.storekit-sandbox.apple.com"

        /// Base URL for `.production` (BOUNCER_APPLE_API_PRODUCTION_URL).
        public var productionURL: String
        /// Base URL for `.sandbox` (BOUNCER_APPLE_API_SANDBOX_URL).
        public var sandboxURL: String
        /// The most one call may take, retries and waits included: a slow Apple cannot hold a worker for long.
        public var callBudget: Duration
        /// Attempts, backoff and the longest `Retry-After` waited for (beyond it: `.unavailable` at once).
        public var retry: RetryPolicy
        /// The `retryAfterSeconds` reported when Apple gave none (5xx, timeouts, network failures).
        public var defaultRetryAfterSeconds: Int
        /// Largest response body parsed as JSON (a history page of 20 JWS is ~100 KiB).
        public var maxResponseBytes: Int

        /// Apple's hosts, a 10 s budget, 3 attempts with 200 ms…2 s backoff, `Retry-After` honoured up to 5 s.
        public init(productionURL: String = defaultProductionURL, sandboxURL: String = defaultSandboxURL,
                    callBudget: Duration = .seconds(10),
                    retry: RetryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(200), maxDelay: .seconds(2),
                                                     maxRetryAfter: .seconds(5)),
                    defaultRetryAfterSeconds: Int = 30, maxResponseBytes: Int = 4 * 1024 * 1024) {
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.callBudget = callBudget
            self.retry = retry
            self.defaultRetryAfterSeconds = max(1, defaultRetryAfterSeconds)
            self.maxResponseBytes = max(1024, maxResponseBytes)
        }
    }

    /// The configuration in use.
    public let configuration: Configuration
    /// The JWT signer and its caches.
    public let tokens: AppStoreTokenSigner
    private let http: HTTPClient
    private let now: @Sendable () -> Date
    private let sleep: @Sendable (Duration) -> Void
    private let jitter: @Sendable () -> Double

    /// A client over `http` (its own retry policy is not used: this client retries within its budget).
    public init(http: HTTPClient, configuration: Configuration = Configuration(),
                tokens: AppStoreTokenSigner = AppStoreTokenSigner(), now: @escaping @Sendable () -> Date = { Date() },
                sleep: @escaping @Sendable (Duration) -> Void = { Thread.sleep(forTimeInterval: Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18) },
                jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.http = http
        self.configuration = configuration
        self.tokens = tokens
        self.now = now
        self.sleep = sleep
        self.jitter = jitter
    }

    /// Connections the underlying HTTP client opened (a keep-alive test counts these).
    public var connectionsOpened: Int { http.connectionsOpened }

    /// Closes idle connections.
    public func shutdown() { http.shutdown() }

    // MARK: - Endpoints

    public func transactionInfo(transactionId: String, environment: StoreEnvironment,
                                credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> String {
        let body = try call("GET", "/inApps/v1/transactions/\(Self.pathSegment(transactionId))", environment, credentials)
        let object = try Self.object(body, limit: configuration.maxResponseBytes)
        return try Self.string(object, "signedTransactionInfo")
    }

    public func subscriptionStatuses(transactionId: String, environment: StoreEnvironment,
                                     credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> [SignedSubscriptionStatus] {
        let body = try call("GET", "/inApps/v1/subscriptions/\(Self.pathSegment(transactionId))", environment, credentials)
        let object = try Self.object(body, limit: configuration.maxResponseBytes)
        var out: [SignedSubscriptionStatus] = []
        for group in try Self.array(object, "data", optional: true) {
            guard let group = group.objectValue else { throw Self.invalid("data[] is not an object") }
            let groupId = try Self.string(group, "subscriptionGroupIdentifier")
            for last in try Self.array(group, "lastTransactions", optional: true) {
                guard let last = last.objectValue else { throw Self.invalid("lastTransactions[] is not an object") }
                out.append(SignedSubscriptionStatus(
                    subscriptionGroupIdentifier: groupId, originalTransactionId: try Self.string(last, "originalTransactionId"),
                    status: try Self.int(last, "status"), signedTransactionInfo: try Self.string(last, "signedTransactionInfo"),
                    signedRenewalInfo: try Self.string(last, "signedRenewalInfo")))
            }
        }
        return out
    }

    public func transactionHistory(transactionId: String, revision: String?, environment: StoreEnvironment,
                                   credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> TransactionHistoryPage {
        var path = "/inApps/v2/history/\(Self.pathSegment(transactionId))"
        if let revision { path += "?revision=\(Self.queryValue(revision))" }
        return try Self.historyPage(try call("GET", path, environment, credentials), limit: configuration.maxResponseBytes)
    }

    /// A page of `signedTransactions` with `revision` and `hasMore` (Get Transaction History, Get Refund History).
    static func historyPage(_ body: [UInt8], limit: Int) throws(AppStoreAPIError) -> TransactionHistoryPage {
        let object = try object(body, limit: limit)
        let signed = try array(object, "signedTransactions", optional: true).map { value throws(AppStoreAPIError) -> String in
            guard let text = value.stringValue else { throw invalid("signedTransactions[] is not a string") }
            return text
        }
        return TransactionHistoryPage(signedItems: signed, next: try optionalString(object, "revision"),
                                      hasMore: try bool(object, "hasMore"))
    }

    public func notificationHistory(from start: Date, to end: Date, paginationToken: String?, environment: StoreEnvironment,
                                    credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> NotificationHistoryPage {
        var path = "/inApps/v1/notifications/history"
        if let paginationToken { path += "?paginationToken=\(Self.queryValue(paginationToken))" }
        let request: JSONValue = ["startDate": JSONValue(Self.milliseconds(start)), "endDate": JSONValue(Self.milliseconds(end))]
        // A POST that only reads: safe to retry.
        let body = try call("POST", path, environment, credentials, body: request.serialized(), idempotent: true)
        let object = try Self.object(body, limit: configuration.maxResponseBytes)
        let payloads = try Self.array(object, "notificationHistory", optional: true).map { value throws(AppStoreAPIError) -> String in
            guard let item = value.objectValue else { throw Self.invalid("notificationHistory[] is not an object") }
            return try Self.string(item, "signedPayload")
        }
        return NotificationHistoryPage(signedItems: payloads, next: try Self.optionalString(object, "paginationToken"),
                                       hasMore: try Self.bool(object, "hasMore"))
    }

    public func sendConsumptionInformation(transactionId: String, _ information: ConsumptionInformation,
                                           environment: StoreEnvironment, credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        var members: [(String, JSONValue)] = [
            // Apple refuses any other value; the use case sends only with the customer's consent.
            ("customerConsented", true),
            ("deliveryStatus", .string(information.deliveryStatus)),
            ("sampleContentProvided", .bool(information.sampleContentProvided)),
        ]
        if let percentage = information.consumptionPercentage { members.append(("consumptionPercentage", JSONValue(percentage))) }
        if let preference = information.refundPreference { members.append(("refundPreference", .string(preference))) }
        _ = try call("PUT", "/inApps/v2/transactions/consumption/\(Self.pathSegment(transactionId))", environment, credentials,
                     body: JSONValue.object(JSONObject(members)).serialized())
    }

    public func requestTestNotification(environment: StoreEnvironment,
                                        credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> String {
        // Not idempotent: a lost answer is reported, not retried into a second test notification.
        let body = try call("POST", "/inApps/v1/notifications/test", environment, credentials, idempotent: false)
        return try Self.string(try Self.object(body, limit: configuration.maxResponseBytes), "testNotificationToken")
    }

    public func testNotificationStatus(token: String, environment: StoreEnvironment,
                                       credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> TestNotificationStatus {
        let body = try call("GET", "/inApps/v1/notifications/test/\(Self.pathSegment(token))", environment, credentials)
        let object = try Self.object(body, limit: configuration.maxResponseBytes)
        let attempts = try Self.array(object, "sendAttempts", optional: true).map {
            value throws(AppStoreAPIError) -> TestNotificationStatus.Attempt in
            guard let item = value.objectValue else { throw Self.invalid("sendAttempts[] is not an object") }
            return TestNotificationStatus.Attempt(attemptDate: try Self.date(item, "attemptDate"),
                                                  result: try Self.string(item, "sendAttemptResult"))
        }
        return TestNotificationStatus(signedPayload: try Self.string(object, "signedPayload"), sendAttempts: attempts)
    }

    public func extendRenewalDate(originalTransactionId: String, _ request: RenewalExtensionRequest,
                                  environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> RenewalExtensionResult {
        let payload: JSONValue = [
            "extendByDays": JSONValue(request.extendByDays), "extendReasonCode": JSONValue(request.reasonCode),
            "requestIdentifier": .string(request.requestIdentifier.lowercasedText),
        ]
        // PUT with Apple's requestIdentifier: Apple deduplicates, so retrying is safe.
        let body = try call("PUT", "/inApps/v1/subscriptions/extend/\(Self.pathSegment(originalTransactionId))",
                            environment, credentials, body: payload.serialized())
        let object = try Self.object(body, limit: configuration.maxResponseBytes)
        return RenewalExtensionResult(
            effectiveDate: (object["effectiveDate"].map { !$0.isNull } ?? false) ? try Self.date(object, "effectiveDate") : nil,
            originalTransactionId: try Self.string(object, "originalTransactionId"),
            success: try Self.bool(object, "success"),
            webOrderLineItemId: try Self.optionalString(object, "webOrderLineItemId"))
    }

    public func lookUpOrder(orderId: String, environment: StoreEnvironment,
                            credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> SignedOrderLookup {
        let body = try call("GET", "/inApps/v1/lookup/\(Self.pathSegment(orderId))", environment, credentials)
        let object = try Self.object(body, limit: configuration.maxResponseBytes)
        // Apple leaves signedTransactions out for an invalid order id.
        let signed = try Self.array(object, "signedTransactions", optional: true).map { value throws(AppStoreAPIError) -> String in
            guard let text = value.stringValue else { throw Self.invalid("signedTransactions[] is not a string") }
            return text
        }
        return SignedOrderLookup(status: try Self.int(object, "status"), signedTransactions: signed)
    }

    // MARK: - One call: token, attempts, budget, mapping

    private func baseURL(_ environment: StoreEnvironment) throws(AppStoreAPIError) -> String {
        switch environment {
        case .production: return configuration.productionURL
        case .sandbox: return configuration.sandboxURL
        default:
            throw AppStoreAPIError(.invalidRequest, reason: "Apple has no App Store Server API for the \(environment) environment")
        }
    }

    /// Sends one logical request and returns the 2xx body, or throws the mapped error (also the Retention Messaging
    /// API's, RetentionMessagingClient.swift).
    func call(_ method: String, _ path: String, _ environment: StoreEnvironment, _ credentials: AppStoreAPICredentials,
              body: [UInt8] = [], contentType: String = "application/json",
              idempotent: Bool? = nil) throws(AppStoreAPIError) -> [UInt8] {
        let base = try baseURL(environment)
        let url = (base.hasSuffix("/") ? String(base.dropLast()) : base) + path
        let deadline = ContinuousClock.now + configuration.callBudget
        let policy = configuration.retry
        let idempotent = idempotent ?? RetryPolicy.isIdempotent(method: method)
        var attempt = 0
        while true {
            attempt += 1
            let token = try tokens.token(for: credentials, now: now())
            var headers: [(name: String, value: String)] = [("Authorization", "Bearer \(token)"), ("Accept", "application/json")]
            if !body.isEmpty { headers.append(("Content-Type", contentType)) }
            let request = HTTPClientRequest(method: method, url: url, headers: headers, body: body, idempotent: idempotent)
            let outcome: RetryPolicy.Outcome
            let failure: AppStoreAPIError
            do {
                let response = try http.execute(request, deadline: deadline)
                if (200..<300).contains(response.status) { return response.body }
                failure = mapStatus(response, attempts: attempt)
                if failure.kind == .unauthorized { tokens.invalidate(credentials) }
                outcome = .response(status: response.status, retryAfter: response.header("Retry-After"))
            } catch {
                failure = mapNetwork(error, attempts: attempt)
                guard error.isNetworkFailure else { throw failure }
                outcome = .networkFailure
            }
            guard failure.kind == .unavailable,
                  case .retry(let delay) = policy.decision(afterAttempt: attempt, idempotent: idempotent, outcome: outcome,
                                                           jitter: jitter(), now: now()),
                  ContinuousClock.now + delay < deadline
            else { throw failure }
            sleep(delay)
        }
    }

    private func mapStatus(_ response: HTTPClientResponse, attempts: Int) -> AppStoreAPIError {
        let status = response.status
        let (code, message) = Self.appleError(response.body)
        let suffix = attempts > 1 ? " after \(attempts) attempts" : ""
        func error(_ kind: AppStoreAPIError.Kind, _ reason: String, retryAfter: Int? = nil) -> AppStoreAPIError {
            AppStoreAPIError(kind, reason: reason, httpStatus: status, appleErrorCode: code, appleErrorMessage: message,
                             retryAfterSeconds: retryAfter)
        }
        switch status {
        case 401:
            return error(.unauthorized, "Apple refused the App Store Server API token")
        case 404 where code.map(Self.retryableNotFoundCodes.contains) ?? false:
            return error(.unavailable, "Apple asked to try again later", retryAfter: configuration.defaultRetryAfterSeconds)
        case 404:
            return error(.notFound, "Apple does not know this id in this environment")
        case 429:
            return error(.unavailable, "Apple rate-limited the request\(suffix)", retryAfter: retryAfterSeconds(response))
        case 500...599:
            return error(.unavailable, "Apple answered \(status)\(suffix)", retryAfter: retryAfterSeconds(response))
        default:
            return error(.rejected, "Apple rejected the request with \(status)")
        }
    }

    /// Apple's `Retry-After` in whole seconds (on 429 Apple sends a UNIX time in milliseconds; `RetryPolicy` reads
    /// that and the two standard forms), else the configured default.
    private func retryAfterSeconds(_ response: HTTPClientResponse) -> Int {
        guard let value = response.header("Retry-After"), let delay = RetryPolicy.delay(retryAfter: value, now: now()) else {
            return configuration.defaultRetryAfterSeconds
        }
        return RetryPolicy.wholeSeconds(delay)
    }

    private func mapNetwork(_ error: HTTPClientError, attempts: Int) -> AppStoreAPIError {
        let suffix = attempts > 1 ? " (after \(attempts) attempts)" : ""
        switch error.code {
        case .invalidRequest:
            return AppStoreAPIError(.invalidRequest, reason: "the request cannot be sent: \(error.reason)")
        case .protocolError, .tooLarge:
            return AppStoreAPIError(.invalidResponse, reason: "Apple's answer is not valid HTTP: \(error.reason)")
        default:   // connect, tls, timeout, io: nothing complete came back
            return AppStoreAPIError(.unavailable, reason: "Apple could not be reached: \(error.description)\(suffix)",
                                    retryAfterSeconds: configuration.defaultRetryAfterSeconds)
        }
    }

    /// 404 codes Apple documents as "retryable" (AccountNotFoundRetryable, AppNotFoundRetryable,
    /// OriginalTransactionIdNotFoundRetryable): the data is not there *yet*, not absent.
    static let retryableNotFoundCodes: Set<Int> = [4040002, 4040004, 4040006]

    // MARK: - Parsing (strict and bounded)

    /// Apple's `{errorCode, errorMessage}`, when the body is that (a 401 has no body).
    static func appleError(_ body: [UInt8]) -> (code: Int?, message: String?) {
        guard !body.isEmpty, body.count <= 16 * 1024,
              let value = try? JSONParser.parse(body, limits: JSONParser.Limits(maxDepth: 8, maxBytes: 16 * 1024)),
              let object = value.objectValue else { return (nil, nil) }
        let code = object["errorCode"]?.int64Value.flatMap { Int(exactly: $0) }
        let message = object["errorMessage"]?.stringValue.map { String($0.prefix(300)) }
        return (code, message)
    }

    static func object(_ body: [UInt8], limit: Int) throws(AppStoreAPIError) -> JSONObject {
        guard body.count <= limit else { throw invalid("the body is larger than \(limit) bytes") }
        let value: JSONValue
        do { value = try JSONParser.parse(body, limits: JSONParser.Limits(maxDepth: 16, maxBytes: limit)) } catch {
            throw invalid("the body is not JSON (\(error))")
        }
        guard let object = value.objectValue else { throw invalid("the body is not a JSON object") }
        return object
    }

    static func invalid(_ reason: String) -> AppStoreAPIError {
        AppStoreAPIError(.invalidResponse, reason: "Apple's answer is unreadable: \(reason)", httpStatus: 200)
    }

    static func string(_ object: JSONObject, _ key: String) throws(AppStoreAPIError) -> String {
        guard let text = object[key]?.stringValue else { throw invalid("\(key) is missing or not a string") }
        return text
    }

    static func optionalString(_ object: JSONObject, _ key: String) throws(AppStoreAPIError) -> String? {
        guard let value = object[key], !value.isNull else { return nil }
        guard let text = value.stringValue else { throw invalid("\(key) is not a string") }
        return text
    }

    static func int(_ object: JSONObject, _ key: String) throws(AppStoreAPIError) -> Int {
        guard let number = object[key]?.int64Value, let value = Int(exactly: number) else { throw invalid("\(key) is missing or not an integer") }
        return value
    }

    static func bool(_ object: JSONObject, _ key: String) throws(AppStoreAPIError) -> Bool {
        guard let flag = object[key]?.boolValue else { throw invalid("\(key) is missing or not a boolean") }
        return flag
    }

    static func array(_ object: JSONObject, _ key: String, optional: Bool) throws(AppStoreAPIError) -> [JSONValue] {
        guard let value = object[key], !value.isNull else {
            if optional { return [] }
            throw invalid("\(key) is missing")
        }
        guard let items = value.arrayValue else { throw invalid("\(key) is not an array") }
        return items
    }

    /// A date in milliseconds since 1970 (Apple's format), within a sane range.
    static func date(_ object: JSONObject, _ key: String) throws(AppStoreAPIError) -> Date {
        guard let ms = object[key]?.int64Value, ms >= 0, ms < 100_000_000_000_000 else {
            throw invalid("\(key) is missing or not a date in milliseconds")
        }
        return Date(timeIntervalSince1970: TimeInterval(ms) / 1000)
    }

    static func milliseconds(_ date: Date) -> Int64 {
        let ms = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard ms.isFinite, ms >= 0, ms < 100_000_000_000_000 else { return 0 }
        return Int64(ms)
    }

    /// An id as one path segment: everything but RFC 3986 unreserved characters percent-encoded, so an id can
    /// never add a segment, a query or a fragment.
    static func pathSegment(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + Hex.encode([byte], uppercase: true)
            }
        }
        // "." and ".." would be dot-segments (RFC 3986 §5.2.4).
        if out == "." { return "%2E" }
        if out == ".." { return "%2E%2E" }
        return out
    }

    /// A query parameter value (same encoding as a path segment).
    static func queryValue(_ text: String) -> String { pathSegment(text) }
}
