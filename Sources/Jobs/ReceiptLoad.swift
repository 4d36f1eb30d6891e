/// What this instance's receipts did so far, sampled around a unit of derived work (a deriver batch, a dispatcher
/// round) to decide how long that work rests before the next unit: derived work is asynchronous by design (facts
/// first, side effects after, from the log), so during a burst it gives the receipts their cores back.
///
/// `rest(after:from:to:)`, by what the receipts did during the unit:
/// - none committed: no rest (full speed while the write path is idle);
/// - some committed, most without waiting for a batch slot (the write path has room): `busyFactor` times the unit's
///   duration, at most `busyMaxRest` (derived work keeps ≥ 1/4 of one connection's time);
/// - most waited for one of group commit's batch slots (saturated): `saturatedFactor` times it, at most
///   `saturatedMaxRest` (≥ 1/10 of one connection's time).
/// The rest is proportional to the work, so derived work never starves: under sustained saturation the log still
/// drains at ≥ 1/10 of one connection's speed, and at full speed as soon as the receipts stop.
public struct ReceiptLoad: Sendable, Equatable {
    /// This instance's receipt commits so far (`WebhookDeriver.wake`s).
    public var commits = 0
    /// Receipts submitted to group commit so far.
    public var receipts = 0
    /// Of `receipts`, those that waited for a batch slot.
    public var waited = 0

    /// All zero.
    public init() {}

    /// The rest's multiple of the unit's duration while receipts commit without waiting.
    static let busyFactor = 3.0
    /// The longest rest while receipts commit without waiting.
    static let busyMaxRest = 1.0
    /// The rest's multiple of the unit's duration while most receipts wait for a batch slot.
    static let saturatedFactor = 9.0
    /// The longest rest while saturated: bounds what yielding adds to an event's lag per unit.
    static let saturatedMaxRest = 2.0

    /// Seconds to rest after a unit of derived work that took `seconds`, between the samples `from` and `to`.
    static func rest(after seconds: Double, from: ReceiptLoad, to: ReceiptLoad) -> Double {
        guard to.commits != from.commits, seconds > 0 else { return 0 }
        let receipts = to.receipts &- from.receipts
        let waited = to.waited &- from.waited
        if receipts > 0, waited * 2 > receipts {
            return min(seconds * saturatedFactor, saturatedMaxRest)
        }
        return min(seconds * busyFactor, busyMaxRest)
    }
}
