import Foundation
import Domain
import HTTPCore

/// A store answered a write without its result (a bug of the store, never of the request): 500 `INTERNAL_ERROR`.
struct StoreAnswerMissing: Error, CustomStringConvertible {
    var description: String { "the purchase store returned no result for a recorded transaction" }
}

extension ReceiptsController {
    /// `POST /v1/receipts/:publicKey` with `receipt_data`: a StoreKit 1 app receipt verified locally (no call to
    /// Apple), every in-app record recorded in one database transaction (source `receipt`), answered with the usual
    /// body for the most recent purchase plus `transactions` (all records) and the receipt's `entitlements`.
    func postAppReceipt(_ receiptData: String, userId: String?, deviceId: String?, project: Project) throws -> Response {
        let receipt = try verifier.verifyReceipt(receiptData, for: project)
        // Before any database work: a forged (Xcode) receipt can list any number of records.
        guard receipt.transactions.count <= maxReceiptRecords else {
            throw HTTPError.tooManyReceiptRecords(receipt.transactions.count, limit: maxReceiptRecords)
        }
        // Receipts carry no appAccountToken: the posted user_id binds under every policy.
        let bound = try AccountBindingRules.boundUser(
            postedUserId: userId, appAccountToken: nil, policy: project.appAccountTokenPolicy)
        let now = self.now()
        // Stored as facts either way; Sandbox purchases outside the project's allowlist grant nothing.
        let recorded = try purchases.recordTransactions(
            receipt.transactions, source: .receipt, userId: bound.userId, deviceId: deviceId, project: project, now: now)
            .map { SandboxAccessRules.answer($0, userId: bound.userId, policy: project.sandbox) }
        guard recorded.count == receipt.transactions.count else { throw StoreAnswerMissing() }
        for item in recorded {
            if case .block = item.ownership {
                throw DomainError(.purchaseOwnedByAnotherUser, "The purchase is bound to another user.")
            }
        }
        let binding = project.appAccountTokenPolicy == .ignore ? nil : bound
        return Response.json(201, Self.appReceiptBody(receipt, recorded, at: now, binding: binding))
    }

    /// What the receipt grants at `now`: the union of the entitlements of its purchases that are active, each
    /// purchase evaluated on its state after the whole receipt was recorded (its latest transaction's product).
    static func receiptEntitlements(_ recorded: [RecordedTransaction], at now: Date) -> [String] {
        var finalState: [String: RecordedTransaction] = [:]   // per environment + original id: the last answer
        var byTransaction: [String: [String]] = [:]
        for item in recorded {
            let key = item.transaction.environment.rawValue + "\u{0}" + item.transaction.originalTransactionId
            finalState[key] = item
            byTransaction[item.transaction.transactionId] = item.entitlements
        }
        var granted = Set<String>()
        for item in finalState.values where StatusRules.evaluate(item.purchase, at: now).status == .active {
            // The purchase's product is its latest transaction's; one recorded earlier (a newer JWS) keeps this one's.
            granted.formUnion(byTransaction[item.purchase.latestTransactionId] ?? item.entitlements)
        }
        return granted.sorted()
    }

    /// The 201 body for a receipt: `receiptBody`'s fields for the most recent purchase (all null, status `none`,
    /// when the receipt holds no in-app record), `entitlements` for the whole receipt, and `transactions`: every
    /// record, in receipt order, with its own status at `now` evaluated from its stored transaction (newer signed
    /// facts win, as the store applied them); its other fields are the receipt's.
    static func appReceiptBody(
        _ receipt: ReceiptFacts, _ recorded: [RecordedTransaction], at now: Date,
        binding: (userId: String?, source: BoundUserSource?)? = nil
    ) -> [UInt8] {
        var answered: ReceiptRepresentation.Answered?
        if let index = ReceiptRules.mostRecent(recorded.map(\.transaction)), recorded.indices.contains(index) {
            let latest = recorded[index]
            let status = latest.isLatest
                ? StatusRules.evaluate(latest.purchase, at: now).status
                : StatusRules.evaluate(latest.stored, at: now)
            answered = (latest.transaction, receiptEntitlements(recorded, at: now), status)
        }
        var body = JSONBody(capacity: 256 + 220 * recorded.count)
        ReceiptRepresentation(
            answered: answered, environment: receipt.environment, binding: binding,
            // The stored facts' status, not the receipt's: a refund signed after the receipt was created wins.
            transactions: recorded.map { ($0.transaction, StatusRules.evaluate($0.stored, at: now)) },
            entitlementToken: nil
        ).write(into: &body)
        return body.bytes
    }
}
