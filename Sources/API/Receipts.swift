import Foundation
import Domain
import HTTPCore

extension APIHandlers {
    static let receiptSuggestion = "Request body requires signed_transaction_info (string). Optional: user_id, device_id."
    static let receiptKeySuggestion = "Use a valid public key (pk_...) in the URL path: POST /v1/receipts/:public_key."
    static let receiptOneOfSuggestion = "Send exactly one of signed_transaction_info (the StoreKit 2 JWS) and "
        + "transaction_id (Bouncer asks Apple for it). Optional: user_id, device_id."

    /// `POST /v1/receipts/:publicKey`: verify a StoreKit 2 signed transaction for the project, record it, answer
    /// what it grants now.
    func postReceipt(_ request: Request) throws -> Response {
        let project = try Auth.project(
            publicKey: request.pathParameters["publicKey"], deps: deps, suggestion: Self.receiptKeySuggestion)

        let body = try RequestBody.object(request, suggestion: Self.receiptSuggestion)
        var fields = FieldValidator(body)
        // Exactly one of the two. Neither keeps the published example (signed_transaction_info: Required).
        let lookup = fields.has("transaction_id")
        if lookup, fields.has("signed_transaction_info") {
            let message = "Provide exactly one of signed_transaction_info and transaction_id"
            fields.fail(["signed_transaction_info"], message)
            fields.fail(["transaction_id"], message)
            try fields.check(suggestion: Self.receiptOneOfSuggestion)
        }
        let jws = lookup ? nil : fields.string("signed_transaction_info", required: true)
        let transactionId = lookup ? fields.string("transaction_id", required: true) : nil
        if let transactionId, fields.parsed("transaction_id") {
            fields.add(TransactionLookup.problems(transactionId: transactionId))
        }
        let userId = fields.string("user_id", required: false, maxLength: 256)
        let deviceId = fields.string("device_id", required: false, maxLength: 256)
        try fields.check(suggestion: lookup ? Self.receiptOneOfSuggestion : Self.receiptSuggestion)

        let facts: TransactionFacts
        if let transactionId {
            facts = try transactionLookup.lookUp(transactionId: transactionId, for: project)
        } else {
            guard let jws, Self.hasThreeParts(jws) else {
                throw VerificationFailure(code: "INVALID_JWS_FORMAT", reason: "expected 3 dot-separated parts", step: "format")
            }
            facts = try deps.verifier.verifyTransaction(jws, for: project)
        }
        // Before anything is written: under require_match a mismatch refuses the whole request.
        let bound = try AccountBindingRules.boundUser(
            postedUserId: userId, appAccountToken: facts.appAccountToken, policy: project.appAccountTokenPolicy)
        let now = deps.now()
        let recorded = try deps.purchases.recordTransaction(
            facts, userId: bound.userId, deviceId: deviceId, project: project, now: now)
        if case .block = recorded.ownership {
            // The store is expected to throw; never answer 201 for a refused binding either way.
            throw DomainError(.purchaseOwnedByAnotherUser, "The purchase is bound to another user.")
        }
        // Projects that opted into a token policy learn which user the purchase went to, and why.
        let binding = project.appAccountTokenPolicy == .ignore ? nil : bound
        var created = Self.receiptBody(recorded, at: now, binding: binding)
        appendEntitlementToken(to: &created, project: project, userId: bound.userId, request: request)
        return Response.json(201, created)
    }

    /// Lookups by transaction id: the shared use case over this API's ports.
    var transactionLookup: TransactionLookup {
        TransactionLookup(
            credentials: CredentialAdministration(projects: deps.projects, store: deps.credentials, sealer: deps.sealer,
                                                  inspector: deps.keyInspector, now: deps.now),
            appStore: deps.appStore, verifier: deps.verifier)
    }

    /// Compact JWS (RFC 7515 §7.1): three non-empty parts separated by two dots. The verifier checks the rest.
    static func hasThreeParts(_ jws: String) -> Bool {
        // `memchr` over the contiguous UTF-8 storage: iterating `String.utf8` costs ~30 instructions a byte, an
        // indexed loop ~3, and a JWS is ~4.4 KB.
        var text = jws
        return text.withUTF8 { bytes -> Bool in
            guard let base = bytes.baseAddress else { return false }
            let dot = Int32(UInt8(ascii: "."))
            var partStart = 0
            for _ in 0..<2 {
                guard let found = memchr(base + partStart, dot, bytes.count - partStart) else { return false }
                let index = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
                guard index > partStart else { return false }   // an empty part
                partStart = index + 1
            }
            return partStart < bytes.count && memchr(base + partStart, dot, bytes.count - partStart) == nil
        }
    }

    /// The 201 body. Status is the purchase's when the posted transaction is its latest (so grace periods and
    /// revocations recorded for the purchase apply), else the posted transaction's own.
    ///
    /// With `binding` (projects whose `app_account_token_policy` is not `ignore`), the body also names the bound
    /// user (`user_id`, null when none) and where it came from (`user_id_source`).
    static func receiptBody(
        _ recorded: RecordedTransaction, at now: Date,
        binding: (userId: String?, source: BoundUserSource?)? = nil
    ) -> [UInt8] {
        let transaction = recorded.transaction
        let status = recorded.isLatest
            ? StatusRules.evaluate(recorded.purchase, at: now).status
            : StatusRules.evaluate(transaction, at: now)
        var body = JSONBody(capacity: 320)
        body.raw(#"{"valid":true,"transaction_id":"#)
        body.string(transaction.transactionId)
        body.raw(#","original_transaction_id":"#)
        body.string(transaction.originalTransactionId)
        body.raw(#","product_id":"#)
        body.string(transaction.productId)
        body.raw(#","entitlements":"#)
        body.strings(status == .active ? recorded.entitlements : [])
        body.raw(#","expires_date":"#)
        body.dateOrNull(transaction.expiresDate)
        body.raw(#","status":"#)
        body.string(status.rawValue)
        body.raw(#","environment":"#)
        body.string(transaction.environment.rawValue)
        if let binding {
            body.raw(#","user_id":"#)
            body.stringOrNull(binding.userId)
            body.raw(#","user_id_source":"#)
            body.stringOrNull(binding.source?.rawValue)
        }
        body.raw("}")
        return body.bytes
    }
}
