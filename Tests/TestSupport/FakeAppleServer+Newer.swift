public import Foundation
import JSON

/// The newer endpoints (issue 25), served as Apple documents them: Get App Transaction Info, Set App Account Token,
/// Get Refund History, the mass renewal extension and its status, Finish Transaction.
extension FakeAppleServer {
    /// What the newer endpoints answer, per environment.
    struct NewerScenario {
        var appTransactions: [Environment: [String: String]] = [:]
        /// Original transaction ids Set App Account Token accepts, and whether each is a Family Sharing one.
        var tokenTargets: [Environment: [String: Bool]] = [:]
        var tokensSet: [Environment: [String: String]] = [:]
        var refunds: [Environment: [String: [[String]]]] = [:]
        var massExtensions: [Environment: [String: JSONValue]] = [:]
        var massProducts: [Environment: Set<String>] = [:]
        var finishable: [Environment: Set<String>] = [:]
        var finished: [Environment: [String]] = [:]
    }

    /// Get App Transaction Info answers `signed` for any of the customer's transaction ids in `transactionIds`.
    public func setAppTransaction(signed: String, forTransactionIds transactionIds: [String], environment: Environment) {
        store.mutex.withLock { state in
            for id in transactionIds { state.newer.appTransactions[environment, default: [:]][id] = signed }
        }
    }

    /// Set App Account Token accepts `originalTransactionId` (other ids: `404` 4040005; a family one: `400` 4000185).
    public func allowAppAccountToken(_ originalTransactionId: String, family: Bool = false, environment: Environment) {
        store.mutex.withLock { $0.newer.tokenTargets[environment, default: [:]][originalTransactionId] = family }
    }

    /// The app account tokens Apple now holds, by original transaction id.
    public func appAccountTokens(environment: Environment) -> [String: String] {
        store.mutex.withLock { $0.newer.tokensSet[environment] ?? [:] }
    }

    /// Get Refund History answers these pages for `transactionId`: "revision-n" continues after page n, and the last
    /// page's revision stays valid, answering what was added since (pages appended later); a transaction without
    /// pages answers an empty history with "revision-0" (a customer with no refunds).
    public func setRefundHistory(_ transactionId: String, pages: [[String]], environment: Environment) {
        store.mutex.withLock { $0.newer.refunds[environment, default: [:]][transactionId] = pages }
    }

    /// The mass extension accepts requests for `productId` (others: `400` 4000023 InvalidProductIdError).
    public func allowMassExtension(productId: String, environment: Environment) {
        store.mutex.withLock { _ = $0.newer.massProducts[environment, default: []].insert(productId) }
    }

    /// Completes the mass extension `requestIdentifier` with these counts (its status says so from now on).
    public func completeMassExtension(_ requestIdentifier: UUID, succeeded: Int, failed: Int, at date: Int64,
                                      environment: Environment) {
        store.mutex.withLock { state in
            let id = requestIdentifier.uuidString.lowercased()
            guard var status = state.newer.massExtensions[environment]?[id]?.objectValue else { return }
            status["complete"] = true
            status["completeDate"] = JSONValue(date)
            status["succeededCount"] = JSONValue(succeeded)
            status["failedCount"] = JSONValue(failed)
            state.newer.massExtensions[environment]?[id] = .object(status)
        }
    }

    /// Finish Transaction accepts `transactionId` (others: `404` 4040010).
    public func allowFinish(_ transactionId: String, environment: Environment) {
        store.mutex.withLock { _ = $0.newer.finishable[environment, default: []].insert(transactionId) }
    }

    /// The transaction ids finished, in order (a repeat appears again).
    public func finishedTransactions(environment: Environment) -> [String] {
        store.mutex.withLock { $0.newer.finished[environment] ?? [] }
    }

    static func parseNewer(_ method: String, _ path: String, _ segments: [String]) -> (Endpoint?, String?) {
        func decoded(_ segment: String) -> String { segment.removingPercentEncoding ?? segment }
        switch (method, segments.count) {
        case ("GET", 6) where segments[1...4] == ["inApps", "v1", "transactions", "appTransactions"]:
            return (.appTransactionInfo, decoded(segments[5]))
        case ("PUT", 6) where segments[1...3] == ["inApps", "v1", "transactions"] && segments[5] == "appAccountToken":
            return (.setAppAccountToken, decoded(segments[4]))
        case ("GET", 6) where segments[1...4] == ["inApps", "v2", "refund", "lookup"]:
            return (.refundHistory, decoded(segments[5]))
        case ("POST", 6) where path == "/inApps/v1/subscriptions/extend/mass":
            return (.massExtendRenewalDate, "mass")
        case ("GET", 8) where segments[1...5] == ["inApps", "v1", "subscriptions", "extend", "mass"]:
            return (.massExtendRenewalDateStatus, decoded(segments[7]))
        case ("POST", 6) where segments[1...3] == ["inApps", "v1", "transactions"] && segments[5] == "finish":
            return (.finishTransaction, decoded(segments[4]))
        default:
            return (nil, nil)
        }
    }

    static func answerNewer(_ endpoint: Endpoint, _ request: ReceivedRequest, _ environment: Environment,
                            _ state: inout NewerScenario) -> LocalHTTPSServer.Action {
        let id = request.id ?? ""
        switch endpoint {
        case .appTransactionInfo:
            guard let signed = state.appTransactions[environment]?[id] else {
                return appleError(404, 4040010, "Transaction id not found.")
            }
            return ok(["signedAppTransactionInfo": .string(signed)])
        case .setAppAccountToken:
            guard let family = state.tokenTargets[environment]?[id] else {
                return appleError(404, 4040005, "Original transaction id not found.")
            }
            guard let token = request.jsonBody?.objectValue?["appAccountToken"]?.stringValue, UUID(uuidString: token) != nil else {
                return appleError(400, 4000183, "Invalid request. The app account token field must be a valid UUID.")
            }
            if family { return appleError(400, 4000185, "Invalid request. Family Sharing transactions aren't supported by this endpoint.") }
            state.tokensSet[environment, default: [:]][id] = token.lowercased()
            return .respond(status: 200)
        case .refundHistory:
            let pages = state.refunds[environment]?[id] ?? []
            var index = 0
            if let revision = request.query.first(where: { $0.name == "revision" })?.value {
                guard revision.hasPrefix("revision-"), let n = Int(revision.dropFirst("revision-".count)),
                      n >= 0, n <= pages.count else {
                    return appleError(400, 4000005, "Invalid revision.")
                }
                index = n
            }
            let items = index < pages.count ? pages[index] : []
            let next = index < pages.count ? index + 1 : index
            return ok(["revision": .string("revision-\(next)"), "hasMore": .bool(next < pages.count),
                       "signedTransactions": .array(items.map { .string($0) })])
        case .massExtendRenewalDate:
            guard let body = request.jsonBody?.objectValue, let requestId = body["requestIdentifier"]?.stringValue,
                  UUID(uuidString: requestId) != nil else {
                return appleError(400, 4000011, "Invalid request identifier.")
            }
            guard let days = body["extendByDays"]?.int64Value, (1...90).contains(days) else {
                return appleError(400, 4000009, "Invalid extend by days value.")
            }
            guard let reason = body["extendReasonCode"]?.int64Value, (0...3).contains(reason) else {
                return appleError(400, 4000010, "Invalid extend reason code.")
            }
            guard let product = body["productId"]?.stringValue, state.massProducts[environment]?.contains(product) == true else {
                return appleError(400, 4000023, "Invalid product id.")
            }
            let key = requestId.lowercased()
            if state.massExtensions[environment]?[key] == nil {
                state.massExtensions[environment, default: [:]][key] = ["requestIdentifier": .string(key), "complete": false]
            }
            return ok(["requestIdentifier": .string(requestId)])
        case .massExtendRenewalDateStatus:
            guard let status = state.massExtensions[environment]?[id.lowercased()] else {
                return appleError(400, 4000011, "Invalid request identifier.")
            }
            return ok(status)
        case .finishTransaction:
            guard state.finishable[environment]?.contains(id) == true else {
                return appleError(404, 4040010, "Transaction id not found.")
            }
            state.finished[environment, default: []].append(id)
            return .respond(status: 200)
        default:
            return .respond(status: 404)
        }
    }
}
