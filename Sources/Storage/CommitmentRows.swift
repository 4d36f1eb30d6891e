import Domain
import Postgres

/// The billing plan and commitment of a purchase, read from the facts Apple signed as they are stored: the latest
/// transaction's payload (`t`: `billingPlanType`, `commitmentInfo`) and the purchase's renewal payload (`p`:
/// `renewalBillingPlanType`, `commitmentInfo.commitmentAutoRenewStatus`). Read, not copied into columns: the
/// receipt's statement writes nothing more for them (bench/guard).
enum CommitmentRows {
    /// The columns, as text (a member of another JSON type reads as absent in `CommitmentPlan.from`).
    static let columns = """
        t.payload ->> 'billingPlanType' AS billing_plan,
        t.payload #>> '{commitmentInfo,billingPeriodNumber}' AS commitment_period,
        t.payload #>> '{commitmentInfo,totalBillingPeriods}' AS commitment_periods,
        t.payload #>> '{commitmentInfo,commitmentExpiresDate}' AS commitment_expires_ms,
        p.renewal_payload #>> '{commitmentInfo,commitmentAutoRenewStatus}' AS commitment_auto_renew
        """

    /// How many columns `columns` adds (the union's other branches fill them with NULLs).
    static let count = 5

    /// Sets `state`'s billing plan and commitment from a row that has `columns`.
    static func load(_ row: Row, into state: inout PurchaseState) throws {
        state.billingPlan = try row.decode("billing_plan", as: String?.self)
        state.commitment = CommitmentPlan.from(
            billingPeriod: try row.decode("commitment_period", as: String?.self),
            totalBillingPeriods: try row.decode("commitment_periods", as: String?.self),
            expiresMilliseconds: try row.decode("commitment_expires_ms", as: String?.self),
            autoRenewStatus: try row.decode("commitment_auto_renew", as: String?.self))
    }
}
