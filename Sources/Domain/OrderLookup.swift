public import Foundation

/// Support's search by the order id of a customer's emailed App Store receipt
/// (`GET /v1/admin/projects/:id/orders/:orderId`): Apple's Look Up Order ID is asked with the project's credentials
/// (in Production: Apple has no such endpoint in Sandbox), every signed transaction it returns is verified by the same
/// verifier and rules as a posted one (chain, bundle, environment), and the users holding each purchase are read from
/// what this Bouncer recorded. Nothing is stored: a lookup, not a receipt.
///
/// Throws `DomainError` (`.invalidInput`, `.projectNotFound`, `.appStoreCredentialsMissing`, the stores'),
/// `AppStoreAPIError` (`.unauthorized`, `.unavailable`, `.rejected`, `.invalidResponse`) and `VerificationFailure`
/// (Apple's answer did not verify).
public struct OrderLookup: Sendable {
    private let projects: any ProjectStore
    private let credentials: CredentialAdministration
    private let appStore: (any AppleServerAPI)?
    private let verifier: any SignedDataVerifying
    private let holders: any CustomerStore

    /// A use case over projects, their credentials, Apple (nil when not configured: lookups are unavailable), the
    /// verifier of posted data and the store of who holds each purchase.
    public init(projects: any ProjectStore, credentials: CredentialAdministration, appStore: (any AppleServerAPI)?,
                verifier: any SignedDataVerifying, holders: any CustomerStore) {
        self.projects = projects
        self.credentials = credentials
        self.appStore = appStore
        self.verifier = verifier
        self.holders = holders
    }

    /// Apple's order ids are short runs of letters and digits (e.g. `MK5TTTVWJH`); the bound keeps hostile input
    /// small and the id one path segment.
    public static let maxOrderIdLength = 32

    /// The rule an order id must follow, as field problems (empty: fine).
    public static func problems(orderId: String, path: [String] = ["orderId"]) -> [FieldProblem] {
        FieldProblem.identifier(orderId, path: path, maxLength: maxOrderIdLength,
                                kind: "an App Store order id (letters and digits only)") { byte in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
        }
    }

    /// What Apple says about `orderId`, verified, with the holders of its purchases.
    public func lookUp(orderId: String, projectId: UUID) throws -> OrderLookupResult {
        let problems = Self.problems(orderId: orderId)
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid order id.", details: problems) }
        guard let project = try projects.project(id: projectId) else {
            throw DomainError(.projectNotFound, "No project with that id.")
        }
        let apiCredentials = try credentials.appStoreAPICredentials(for: project)
        guard let appStore else {
            throw AppStoreAPIError(.unavailable, reason: "the App Store Server API client is not configured",
                                   retryAfterSeconds: 60)
        }
        let asked = Result { () throws(AppStoreAPIError) -> SignedOrderLookup in
            try appStore.lookUpOrder(orderId: orderId, environment: .production, credentials: apiCredentials)
        }
        let answer: SignedOrderLookup
        switch asked {
        case .success(let value):
            answer = value
        case .failure(let error) where error.kind == .notFound:
            // Apple documents no 404 here (an unknown order is status 1): not a verdict about a transaction.
            throw AppStoreAPIError(.rejected, reason: "Apple answered 404 to Look Up Order ID", httpStatus: error.httpStatus,
                                   appleErrorCode: error.appleErrorCode, appleErrorMessage: error.appleErrorMessage)
        case .failure(let error):
            throw error
        }
        switch answer.status {
        case 1:
            return OrderLookupResult(orderId: orderId, isValid: false, transactions: [], holders: [])
        case 0:
            break
        default:
            throw AppStoreAPIError(.invalidResponse, reason: "Apple's OrderLookupStatus \(answer.status) is unknown",
                                   httpStatus: 200)
        }
        guard !answer.signedTransactions.isEmpty else {
            throw AppStoreAPIError(.invalidResponse, reason: "Apple said the order is valid but sent no transaction",
                                   httpStatus: 200)
        }
        var transactions: [TransactionFacts] = []
        for signed in answer.signedTransactions {
            let facts = try verifier.verifyTransaction(signed, for: project)
            guard facts.environment == .production else {
                throw AppStoreAPIError(.invalidResponse, reason: "Apple's Production API returned a \(facts.environment) transaction",
                                       httpStatus: 200)
            }
            transactions.append(facts)
        }
        var originalIds: [String] = []
        for facts in transactions where !originalIds.contains(facts.originalTransactionId) {
            originalIds.append(facts.originalTransactionId)
        }
        let held = try holders.purchaseHolders(projectId: project.id, environment: .production,
                                               originalTransactionIds: originalIds)
        return OrderLookupResult(
            orderId: orderId, isValid: true, transactions: transactions,
            holders: originalIds.compactMap { id in held[id].map { (originalTransactionId: id, userIds: $0) } })
    }
}

/// Apple's verdict on an order id, its verified transactions (Apple's order) and who holds each purchase here.
public struct OrderLookupResult: Sendable {
    /// The order id asked about.
    public var orderId: String
    /// Whether Apple says it is an order of this app (`OrderLookupStatus` 0).
    public var isValid: Bool
    /// The order's transactions, verified; empty for an invalid order.
    public var transactions: [TransactionFacts]
    /// The purchases (original transaction ids, in the order's order) that users of this project hold, and those
    /// users (sorted); a purchase nobody holds is absent.
    public var holders: [(originalTransactionId: String, userIds: [String])]
}
