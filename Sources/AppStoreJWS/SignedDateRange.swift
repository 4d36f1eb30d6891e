/// The instants signed data may carry, shared by every date Apple signs (JWS milliseconds, receipt dates):
/// 0000-12-30T00:00:00.000Z (`Date.distantPast`) through 9999-12-31T23:59:59.999Z (Xcode signs `distantPast`, year 1, as an app
/// transaction's original purchase date; certificates and receipts' four-digit years end at 9999).
///
/// A date Apple really signs lies in it. Outside, an Xcode-signed (self-signed) payload could carry ±Int64.max
/// milliseconds: beyond PostgreSQL's timestamptz (294276 AD, stored as infinity or refused) and beyond `Date`'s
/// exact integers. Such data is malformed: the verifier refuses it with a format error naming the field.
public enum SignedDateRange {
    /// Milliseconds since the Unix epoch, both ends included.
    public static let milliseconds: ClosedRange<Int64> = -62_135_769_600_000...253_402_300_799_999
    /// The range in words, for reasons.
    public static let text = "0000-12-30T00:00:00Z…9999-12-31T23:59:59.999Z"

    /// Whether `ms` (milliseconds since the Unix epoch) is an instant signed data may carry.
    public static func contains(_ ms: Int64) -> Bool { milliseconds.contains(ms) }
}
