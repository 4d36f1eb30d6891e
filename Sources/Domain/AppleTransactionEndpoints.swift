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

/// Apple's `MassExtendRenewalDateStatusResponse` of the request asked about: the counts appear once Apple completed
/// it. What a recorded request (`MassRenewalExtensionRecord.status`) keeps of Apple's latest answer.
public struct MassRenewalExtensionStatus: Sendable, Equatable {
    /// Whether Apple finished it.
    public var complete: Bool
    /// When Apple finished it (complete only).
    public var completeDate: Date?
    /// Subscribers extended (complete only).
    public var succeededCount: Int?
    /// Subscribers Apple could not extend (complete only).
    public var failedCount: Int?

    /// Creates a value.
    public init(complete: Bool, completeDate: Date?, succeededCount: Int?, failedCount: Int?) {
        self.complete = complete
        self.completeDate = completeDate
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }

    /// Not finished, no counts yet: a request Apple has not completed (or not been asked about).
    public static let pending = MassRenewalExtensionStatus(complete: false, completeDate: nil, succeededCount: nil,
                                                           failedCount: nil)
}
