/// What to do when a user posts a purchase, given who already holds it.
public enum OwnershipDecision: Sendable, Equatable {
    /// Nobody holds it yet: bind it to the user.
    case bind
    /// The user already holds it: nothing changes.
    case alreadyOwned
    /// `transfer` policy: the user gets it and these previous owners lose it (record the move).
    case transfer(from: [String])
    /// `share` policy: the user gets it too; the others keep it.
    case share
    /// `block` policy: refuse; `owner` keeps it.
    case block(owner: String)
}

/// What a request that names a purchase proves about who bought it.
public enum PurchaseProof: Sendable, Equatable {
    /// Apple's signed data from the buyer's device (a StoreKit 2 JWS, a StoreKit 1 receipt): only the device, or
    /// whoever it gave the data to, holds it.
    case signedData
    /// A transaction id with the public key alone: Apple answers anyone who has the project's credentials, and the
    /// id is no secret (`GET /v1/subscriptions` shows it), so it proves nothing about the poster.
    case transactionId
    /// The project's secret key: the caller is the app's backend, which vouches for its user.
    case secretKey
}

/// Ownership rules for restores across accounts (the project's transfer policy).
///
/// The binding step itself has one live author, SQL (`bouncer_record_transaction` in schema/functions/, in the
/// statement that records the transaction); its Swift statement (`decide`) is the executable specification under
/// `Tests/Specification/`, and StorageTests' `RuleTableTests` runs both on every policy × holder situation.
public enum OwnershipRules {
    /// The policy a request may apply: a public-key lookup by transaction id never changes who holds a purchase
    /// (`block`: unheld purchases bind, held ones are refused), unless the transaction's appAccountToken names the
    /// poster (`tokenNamesUser`, see `AccountBindingRules.tokenNames`); other proofs apply the project's policy.
    public static func effectivePolicy(_ policy: TransferPolicy, proof: PurchaseProof, tokenNamesUser: Bool) -> TransferPolicy {
        proof == .transactionId && !tokenNamesUser ? .block : policy
    }
}
