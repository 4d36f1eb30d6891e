public import Foundation

/// Apple's `MassExtendRenewalDateRequest`: extend every eligible active subscriber of one product.
public struct MassRenewalExtensionRequest: Sendable, Equatable {
    /// Apple's `requestIdentifier`: ours, one per request; Apple deduplicates on it.
    public var requestIdentifier: UUID
    /// Days, 1…90.
    public var extendByDays: Int
    /// Apple's `extendReasonCode`: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    public var reasonCode: Int
    /// The auto-renewable subscription's product id.
    public var productId: String
    /// Apple's `storefrontCountryCodes` (ISO 3166-1 alpha-3); nil: every storefront.
    public var storefronts: [String]?
}

/// Apple's `MassExtendRenewalDateStatusResponse`: the counts appear once Apple completed the request.
public struct MassRenewalExtensionStatus: Sendable, Equatable {
    /// The request asked about.
    public var requestIdentifier: UUID
    /// Whether Apple finished it.
    public var complete: Bool
    /// When Apple finished it (complete only).
    public var completeDate: Date?
    /// Subscribers extended (complete only).
    public var succeededCount: Int?
    /// Subscribers Apple could not extend (complete only).
    public var failedCount: Int?

    /// Creates a value.
    public init(requestIdentifier: UUID, complete: Bool, completeDate: Date?, succeededCount: Int?, failedCount: Int?) {
        self.requestIdentifier = requestIdentifier
        self.complete = complete
        self.completeDate = completeDate
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}
