public import Foundation
import Primitives

/// Counts each account's usage in memory and flushes it to the `UsageStore` (issue 24): a public request adds no
/// statement, only a lock of one of 16 shards and a dictionary update; `flush` writes every count in one statement
/// (`count = count + delta`), run every few seconds by a job, before a usage read, and at shutdown.
///
/// The monthly quota is enforced against the stored count of the month (as of this process's last flush, which also
/// reloads every account's quotas) plus this process's counts not stored yet, under the account's shard lock, so
/// one process is exact; with several, each sees the others' counts after its next flush. Counts lost at a crash:
/// at most one flush interval's.
public final class UsageMeter: Sendable {
    /// An account's counters and quota state in this process.
    struct Slot {
        /// The month `counts`, `stored` and `inFlight` are of.
        var month: Int64
        /// Counted since the last flush took them (by `UsageKind.rawValue`).
        var counts = [Int64](repeating: 0, count: UsageKind.allCases.count)
        /// Counts of months that ended before a flush took them.
        var earlier: [(month: Int64, counts: [Int64])] = []
        /// nil: unlimited.
        var quotas: AccountQuotas?
        /// Receipts of `month` stored, as the last flush read them.
        var stored: Int64 = 0
        /// Receipts of `month` a flush took and is writing.
        var inFlight: Int64 = 0

        mutating func roll(to month: Int64) {
            guard month != self.month else { return }
            if counts.contains(where: { $0 != 0 }) { earlier.append((self.month, counts)) }
            counts = [Int64](repeating: 0, count: UsageKind.allCases.count)
            self.month = month
            stored = 0
            inFlight = 0
        }

        var isIdle: Bool { quotas == nil && earlier.isEmpty && inFlight == 0 && !counts.contains(where: { $0 != 0 }) }
    }

    /// What the quotas say about one more public request of an account.
    public enum Admission: Sendable, Equatable {
        /// No quota stops it (the rate, if any, is the caller's to check with `requestsPerSecond`).
        case open(requestsPerSecond: Int64?)
        /// The month's receipts are used up.
        case monthlyQuotaReached(limit: Int64)
    }

    private static let shardCount = 16
    private let shards: [Locked<[UUID: Slot]>]
    /// Counts of kinds whose counter knew only the project (the store resolves its account when it writes).
    private let byProject = Locked<[UUID: [Int64: [Int64]]]>([:])
    /// One flush at a time (the job, a usage read, the shutdown).
    private let flushing = Locked<Void>(())
    private let store: any UsageStore

    /// A meter writing to `store`.
    public init(store: any UsageStore) {
        self.store = store
        shards = (0..<Self.shardCount).map { _ in Locked([:]) }
    }

    private func shard(_ account: UUID) -> Locked<[UUID: Slot]> {
        // The last byte of a random (v4) UUID is random: a cheap, even spread. Masked, so always in range.
        shards[Int(account.uuid.15) & (Self.shardCount - 1)]
    }

    /// Counts one `kind` for `account` at `now`.
    public func count(_ kind: UsageKind, account: UUID, at now: Date) {
        let month = UsageMonth(containing: now).ordinal
        shard(account).withLock { slots in
            slots[account, default: Slot(month: month)].add(kind, month: month)
        }
    }

    /// Counts one `kind` for the account of `project` at `now` (where only the project is known: jobs, Apple calls).
    public func count(_ kind: UsageKind, project: UUID, at now: Date) {
        let month = UsageMonth(containing: now).ordinal
        byProject.withLock { counts in
            var months = counts[project, default: [:]]
            var row = months[month, default: [Int64](repeating: 0, count: UsageKind.allCases.count)]
            row[kind.rawValue] &+= 1
            months[month] = row
            counts[project] = months
        }
    }

    /// What the account's quotas say about one more public request at `now`.
    public func admission(account: UUID, at now: Date) -> Admission {
        let month = UsageMonth(containing: now).ordinal
        return shard(account).withLock { slots in
            guard var slot = slots[account], let quotas = slot.quotas else { return .open(requestsPerSecond: nil) }
            if slot.month != month {
                slot.roll(to: month)
                slots[account] = slot
            }
            if let limit = quotas.receiptsPerMonth,
               slot.stored &+ slot.inFlight &+ slot.counts[UsageKind.receipts.rawValue] >= limit {
                return .monthlyQuotaReached(limit: limit)
            }
            return .open(requestsPerSecond: quotas.requestsPerSecond)
        }
    }

    /// Writes every count to the store in one statement, then reloads every account's quotas and stored receipts of
    /// the month of `now`. On a failure the counts are kept for the next flush.
    public func flush(now: Date) throws {
        try flushing.withLock { _ in
            let month = UsageMonth(containing: now)
            var deltas: [UsageDelta] = []
            var taken: [UUID: Int64] = [:]
            for shard in shards {
                shard.withLock { slots in
                    for (account, var slot) in slots {
                        slot.roll(to: month.ordinal)
                        for (old, counts) in slot.earlier {
                            deltas.append(UsageDelta(owner: .account(account), month: UsageMonth(ordinal: old), counts: counts))
                        }
                        if slot.counts.contains(where: { $0 != 0 }) {
                            deltas.append(UsageDelta(owner: .account(account), month: month, counts: slot.counts))
                            let receipts = slot.counts[UsageKind.receipts.rawValue]
                            slot.inFlight &+= receipts
                            taken[account] = receipts
                        }
                        slot.earlier = []
                        slot.counts = [Int64](repeating: 0, count: UsageKind.allCases.count)
                        slots[account] = slot.isIdle ? nil : slot
                    }
                }
            }
            let projects = byProject.withLock { counts in
                defer { counts = [:] }
                return counts
            }
            for (project, months) in projects {
                for (old, counts) in months {
                    deltas.append(UsageDelta(owner: .project(project), month: UsageMonth(ordinal: old), counts: counts))
                }
            }
            do {
                if !deltas.isEmpty { try store.add(deltas) }
            } catch {
                restore(deltas, taken: taken, month: month.ordinal)
                throw error
            }
            let limited = try store.limitedAccounts(month: month)
            var reloaded: [UUID: (AccountQuotas, Int64)] = [:]
            for row in limited { reloaded[row.accountId] = (row.quotas, row.receipts) }
            for shard in shards {
                shard.withLock { slots in
                    for (account, var slot) in slots where reloaded[account] == nil {
                        slot.quotas = nil
                        slot.inFlight = 0
                        slots[account] = slot.isIdle ? nil : slot
                    }
                }
            }
            for (account, (quotas, receipts)) in reloaded {
                shard(account).withLock { slots in
                    var slot = slots[account, default: Slot(month: month.ordinal)]
                    slot.roll(to: month.ordinal)
                    slot.quotas = quotas
                    slot.stored = receipts
                    slot.inFlight = 0
                    slots[account] = slot
                }
            }
        }
    }

    /// Puts counts a failed flush took back.
    private func restore(_ deltas: [UsageDelta], taken: [UUID: Int64], month: Int64) {
        for delta in deltas {
            switch delta.owner {
            case .account(let account):
                shard(account).withLock { slots in
                    var slot = slots[account, default: Slot(month: month)]
                    if delta.month.ordinal == slot.month {
                        for (i, n) in delta.counts.enumerated() where i < slot.counts.count { slot.counts[i] &+= n }
                        if delta.month.ordinal == month { slot.inFlight &-= taken[account] ?? 0 }
                    } else {
                        slot.earlier.append((delta.month.ordinal, delta.counts))
                    }
                    slots[account] = slot
                }
            case .project(let project):
                byProject.withLock { counts in
                    var months = counts[project, default: [:]]
                    var row = months[delta.month.ordinal, default: [Int64](repeating: 0, count: delta.counts.count)]
                    for (i, n) in delta.counts.enumerated() where i < row.count { row[i] &+= n }
                    months[delta.month.ordinal] = row
                    counts[project] = months
                }
            }
        }
    }

    /// The account's usage of `month`: this process's counts are flushed first, so the answer includes them.
    public func usage(accountId: UUID, month: UsageMonth, now: Date) throws -> AccountUsage? {
        try flush(now: now)
        return try store.usage(accountId: accountId, month: month)
    }

    /// The account's quotas; nil when there is no such account.
    public func quotas(accountId: UUID) throws -> AccountQuotas? {
        try store.quotas(accountId: accountId)
    }

    /// Replaces the account's quotas, in force in this process at once (in the others after their next flush).
    public func setQuotas(accountId: UUID, _ quotas: AccountQuotas, now: Date) throws -> AccountQuotas {
        let saved = try store.setQuotas(accountId: accountId, quotas, now: now)
        try flush(now: now)
        return saved
    }
}

extension UsageMeter.Slot {
    mutating func add(_ kind: UsageKind, month: Int64) {
        roll(to: month)
        counts[kind.rawValue] &+= 1
    }
}
