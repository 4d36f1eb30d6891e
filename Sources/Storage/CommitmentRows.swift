import Domain
import JSON
import Postgres

/// The billing plan and commitment of a purchase, read from the facts Apple signed as they are stored: the latest
/// transaction's payload (`t`: `billingPlanType`, `commitmentInfo`) and the purchase's renewal payload (`p`:
/// `commitmentInfo.commitmentAutoRenewStatus`). Read, not copied into columns: the receipt's statement writes
/// nothing more for them (bench/guard).
enum CommitmentRows {
    /// One column, NULL for an ordinary plan (the common case costs one NULL), else the JSON array of the five
    /// members as text (`[plan, period, periods, expires ms, auto-renew status]`, each a string or null).
    static let columns = """
        CASE WHEN t.payload ? 'billingPlanType' OR t.payload ? 'commitmentInfo'
                  OR p.renewal_payload ? 'commitmentInfo' THEN jsonb_build_array(
            t.payload ->> 'billingPlanType', t.payload #>> '{commitmentInfo,billingPeriodNumber}',
            t.payload #>> '{commitmentInfo,totalBillingPeriods}', t.payload #>> '{commitmentInfo,commitmentExpiresDate}',
            p.renewal_payload #>> '{commitmentInfo,commitmentAutoRenewStatus}')::text END AS commitment
        """

    /// How many columns `columns` adds (the union's other branches fill them with NULLs).
    static let count = 1

    /// Sets `state`'s billing plan and commitment from a row that has `columns`.
    static func load(_ row: Row, into state: inout PurchaseState) throws {
        guard let text = try row.decode("commitment", as: String?.self),
              let members = try? JSONParser.parse(Array(text.utf8)).arrayValue, members.count == 5 else { return }
        state.billingPlan = members[0].stringValue
        state.commitment = CommitmentPlan.from(
            billingPeriod: members[1].stringValue, totalBillingPeriods: members[2].stringValue,
            expiresMilliseconds: members[3].stringValue, autoRenewStatus: members[4].stringValue)
    }
}
