import Foundation

/// Looking a transaction up at Apple by its id (`POST /v1/receipts/:publicKey` with `transaction_id`): the
/// project's credentials are opened, Apple's Get Transaction Info is asked in Production and then, when Apple says
/// the id is not found there and the project allows it, in Sandbox; the signed transaction Apple returns is verified
/// by the same verifier and rules as a posted one. The caller records the facts exactly like a posted JWS.
///
/// Throws `DomainError` (`.appStoreCredentialsMissing`, the credential store's and sealer's), `AppStoreAPIError`
/// (`.notFound` when no allowed environment knows the id, `.unauthorized`, `.unavailable`, `.rejected`,
/// `.invalidResponse`) and `VerificationFailure` (Apple's answer did not verify: nothing is recorded).
public struct TransactionLookup: Sendable {
    private let credentials: CredentialAdministration
    private let appStore: (any AppStoreServerAPI)?
    private let verifier: any SignedDataVerifying

    /// A use case over the project's credentials, Apple (nil when not configured: lookups are unavailable) and the
    /// verifier of posted data.
    public init(credentials: CredentialAdministration, appStore: (any AppStoreServerAPI)?, verifier: any SignedDataVerifying) {
        self.credentials = credentials
        self.appStore = appStore
        self.verifier = verifier
    }

    /// Apple's transaction ids are decimal strings (Xcode's count from 0); the bound keeps hostile input small.
    public static let maxTransactionIdLength = 32

    /// The rule a `transaction_id` must follow, as field problems (empty: fine).
    public static func problems(transactionId: String, path: [String] = ["transaction_id"]) -> [FieldProblem] {
        guard transactionId.utf8.count <= maxTransactionIdLength else {
            return [FieldProblem(path: path, message: "String must contain at most \(maxTransactionIdLength) character(s)")]
        }
        guard !transactionId.isEmpty, transactionId.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return [FieldProblem(path: path, message: "Must be an App Store transaction id (digits only)")]
        }
        return []
    }

    /// The environments asked, in order: Production first, then Sandbox, each only when the project accepts it.
    public static func environments(for project: Project) -> [StoreEnvironment] {
        [StoreEnvironment.production, .sandbox].filter { project.environments.contains($0) }
    }

    /// Gets, verifies and returns the transaction `transactionId` of `project`.
    public func lookUp(transactionId: String, for project: Project) throws -> TransactionFacts {
        let problems = Self.problems(transactionId: transactionId)
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid transaction id.", details: problems) }
        let opened: UnsealedAppStoreCredentials
        do {
            opened = try credentials.unsealedCredentials(projectId: project.id)
        } catch let error as DomainError where error.code == .appStoreCredentialsNotFound {
            throw DomainError(.appStoreCredentialsMissing, "The project has no App Store Server API credentials.",
                              underlying: error.message)
        }
        guard let appStore else {
            throw AppStoreAPIError(.unavailable, reason: "the App Store Server API client is not configured",
                                   retryAfterSeconds: 60)
        }
        let environments = Self.environments(for: project)
        guard !environments.isEmpty else {
            throw AppStoreAPIError(.notFound, reason: "the project accepts neither Production nor Sandbox transactions")
        }
        let credentials = AppStoreAPICredentials(credentials: opened, bundleId: project.bundleId)
        for (index, environment) in environments.enumerated() {
            let answer = Result { () throws(AppStoreAPIError) -> String in
                try appStore.transactionInfo(transactionId: transactionId, environment: environment, credentials: credentials)
            }
            let signed: String
            switch answer {
            case .success(let value):
                signed = value
            case .failure(let error):
                // Production does not know it: a Sandbox (TestFlight, App Review) purchase, perhaps.
                if error.kind == .notFound, index + 1 < environments.count { continue }
                throw error
            }
            let facts = try verifier.verifyTransaction(signed, for: project)
            // Apple's answer must be about what we asked, where we asked it; anything else is Apple's error, not a
            // verdict on the purchase, and nothing is recorded.
            guard facts.transactionId == transactionId else {
                throw AppStoreAPIError(.invalidResponse, reason: "Apple returned another transaction than the one asked",
                                       httpStatus: 200)
            }
            guard facts.environment == environment else {
                throw AppStoreAPIError(.invalidResponse,
                                       reason: "Apple's \(environment) API returned a \(facts.environment) transaction",
                                       httpStatus: 200)
            }
            return facts
        }
        throw AppStoreAPIError(.notFound, reason: "no environment knows the transaction id")   // unreachable: the loop returns or throws
    }
}
