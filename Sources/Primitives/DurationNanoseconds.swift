/// `Duration` as the whole nanoseconds that clocks, deadlines and `poll`/`DispatchTime` take: one author for the
/// conversion (it was written three times, with two result types).
extension Duration {
    /// Whole nanoseconds, truncated toward zero, saturating at `Int64.min`/`Int64.max`.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (ns, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? Int64.min : Int64.max }
        let (sum, sumOverflow) = ns.addingReportingOverflow(attoseconds / 1_000_000_000)
        if sumOverflow { return ns < 0 ? Int64.min : Int64.max }
        return sum
    }

    /// Whole nanoseconds of a deadline offset: 0 for a negative duration, saturating at `Int64.max`.
    public var nonNegativeNanoseconds: UInt64 { UInt64(max(0, nanoseconds)) }
}
