public import Foundation

/// Set App Account Token (`PUT /v1/admin/projects/:id/purchases/:originalTransactionId/app-account-token`): binds a
/// purchase made outside the app (an offer code, a purchase on another device) to an account, at Apple and here.
///
/// Apple is asked first, in the purchase's environment (Production first when this project knows it in both); its
/// acceptance is audited in a transaction of its own. The token is a fact Apple signs, so this Bouncer never writes
/// it itself: the purchase's transaction is fetched again from Apple (Get Transaction Info), verified like a posted
/// one and recorded with the binding the project's `app_account_token_policy` gives the token (the user it names under
/// `prefer`/`require_match`), which puts it on the customer's timeline. If that fetch fails, the next notification or
/// reconciliation brings the signed token (`transaction_recorded: false`).
///
/// Throws `DomainError` (`.invalidInput`, `.projectNotFound`, `.purchaseNotFound`, `.appStoreCredentialsMissing`,
/// the stores') and `AppStoreAPIError` (Apple's refusal: `.rejected` with its code, `.notFound`, `.unavailable`, …).
public struct AppAccountTokens: Sendable {
    private let actions: AppStoreActions
    private let purchases: any PurchaseStore

    /// The use case over the operator helpers' ports and the purchase store.
    public init(actions: AppStoreActions, purchases: any PurchaseStore) {
        self.actions = actions
        self.purchases = purchases
    }

    /// What happened.
    public struct Outcome: Sendable, Equatable {
        /// The purchase.
        public var originalTransactionId: String
        /// Where Apple was asked.
        public var environment: StoreEnvironment
        /// The token Apple now holds.
        public var appAccountToken: UUID
        /// Whether Apple's re-signed transaction was fetched, verified and recorded.
        public var transactionRecorded: Bool
        /// The user the recorded purchase is bound to (nil: none, or not recorded).
        public var userId: String?
    }

    /// Sets `token` on the purchase at Apple, audits it, then records Apple's re-signed transaction.
    public func set(projectId: UUID, originalTransactionId: String, token: UUID) throws -> Outcome {
        let problems = TransactionLookup.problems(transactionId: originalTransactionId, path: ["originalTransactionId"])
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid original transaction id.", details: problems) }
        let project = try actions.project(projectId)
        let known = try actions.store.purchaseEnvironments(projectId: project.id, originalTransactionId: originalTransactionId)
        guard let environment = [StoreEnvironment.production, .sandbox].first(where: { known.contains($0) }) else {
            throw DomainError(.purchaseNotFound, "No Production or Sandbox purchase \(originalTransactionId) in this project.")
        }
        let signing = try actions.credentials.appStoreAPICredentials(for: project)
        let client = try actions.client()
        try client.setAppAccountToken(originalTransactionId: originalTransactionId, token: token, environment: environment,
                                      credentials: signing)
        try actions.store.recordAppAccountTokenSet(projectId: project.id, environment: environment,
                                                   originalTransactionId: originalTransactionId, token: token)
        var outcome = Outcome(originalTransactionId: originalTransactionId, environment: environment,
                              appAccountToken: token, transactionRecorded: false, userId: nil)
        // Best effort: Apple already holds the token; only its signed form is missing here.
        guard let signed = try? client.transactionInfo(transactionId: originalTransactionId, environment: environment,
                                                       credentials: signing),
              let facts = try? actions.verifier.verifyTransaction(signed, for: project),
              facts.originalTransactionId == originalTransactionId, facts.environment == environment
        else { return outcome }
        let bound = try AccountBindingRules.boundUser(postedUserId: nil, appAccountToken: facts.appAccountToken,
                                                      policy: project.appAccountTokenPolicy)
        let recorded = try purchases.recordTransactions([facts], source: .lookup, userId: bound.userId, deviceId: nil,
                                                        project: project, now: actions.now())
        outcome.transactionRecorded = !recorded.isEmpty
        outcome.userId = bound.userId
        return outcome
    }

    /// Re-keys at Apple every Production and Sandbox purchase `userId` holds (erase's `reset_app_account_token`): each
    /// gets a fresh random token that names nobody, so Apple's future signed data no longer carries the account's.
    /// Runs before the erase (which clears the tokens stored here): Apple's first failure stops it, and the caller
    /// erases nothing, so a retry re-keys what is left. Answers how many purchases were re-keyed.
    public func reset(projectId: UUID, userId: String) throws -> Int {
        let project = try actions.project(projectId)
        var held: [(environment: StoreEnvironment, originalTransactionId: String)] = []
        for owned in try purchases.holdings(userId: userId, project: project).purchases {
            let purchase = owned.purchase
            guard purchase.environment == .production || purchase.environment == .sandbox,
                  !held.contains(where: { $0 == (purchase.environment, purchase.originalTransactionId) }) else { continue }
            held.append((purchase.environment, purchase.originalTransactionId))
        }
        guard !held.isEmpty else { return 0 }
        let signing = try actions.credentials.appStoreAPICredentials(for: project)
        let client = try actions.client()
        for (environment, originalTransactionId) in held {
            try client.setAppAccountToken(originalTransactionId: originalTransactionId, token: actions.newIdentifier(),
                                          environment: environment, credentials: signing)
        }
        return held.count
    }
}
