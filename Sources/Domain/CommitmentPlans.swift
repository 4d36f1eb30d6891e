public import Foundation

/// A subscription's commitment (a monthly plan with a 12-month commitment, App Store Server API 1.21), as the read
/// path loads it from the facts Apple signed: the latest transaction's `commitmentInfo` (TransactionCommitmentInfo)
/// and the renewal info's `commitmentInfo` (RenewalCommitmentInfo). `nil` members were absent from what Apple signed.
public struct CommitmentPlan: Sendable, Equatable {
    /// `billingPeriodNumber`: which billing period of the commitment the latest transaction pays for.
    public var billingPeriod: Int64?
    /// `totalBillingPeriods`: the periods the customer committed to.
    public var totalBillingPeriods: Int64?
    /// `commitmentExpiresDate`: when the commitment ends.
    public var expiresDate: Date?
    /// The renewal info's `commitmentAutoRenewStatus` (1: a new commitment starts when this one ends), `nil` before
    /// renewal info arrived.
    public var willRenew: Bool?

    /// Instants a commitment may name (1970 through 9999): anything else reads as absent.
    static let millisecondsRange: ClosedRange<Int64> = 0...253_402_300_799_999

    /// The commitment the stored facts describe, or `nil` for an ordinary plan (neither the transaction nor the
    /// renewal info carries commitment info). Texts are the JSON members as stored; anything that is not a decimal
    /// integer reads as absent.
    public static func from(billingPeriod: String?, totalBillingPeriods: String?, expiresMilliseconds: String?,
                            autoRenewStatus: String?) -> CommitmentPlan? {
        guard billingPeriod != nil || totalBillingPeriods != nil || expiresMilliseconds != nil || autoRenewStatus != nil
        else { return nil }
        return CommitmentPlan(
            billingPeriod: billingPeriod.flatMap { Int64($0) }, totalBillingPeriods: totalBillingPeriods.flatMap { Int64($0) },
            expiresDate: expiresMilliseconds.flatMap { Int64($0) }.flatMap { millisecondsRange.contains($0) ? $0 : nil }
                .map { Date(timeIntervalSince1970: Double($0) / 1000) },
            willRenew: autoRenewStatus.flatMap { Int64($0) }.map { $0 == 1 })
    }
}
