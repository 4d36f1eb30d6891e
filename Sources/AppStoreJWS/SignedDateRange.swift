/// The instants signed data may carry, shared by every date Apple signs (JWS milliseconds, receipt dates):
/// 1970-01-01T00:00:00.000Z through 9999-12-31T23:59:59.999Z.
///
/// A date Apple really signs lies in it. Outside, an Xcode-signed (self-signed) payload could carry ±Int64.max
/// milliseconds: beyond PostgreSQL's timestamptz (294276 AD, stored as infinity or refused) and beyond `Date`'s
/// exact integers. Such data is malformed: the verifier refuses it with a format error naming the field.
public enum SignedDateRange {
    /// Milliseconds since the Unix epoch, both ends included.
    public static let milliseconds: ClosedRange<Int64> = 0...253_402_300_799_999
    /// The range in words, for reasons.
    public static let text = "1970-01-01T00:00:00Z…9999-12-31T23:59:59.999Z"

    /// Whether `ms` (milliseconds since the Unix epoch) is an instant signed data may carry.
    public static func contains(_ ms: Int64) -> Bool { milliseconds.contains(ms) }
}
