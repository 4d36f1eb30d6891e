public import Foundation

/// A project's customers as a list (issue 26; README "Customers as a list"): the users bound to its purchases, each
/// with a status, entitlements, first seen, last purchase and net in the reporting currency (`Money`'s rules, as the
/// `revenue` chart's net), filtered, sorted and paged by an opaque keyset cursor.
public struct CustomerListQuery: Sendable, Equatable {
    /// What a page is sorted by; ties (and the cursor's position) by user id (bytewise).
    public enum SortKey: String, Sendable, CaseIterable {
        case firstSeen = "first_seen"
        case lastPurchase = "last_purchase"
        case net
    }

    /// A customer's status: `active` when any of its purchases (in scope) is active now; otherwise that of the one
    /// whose access ended last.
    public enum Status: String, Sendable, CaseIterable {
        case active, expired, revoked
    }

    /// Where a page starts: strictly after this customer in the query's order.
    public struct Position: Sendable, Equatable {
        /// The sort key's value: milliseconds since 1970 for a date (`Int64.min` for none), milli-units for net.
        public var value: Int64
        public var userId: String

        public init(value: Int64, userId: String) {
            self.value = value
            self.userId = userId
        }
    }

    public static let defaultLimit = 50
    public static let maximumLimit = 200

    public var projectId: UUID
    /// Only the purchases of this environment count (every column, every filter); nil: all.
    public var environment: StoreEnvironment? = nil
    public var status: Status? = nil
    /// Customers holding a purchase of this product.
    public var productId: String? = nil
    /// Customers with a transaction signed in this storefront (ISO 3166-1 alpha-3).
    public var country: String? = nil
    /// Customers first seen in `[firstSeenFrom, firstSeenTo)`.
    public var firstSeenFrom: Date? = nil
    public var firstSeenTo: Date? = nil
    /// Customers whose net (in the reporting currency) is at least this many milli-units.
    public var minNetMilli: Int64? = nil
    public var sort = SortKey.firstSeen
    public var descending = true
    public var after: Position? = nil
    public var limit = CustomerListQuery.defaultLimit

    /// Every customer of the project, first seen latest first, one page of `defaultLimit`; a front end sets the
    /// filters it was given.
    public init(projectId: UUID) {
        self.projectId = projectId
    }
}

/// One customer of the list.
public struct CustomerSummary: Sendable, Equatable {
    public var userId: String
    public var status: CustomerListQuery.Status
    /// Sorted: the entitlements of the active purchases' products (a Sandbox purchase withheld by the project's
    /// Sandbox access grants none) and of the user's active grants.
    public var entitlements: [String]
    /// When the user was first bound to one of the purchases (in scope).
    public var firstSeen: Date
    /// The latest purchase date of those purchases' transactions; nil when none is known.
    public var lastPurchase: Date?
    /// Σ proceeds − refunded proceeds of those purchases' transactions, converted into the reporting currency (each
    /// amount at its own day's rate).
    public var netMilli: Int64
    /// The amounts without a rate, by currency, as Apple signed them (never dropped, never mixed in).
    public var unconverted: [String: Int64]

    public init(userId: String, status: CustomerListQuery.Status, entitlements: [String], firstSeen: Date,
                lastPurchase: Date?, netMilli: Int64, unconverted: [String: Int64] = [:]) {
        self.userId = userId
        self.status = status
        self.entitlements = entitlements
        self.firstSeen = firstSeen
        self.lastPurchase = lastPurchase
        self.netMilli = netMilli
        self.unconverted = unconverted
    }
}

/// A page of customers, and the project's money settings their net is in.
public struct CustomerPage: Sendable, Equatable {
    public var settings: RevenueSettings
    /// At most the query's `limit`.
    public var customers: [CustomerSummary]
    /// Where the next page starts (the last customer's position); nil on the last page.
    public var next: CustomerListQuery.Position?

    public init(settings: RevenueSettings, customers: [CustomerSummary], next: CustomerListQuery.Position?) {
        self.settings = settings
        self.customers = customers
        self.next = next
    }
}

/// Reads the customer list (SQL in Storage).
public protocol CustomerListStore: Sendable {
    /// The customers of `query.projectId` matching its filters, in its order, after its position: at most
    /// `query.limit` of them, status evaluated at `now`.
    func customers(_ query: CustomerListQuery, now: Date) throws -> CustomerPage
}
