public import Foundation
public import Primitives

/// Who wrote the facts a stored transaction row holds (`transactions.source`, schema/0011).
public typealias TransactionSource = OpenValue<TransactionSourceTag, String>
/// Tells `TransactionSource` apart from the other open vocabularies.
public enum TransactionSourceTag {}

extension TransactionSource {
    /// A StoreKit 1 app receipt posted to `POST /v1/receipts` (`receipt_data`).
    public static let receipt = TransactionSource(rawValue: "receipt")
    /// A StoreKit 2 signed transaction posted to `POST /v1/receipts` (`signed_transaction_info`).
    public static let transaction = TransactionSource(rawValue: "transaction")
    /// Apple's answer to a lookup by transaction id (`POST /v1/receipts` with `transaction_id`).
    public static let lookup = TransactionSource(rawValue: "lookup")
    /// Nested in an App Store Server Notification delivered to the webhook.
    public static let notification = TransactionSource(rawValue: "notification")
    /// Recovered by reconciliation from Apple's history.
    public static let reconcile = TransactionSource(rawValue: "reconcile")
}

/// The verified facts of one StoreKit 1 app receipt: its identity and one `TransactionFacts` per in-app record.
///
/// Only a verifier produces these, after checking the PKCS#7 signature, the chain at the receipt's creation date
/// and the bundle id and environment (`ReceiptRules` documents how records become transactions).
public struct ReceiptFacts: Sendable, Equatable {
    /// The app's bundle id (field 2), equal to the project's.
    public var bundleId: String
    /// Production or Sandbox (or Xcode) from the receipt type (field 0).
    public var environment: StoreEnvironment
    /// When the App Store created the receipt (field 12): every transaction's `signedDate`.
    public var creationDate: Date
    /// The app version the customer first bought (field 19).
    public var originalApplicationVersion: String?
    /// One per in-app record (field 17), in receipt order; may be empty (an app with no purchases yet).
    public var transactions: [TransactionFacts]

    /// Creates a value.
    public init(
        bundleId: String, environment: StoreEnvironment, creationDate: Date, originalApplicationVersion: String? = nil,
        transactions: [TransactionFacts]
    ) {
        self.bundleId = bundleId
        self.environment = environment
        self.creationDate = creationDate
        self.originalApplicationVersion = originalApplicationVersion
        self.transactions = transactions
    }
}

/// How StoreKit 1 in-app records become transactions. Pure rules; the verifier applies them.
///
/// - `signedDate` is the receipt's creation date: a receipt states what Apple knew then, so a StoreKit 2 JWS or a
///   notification signed later about the same transaction wins, and a newer receipt wins over an older one.
/// - The product type is inferred, since receipts do not carry it: a record with an expires date (1708) is an
///   auto-renewable subscription; any other is non-consumable. Consumables and non-renewing subscriptions are
///   therefore active without end once recorded (Apple only keeps unfinished consumables in a receipt, and
///   non-renewing subscriptions carry no end date to check).
/// - A cancellation date (1712) is the revocation date (reason unknown: receipts carry none).
/// - A record without an original transaction id is its own original; without a purchase date, the receipt's
///   creation date stands in (Apple always writes one; the bound keeps the row well-formed).
public enum ReceiptRules {
    /// The product type a record stands for (see the type rule above).
    public static func productType(expiresDate: Date?) -> ProductType {
        expiresDate == nil ? .nonConsumable : .autoRenewable
    }

    /// The index of the most recent purchase among `transactions`: the latest purchase date, ties broken by the
    /// greater transaction id (byte order); nil when empty.
    public static func mostRecent(_ transactions: [TransactionFacts]) -> Int? {
        var best: Int?
        for index in transactions.indices {
            guard let current = best else {
                best = index
                continue
            }
            let a = transactions[index], b = transactions[current]
            if a.purchaseDate > b.purchaseDate
                || (a.purchaseDate == b.purchaseDate && b.transactionId.utf8.lexicographicallyPrecedes(a.transactionId.utf8)) {
                best = index
            }
        }
        return best
    }
}

extension SignedDataVerifying {
    /// Verifiers that cannot check StoreKit 1 receipts refuse them: nothing unverified is ever recorded.
    public func verifyReceipt(_ base64: String, for project: Project) throws -> ReceiptFacts {
        throw VerificationFailure(code: .receiptVerificationFailed, reason: "this verifier cannot check receipts",
                                  step: "format", field: "receipt_data")
    }
}

extension PurchaseStore {
    /// Records each transaction with `recordTransaction`, one by one: for stores without database transactions
    /// (test fakes). Real stores implement this atomically.
    public func recordTransactions(
        _ transactions: [TransactionFacts], source: TransactionSource, userId: String?, deviceId: String?,
        project: Project, now: Date
    ) throws -> [RecordedTransaction] {
        try transactions.map {
            try recordTransaction($0, userId: userId, deviceId: deviceId, project: project, now: now)
        }
    }
}
