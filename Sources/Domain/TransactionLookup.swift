public import Foundation

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
    private let appStore: (any AppleServerAPI)?
    private let verifier: any SignedDataVerifying

    /// A use case over the project's credentials, Apple (nil when not configured: lookups are unavailable) and the
    /// verifier of posted data.
    public init(credentials: CredentialAdministration, appStore: (any AppleServerAPI)?, verifier: any SignedDataVerifying) {
        self.credentials = credentials
        self.appStore = appStore
        self.verifier = verifier
    }

    /// Apple's transaction ids are decimal strings (Xcode's count from 0); the bound keeps hostile input small.
    public static let maxTransactionIdLength = 32

    /// The rule a `transaction_id` must follow, as field problems (empty: fine).
    public static func problems(transactionId: String, path: [String] = ["transaction_id"]) -> [FieldProblem] {
        FieldProblem.identifier(transactionId, path: path, maxLength: maxTransactionIdLength,
                                kind: "an App Store transaction id (digits only)") { byte in
            byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }
    }

    /// The environments asked, in order: Production first, then Sandbox, each only when the project accepts it.
    public static func environments(for project: Project) -> [StoreEnvironment] {
        [StoreEnvironment.production, .sandbox].filter { project.environments.contains($0) }
    }

    /// Gets, verifies and returns the transaction `transactionId` of `project`. `budget` (nil: unlimited) is asked
    /// before each call to Apple and remembers the ids Apple did not know.
    public func lookUp(transactionId: String, for project: Project, budget: (any LookupBudgeting)? = nil) throws -> TransactionFacts {
        try firstAnswer(transactionId: transactionId, for: project, budget: budget, remembersMissing: true) {
            (appStore, environment, credentials) throws(AppStoreAPIError) -> String in
            try appStore.transactionInfo(transactionId: transactionId, environment: environment, credentials: credentials)
        } verify: { signed, environment in
            let facts = try verifier.verifyTransaction(signed, for: project)
            // Apple's answer must be about what we asked, where we asked it; anything else is Apple's error, not a
            // verdict on the purchase, and nothing is recorded.
            guard facts.transactionId == transactionId else {
                throw AppStoreAPIError(.invalidResponse, reason: "Apple returned another transaction than the one asked",
                                       httpStatus: 200)
            }
            try Self.check(facts.environment, askedIn: environment)
            return facts
        }
    }

    /// Get App Transaction Info for the customer who made `transactionId` (`POST /v1/app-transactions` with
    /// `transaction_id`): Apple's signed AppTransaction, verified like a posted one, from the first environment that
    /// knows the id. Apple's "not found" here is not remembered by `budget` (an id Apple knows may have no app
    /// transaction to show).
    public func lookUpAppTransaction(transactionId: String, for project: Project,
                                     budget: (any LookupBudgeting)? = nil) throws -> AppTransactionFacts {
        try firstAnswer(transactionId: transactionId, for: project, budget: budget, remembersMissing: false) {
            (appStore, environment, credentials) throws(AppStoreAPIError) -> String in
            try appStore.appTransactionInfo(transactionId: transactionId, environment: environment, credentials: credentials)
        } verify: { signed, environment in
            let facts = try verifier.verifyAppTransaction(signed, for: project)
            try Self.check(facts.environment, askedIn: environment)
            return facts
        }
    }

    private static func check(_ environment: StoreEnvironment, askedIn asked: StoreEnvironment) throws {
        guard environment == asked else {
            throw AppStoreAPIError(.invalidResponse, reason: "Apple's \(asked) API returned a \(environment) answer",
                                   httpStatus: 200)
        }
    }

    /// The environment loop both lookups share: the id checked, the credentials opened, Apple asked in Production and
    /// then, on "not found" and when the project allows it, in Sandbox; the first answer verified by `verify`.
    private func firstAnswer<Facts>(
        transactionId: String, for project: Project, budget: (any LookupBudgeting)?, remembersMissing: Bool,
        _ call: (any AppleServerAPI, StoreEnvironment, AppStoreAPICredentials) throws(AppStoreAPIError) -> String,
        verify: (String, StoreEnvironment) throws -> Facts
    ) throws -> Facts {
        let problems = Self.problems(transactionId: transactionId)
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid transaction id.", details: problems) }
        let credentials = try self.credentials.appStoreAPICredentials(for: project)
        guard let appStore else {
            throw AppStoreAPIError(.unavailable, reason: "the App Store Server API client is not configured",
                                   retryAfterSeconds: 60)
        }
        let environments = Self.environments(for: project)
        guard !environments.isEmpty else {
            throw AppStoreAPIError(.notFound, reason: "the project accepts neither Production nor Sandbox transactions")
        }
        for (index, environment) in environments.enumerated() {
            let answer = try ask(transactionId, environment, project: project, budget: budget,
                                 remembersMissing: remembersMissing) { () throws(AppStoreAPIError) -> String in
                try call(appStore, environment, credentials)
            }
            switch answer {
            case .success(let signed):
                return try verify(signed, environment)
            case .failure(let error):
                // Production does not know it: a Sandbox (TestFlight, App Review) purchase, perhaps.
                if error.kind == .notFound, index + 1 < environments.count { continue }
                throw error
            }
        }
        throw AppStoreAPIError(.notFound, reason: "no environment knows the transaction id")   // unreachable: the loop returns or throws
    }

    /// One environment's answer: Apple's "not found" remembered a moment ago, or Apple's answer if the budget allows
    /// the call (it throws when it does not). Only "not found" is remembered: an outage, a refused key or a rate
    /// limit says nothing about the id.
    private func ask(_ transactionId: String, _ environment: StoreEnvironment, project: Project,
                     budget: (any LookupBudgeting)?, remembersMissing: Bool,
                     _ call: () throws(AppStoreAPIError) -> String) throws -> Result<String, AppStoreAPIError> {
        if remembersMissing, let budget,
           budget.isKnownMissing(projectId: project.id, environment: environment, transactionId: transactionId) {
            return .failure(AppStoreAPIError(.notFound, reason: "Apple did not know the id in \(environment) moments ago"))
        }
        try budget?.spend(projectId: project.id)
        let answer = Result { () throws(AppStoreAPIError) -> String in try call() }
        if remembersMissing, case .failure(let error) = answer, error.kind == .notFound {
            budget?.rememberMissing(projectId: project.id, environment: environment, transactionId: transactionId)
        }
        return answer
    }
}

/// What stands between unauthenticated lookups and the project's App Store Server API quota: a budget of calls to
/// Apple, and a short memory of the ids Apple said it does not know (so repeating one costs no call).
///
/// Implementations bound their memory; the use case asks `isKnownMissing` before `spend` for every environment.
public protocol LookupBudgeting: Sendable {
    /// Takes one call to Apple for `projectId` from the budget, or throws (a rate-limit error) when it is spent.
    func spend(projectId: UUID) throws
    /// True when Apple said, recently, that it does not know `transactionId` in `environment` for this project.
    func isKnownMissing(projectId: UUID, environment: StoreEnvironment, transactionId: String) -> Bool
    /// Notes Apple's "not found" for a while.
    func rememberMissing(projectId: UUID, environment: StoreEnvironment, transactionId: String)
}
