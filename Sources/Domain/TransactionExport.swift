public import Foundation

/// One row of `GET /v1/admin/projects/:id/exports/transactions.csv` and `bouncer export transactions` (issue 26): a
/// stored transaction's signed facts, its money (the revenue facts' rules, `Money`), and the JWS it came from.
public struct ExportedTransaction: Sendable, Equatable {
    public var environment: String
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    public var type: String
    /// The signed `storefront` (ISO 3166-1 alpha-3), when present.
    public var storefront: String?
    public var purchaseDate: Date
    public var expiresDate: Date?
    /// The signed `revocationDate`, as Apple signed it (a prorated refund's too).
    public var revocationDate: Date?
    public var signedDate: Date
    /// The money facts, `nil` for a transaction without a price (or not yet rolled up by the deriver).
    public var money: Money?
    /// SHA-256 (lowercase hex) of the compact JWS the stored facts came from (schema/0066), `nil` when none is
    /// kept (a StoreKit 1 receipt's record, or a transaction stored before 0066).
    public var jwsSHA256: String?
    /// That JWS itself, when the export asked for it.
    public var jws: String?

    /// A transaction's money, each amount in milli-units; `reporting…` `nil` when no rate converts it.
    public struct Money: Sendable, Equatable {
        public var currency: String
        public var priceMilli: Int64
        public var commissionPercent: Int
        public var proceedsMilli: Int64
        /// The refunded share in milli-percent (100000: all of it).
        public var refundMilliPercent: Int
        /// The refunded part of the price.
        public var refundedMilli: Int64
        /// Proceeds less their refunded share.
        public var netMilli: Int64
        public var reportingCurrency: String
        /// Price and proceeds at the purchase day's rate.
        public var priceReporting: Int64?
        public var proceedsReporting: Int64?
        /// Proceeds at the purchase day's rate less their refunded share at the refund day's rate.
        public var netReporting: Int64?
        /// The operator's tax rate of the storefront on the purchase day (milli-percent; 0: none, proceeds before
        /// tax) and the tax it includes in the price (`Money.tax`).
        public var taxMilliPercent: Int
        public var taxMilli: Int64

        public init(currency: String, priceMilli: Int64, commissionPercent: Int, proceedsMilli: Int64,
                    refundMilliPercent: Int, refundedMilli: Int64, netMilli: Int64, reportingCurrency: String,
                    priceReporting: Int64?, proceedsReporting: Int64?, netReporting: Int64?, taxMilliPercent: Int = 0,
                    taxMilli: Int64 = 0) {
            self.taxMilliPercent = taxMilliPercent
            self.taxMilli = taxMilli
            self.currency = currency
            self.priceMilli = priceMilli
            self.commissionPercent = commissionPercent
            self.proceedsMilli = proceedsMilli
            self.refundMilliPercent = refundMilliPercent
            self.refundedMilli = refundedMilli
            self.netMilli = netMilli
            self.reportingCurrency = reportingCurrency
            self.priceReporting = priceReporting
            self.proceedsReporting = proceedsReporting
            self.netReporting = netReporting
        }
    }

    public init(environment: String, transactionId: String, originalTransactionId: String, productId: String,
                type: String, storefront: String?, purchaseDate: Date, expiresDate: Date?, revocationDate: Date?,
                signedDate: Date, money: Money?, jwsSHA256: String?, jws: String?) {
        self.environment = environment
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.type = type
        self.storefront = storefront
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
        self.signedDate = signedDate
        self.money = money
        self.jwsSHA256 = jwsSHA256
        self.jws = jws
    }
}

/// Which transactions an export holds: a project's, purchased in `[from, to)`; `includeJWS`: each one's JWS too.
public struct TransactionExportQuery: Sendable, Equatable {
    public var projectId: UUID
    public var from: Date
    public var to: Date
    public var includeJWS: Bool

    public init(projectId: UUID, from: Date, to: Date, includeJWS: Bool) {
        self.projectId = projectId
        self.from = from
        self.to = to
        self.includeJWS = includeJWS
    }
}

/// Reads an export page by page (keyset), so its size never sits in memory.
public protocol TransactionExportStore: Sendable {
    /// Calls `each` once per transaction of `query`, in (environment, transaction id) order, reading `pageSize`
    /// rows per statement; `each` throwing stops the export.
    func exportTransactions(_ query: TransactionExportQuery, pageSize: Int,
                            each: (ExportedTransaction) throws -> Void) throws
}
