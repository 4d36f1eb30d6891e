public import Domain
public import Foundation
import JSON

/// The newer endpoints (issue 25) over the same call, budget, retries and error mapping as the others.
extension AppStoreServerClient {
    public func appTransactionInfo(transactionId: String, environment: StoreEnvironment,
                                   credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> String {
        let body = try call("GET", "/inApps/v1/transactions/appTransactions/\(Self.pathSegment(transactionId))",
                            environment, credentials)
        return try Self.string(try Self.object(body, limit: configuration.maxResponseBytes), "signedAppTransactionInfo")
    }

    public func setAppAccountToken(originalTransactionId: String, token: UUID, environment: StoreEnvironment,
                                   credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        let payload: JSONValue = ["appAccountToken": .string(token.lowercasedText)]
        // A PUT of a value: repeating it sets the same token, so retrying is safe.
        _ = try call("PUT", "/inApps/v1/transactions/\(Self.pathSegment(originalTransactionId))/appAccountToken",
                     environment, credentials, body: payload.serialized())
    }

    public func refundHistory(transactionId: String, revision: String?, environment: StoreEnvironment,
                              credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> TransactionHistoryPage {
        var path = "/inApps/v2/refund/lookup/\(Self.pathSegment(transactionId))"
        if let revision { path += "?revision=\(Self.queryValue(revision))" }
        return try Self.historyPage(try call("GET", path, environment, credentials), limit: configuration.maxResponseBytes)
    }

    public func extendRenewalDatesForAll(_ request: MassRenewalExtensionRequest, environment: StoreEnvironment,
                                         credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> UUID {
        var members: [(String, JSONValue)] = [
            ("requestIdentifier", .string(request.requestIdentifier.lowercasedText)),
            ("extendByDays", JSONValue(request.extendByDays)), ("extendReasonCode", JSONValue(request.reasonCode)),
            ("productId", .string(request.productId)),
        ]
        if let storefronts = request.storefronts {
            members.append(("storefrontCountryCodes", .array(storefronts.map { .string($0) })))
        }
        // A POST Apple deduplicates by requestIdentifier: retrying is safe.
        let body = try call("POST", "/inApps/v1/subscriptions/extend/mass", environment, credentials,
                            body: JSONValue.object(JSONObject(members)).serialized(), idempotent: true)
        let echoed = try Self.string(try Self.object(body, limit: configuration.maxResponseBytes), "requestIdentifier")
        guard UUID(uuidString: echoed) == request.requestIdentifier else {
            throw Self.invalid("requestIdentifier is not the one sent")
        }
        return request.requestIdentifier
    }

    public func massRenewalExtensionStatus(productId: String, requestIdentifier: UUID, environment: StoreEnvironment,
                                           credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
        -> MassRenewalExtensionStatus
    {
        let path = "/inApps/v1/subscriptions/extend/mass/\(Self.pathSegment(productId))/"
            + Self.pathSegment(requestIdentifier.lowercasedText)
        let object = try Self.object(try call("GET", path, environment, credentials), limit: configuration.maxResponseBytes)
        guard UUID(uuidString: try Self.string(object, "requestIdentifier")) == requestIdentifier else {
            throw Self.invalid("requestIdentifier is not the one asked about")
        }
        let complete = try Self.bool(object, "complete")
        func present(_ key: String) -> Bool { object[key].map { !$0.isNull } ?? false }
        return MassRenewalExtensionStatus(
            complete: complete,
            completeDate: present("completeDate") ? try Self.date(object, "completeDate") : nil,
            succeededCount: present("succeededCount") ? try Self.int(object, "succeededCount") : nil,
            failedCount: present("failedCount") ? try Self.int(object, "failedCount") : nil)
    }

    public func finishTransaction(transactionId: String, environment: StoreEnvironment,
                                  credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        // Finishing a finished transaction finishes it: retrying is safe.
        _ = try call("POST", "/inApps/v1/transactions/\(Self.pathSegment(transactionId))/finish", environment, credentials,
                     idempotent: true)
    }
}
