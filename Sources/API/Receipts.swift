import Domain
import Foundation
import HTTPCore
import Primitives

/// `POST /v1/receipts/:publicKey`: StoreKit 2 signed transactions, lookups by transaction id and StoreKit 1 app
/// receipts (`AppReceipts.swift`), verified, recorded, answered with what they grant now.
struct ReceiptsController: APIController {
    let keys: KeyAuth
    let purchases: any PurchaseStore
    let verifier: any SignedDataVerifying
    /// Lookups by transaction id: the shared use case over this API's ports.
    let transactionLookup: TransactionLookup
    /// `APIDependencies.lookupBudget`: `nil` is unlimited.
    let lookupBudget: LookupBudget?
    /// Receipts carry a token when the project enables them and these are wired.
    let entitlementTokens: EntitlementTokens?
    /// `APIDependencies.maxReceiptBodyBytes`.
    let maxReceiptBodyBytes: Int
    /// `APIDependencies.maxReceiptRecords`.
    let maxReceiptRecords: Int
    let now: @Sendable () -> Date
    let log: @Sendable (String) -> Void

    var routes: [APIRoute] {
        // StoreKit 1 receipts of long purchase histories exceed 100 KB: this route alone takes larger bodies.
        [APIRoute(.post, "/v1/receipts/:publicKey", .app, maxBodyBytes: maxReceiptBodyBytes,
                  publicKey: Self.receiptKeySuggestion, postReceipt).counting(.receipts)]
    }

    static let receiptSuggestion = "Request body requires signed_transaction_info (string). Optional: user_id, device_id."
    static let receiptKeySuggestion = "Use a valid public key (pk_...) in the URL path: POST /v1/receipts/:public_key."
    static let receiptOneOfSuggestion = "Send exactly one of signed_transaction_info (the StoreKit 2 JWS), "
        + "transaction_id (Bouncer asks Apple for it) and receipt_data (the StoreKit 1 app receipt, base64). "
        + "Optional: user_id, device_id."
    /// The three ways to name a purchase; exactly one per request.
    static let receiptInputs = ["signed_transaction_info", "transaction_id", "receipt_data"]

    /// `POST /v1/receipts/:publicKey`: verify a StoreKit 2 signed transaction (or look one up at Apple, or verify a
    /// StoreKit 1 app receipt) for the project, record it, answer what it grants now.
    func postReceipt(_ request: Request, _ project: Project) throws -> Response {
        // Optional: the app's backend vouching for the user. Checked before Apple is asked; a wrong key is refused.
        let secretKey = try keys.presentsSecretKey(request, project: project)

        let body = try RequestBody.object(request, suggestion: Self.receiptSuggestion,
                                          limits: RequestBody.receiptLimits(maxBodyBytes: maxReceiptBodyBytes))
        var fields = FieldValidator(body)
        // Exactly one of the three. None keeps the published example (signed_transaction_info: Required).
        let present = Self.receiptInputs.filter { fields.has($0) }
        if present.count > 1 {
            let message = "Provide exactly one of signed_transaction_info, transaction_id and receipt_data"
            for key in present { fields.fail([key], message) }
            try fields.check(suggestion: Self.receiptOneOfSuggestion)
        }
        let lookup = present == ["transaction_id"]
        let legacy = present == ["receipt_data"]
        let jws = lookup || legacy ? nil : fields.string("signed_transaction_info", required: true)
        let transactionId = lookup ? fields.string("transaction_id", required: true) : nil
        if let transactionId, fields.parsed("transaction_id") {
            fields.add(TransactionLookup.problems(transactionId: transactionId))
        }
        // An empty receipt is the verifier's INVALID_RECEIPT_FORMAT, not a validation error: minLength 0.
        let receiptData = legacy ? fields.string("receipt_data", required: true, minLength: 0) : nil
        let userId = fields.string("user_id", required: false, maxLength: 256)
        let deviceId = fields.string("device_id", required: false, maxLength: 256)
        try fields.check(suggestion: lookup || legacy ? Self.receiptOneOfSuggestion : Self.receiptSuggestion)

        if let receiptData {
            return try postAppReceipt(receiptData, userId: userId, deviceId: deviceId, project: project)
        }
        let facts: TransactionFacts
        let source: TransactionSource
        if let transactionId {
            facts = try transactionLookup.lookUp(transactionId: transactionId, for: project,
                                                 budget: lookupBudget?.forClient(request.clientKey.description))
            source = .lookup
        } else {
            guard let jws, Self.hasThreeParts(jws) else {
                throw VerificationFailure(code: .invalidJWSFormat, reason: "expected 3 dot-separated parts", step: "format")
            }
            facts = try verifier.verifyTransaction(jws, for: project)
            source = .transaction
        }
        // Before anything is written: under require_match a mismatch refuses the whole request.
        let bound = try AccountBindingRules.boundUser(
            postedUserId: userId, appAccountToken: facts.appAccountToken, policy: project.appAccountTokenPolicy)
        // The store applies the policy this request's proof allows (a public-key lookup moves nothing).
        var recording = project
        recording.transferPolicy = OwnershipRules.effectivePolicy(
            project.transferPolicy, proof: secretKey ? .secretKey : source == .lookup ? .transactionId : .signedData,
            tokenNamesUser: AccountBindingRules.tokenNames(
                userId: bound.userId, appAccountToken: facts.appAccountToken, policy: project.appAccountTokenPolicy))
        let narrowed = recording.transferPolicy != project.transferPolicy
        let now = self.now()
        var recorded: RecordedTransaction
        do {
            if source == .transaction {
                recorded = try purchases.recordTransaction(
                    facts, userId: bound.userId, deviceId: deviceId, project: recording, now: now)
            } else {
                let all = try purchases.recordTransactions(
                    [facts], source: source, userId: bound.userId, deviceId: deviceId, project: recording, now: now)
                guard let first = all.first else {
                    throw StoreAnswerMissing()   // a store bug: 500 INTERNAL_ERROR with the request id
                }
                recorded = first
            }
            if case .block = recorded.ownership {
                // The store is expected to throw; never answer 201 for a refused binding either way.
                throw DomainError(.purchaseOwnedByAnotherUser, "The purchase is bound to another user.")
            }
        } catch let error as DomainError where narrowed && error.code == .purchaseOwnedByAnotherUser {
            throw HTTPError.lookupOwnedByAnotherUser
        }
        // Stored as facts either way; a Sandbox purchase outside the project's allowlist grants nothing.
        recorded = SandboxAccessRules.answer(recorded, userId: bound.userId, policy: project.sandbox)
        // Projects that opted into a token policy learn which user the purchase went to, and why.
        let binding = project.appAccountTokenPolicy == .ignore ? nil : bound
        // The token proves what this request proved: the posted purchase, when it describes its purchase now.
        let token = EntitlementTokensController.receiptToken(
            project: project, userId: bound.userId,
            granting: recorded.isLatest ? [OwnedPurchase(purchase: recorded.purchase,
                                                         entitlements: recorded.entitlements)] : [],
            request: request, tokens: entitlementTokens, log: log)
        let created = Self.receiptBody(recorded, at: now, binding: binding, entitlementToken: token)
        return Response.json(201, created)
    }

    /// Compact JWS (RFC 7515 §7.1): three non-empty parts separated by two dots. The verifier checks the rest.
    static func hasThreeParts(_ jws: String) -> Bool {
        let dot = UInt8(ascii: ".")
        guard let first = jws.utf8Offset(of: dot), first > 0,
              let second = jws.utf8Offset(of: dot, from: first + 1), second > first + 1 else { return false }
        return second + 1 < jws.utf8.count && jws.utf8Offset(of: dot, from: second + 1) == nil
    }

    /// The 201 body. Status is the purchase's when the posted transaction is its latest (so grace periods and
    /// revocations recorded for the purchase apply), else the transaction's as stored (a refund signed after the
    /// posted JWS wins over the posted facts).
    ///
    /// With `binding` (projects whose `app_account_token_policy` is not `ignore`), the body also names the bound
    /// user (`user_id`, null when none) and where it came from (`user_id_source`).
    static func receiptBody(
        _ recorded: RecordedTransaction, at now: Date,
        binding: (userId: String?, source: BoundUserSource?)? = nil, entitlementToken: String? = nil
    ) -> [UInt8] {
        let status = recorded.isLatest
            ? StatusRules.evaluate(recorded.purchase, at: now).status
            : StatusRules.evaluate(recorded.stored, at: now)
        var body = JSONBody(capacity: 320 + (entitlementToken?.utf8.count ?? 0))
        ReceiptRepresentation(
            answered: (recorded.transaction, status == .active ? recorded.entitlements : [], status),
            environment: recorded.transaction.environment, binding: binding, transactions: nil,
            entitlementToken: entitlementToken
        ).write(into: &body)
        return body.bytes
    }
}
