public import Foundation

/// Reconciliation's storage: runs, their changes, the catch-up cursors, and applying what Apple said through the
/// same record functions (and exactly-once notification path) as receipts and the webhook.
///
/// Throws `DomainError` (`.serviceUnavailable`, `.transactionConflict`, …).
public protocol ReconciliationStore: Sendable {
    /// Runs `body` while holding the project's reconciliation lock (one holder across every instance sharing the
    /// database); `nil` without running it when another run holds it.
    func withProjectLock<T>(projectId: UUID, _ body: () throws -> T) throws -> T?
    /// The projects that have App Store credentials, oldest first.
    func projectsWithCredentials() throws -> [UUID]
    /// When the project's last run started by `trigger` started.
    func lastRunStart(projectId: UUID, trigger: ReconcileTrigger) throws -> Date?
    /// Records a new run (`running`) and returns its id.
    func startRun(projectId: UUID, trigger: ReconcileTrigger, instance: String, at: Date) throws -> Int64
    /// Stores the run's counts, outcome and end.
    func finishRun(_ report: ReconcileReport) throws
    /// Auto-renewable purchases in `environments` not revoked-and-done nor long expired (period or grace ending
    /// after `expiredSince`), checked longest ago first: at most `limit`, and how many there are in all.
    func subscriptionsToCheck(projectId: UUID, environments: [StoreEnvironment], expiredSince: Date, limit: Int)
        throws -> (candidates: [ReconcileCandidate], total: Int)
    /// Non-consumable and non-renewing purchases in `environments` not yet revoked, checked longest ago first.
    func purchasesToCheck(projectId: UUID, environments: [StoreEnvironment], limit: Int) throws
        -> (candidates: [ReconcileCandidate], total: Int)
    /// Notes that Apple was asked about the purchase at `at`.
    func markChecked(projectId: UUID, environment: StoreEnvironment, originalTransactionId: String, at: Date) throws
    /// Applies a verified transaction (and renewal info) as `bouncer_record_transaction`/`_renewal` do for any
    /// source, with source `reconcile`, no user bound; records and returns the change when the purchase changed,
    /// and whether the transaction was first recorded as refunded by this call.
    func applyChecked(transaction: TransactionFacts, renewal: RenewalFacts?, via: ReconcileVia, project: Project,
                      runId: Int64, now: Date) throws -> ReconcileApplied
    /// The project's customers in `environments` (purchases grouped by Apple account), read longest ago first.
    func refundHistoryCustomers(projectId: UUID, environments: [StoreEnvironment], limit: Int) throws
        -> [RefundHistoryCustomer]
    /// Notes that the customer's refund history was read up to `revision` (`nil`: read it from the start next time).
    func setRefundRevision(projectId: UUID, customer: RefundHistoryCustomer, revision: String?, at: Date) throws
    /// Records a verified notification from history exactly as the webhook would (deduplicated by
    /// `notificationUUID`), with source `reconcile`; records and returns the change when its purchase changed.
    func applyRecovered(_ notification: NotificationFacts, project: Project, runId: Int64, now: Date) throws
        -> (outcome: NotificationOutcome, change: ReconcileChange?)
    /// Where the next history pass of the environment starts (the end of the last complete one).
    func catchUpCursor(projectId: UUID, environment: StoreEnvironment) throws -> Date?
    /// Moves the cursor (only after a complete pass).
    func setCatchUpCursor(projectId: UUID, environment: StoreEnvironment, to: Date, now: Date) throws
    /// The project's runs, newest first, each with at most `changesPerRun` of its changes.
    func runs(projectId: UUID, limit: Int, changesPerRun: Int) throws -> [ReconcileReport]
}

/// Reconciliation and notification catch-up, shared by the scheduler, the admin API and the CLI.
///
/// For one project with credentials, under the project's lock (one run at a time across instances):
/// 1. each customer's Get Refund History from the revision the last read reached (at most a quarter of the
///    budget), every refunded transaction recorded: a refund of a consumable or of a past renewal is found too, and
///    a refunded one-time purchase needs no check of its own;
/// 2. every known subscription (`ReconciliationStore.subscriptionsToCheck`) from Get All Subscription Statuses;
/// 3. refunds and revocations of other purchases (non-consumable, non-renewing) from Get Transaction Info;
/// 4. Notification History since the last complete pass, each signedPayload recorded as if delivered.
/// Everything Apple returns is verified first (`SignedDataVerifying`) and applied through the same rules as any
/// other source. A failed call is never a verdict: a 404 for a known transaction is a problem, not a refund.
/// Apple unavailable, Apple refusing our credentials, or the database failing stops the run (`failed`) and
/// throws, so an on-demand caller gets a retryable error, never a partial answer presented as the truth.
public struct Reconciliation: Sendable {
    private let projects: any ProjectStore
    private let credentials: CredentialAdministration
    private let store: any ReconciliationStore
    private let appStore: any AppleServerAPI
    private let verifier: any SignedDataVerifying
    private let settings: ReconcileSettings
    private let instance: String
    private let now: @Sendable () -> Date
    private let sleep: @Sendable (TimeInterval) -> Void

    /// The use case. `instance` names this process in `reconcile_runs`; `sleep` paces calls to Apple.
    public init(
        projects: any ProjectStore, credentials: CredentialAdministration, store: any ReconciliationStore,
        appStore: any AppleServerAPI, verifier: any SignedDataVerifying, settings: ReconcileSettings = .init(),
        instance: String, now: @escaping @Sendable () -> Date,
        sleep: @escaping @Sendable (TimeInterval) -> Void
    ) {
        self.projects = projects
        self.credentials = credentials
        self.store = store
        self.appStore = appStore
        self.verifier = verifier
        self.settings = settings
        self.instance = instance
        self.now = now
        self.sleep = sleep
    }

    /// Reconciles one project now.
    ///
    /// - Throws: `DomainError` `.projectNotFound`, `.appStoreCredentialsMissing`, `.reconcileInProgress` (another
    ///   run holds the project), `.serviceUnavailable`, the credential errors; `AppStoreAPIError` (`.unavailable`,
    ///   `.unauthorized`, `.invalidRequest`) when Apple stopped the run.
    public func reconcile(projectId: UUID, trigger: ReconcileTrigger, progress: (String) -> Void = { _ in }) throws
        -> ReconcileReport
    {
        let project = try projects.existingProject(id: projectId)
        let opened: UnsealedAppStoreCredentials
        do {
            opened = try credentials.unsealedCredentials(projectId: projectId)
        } catch let error as DomainError where error.code == .appStoreCredentialsNotFound {
            throw DomainError(.appStoreCredentialsMissing,
                              "Project \(projectId.lowercasedText) has no App Store credentials.")
        }
        let apiCredentials = AppStoreAPICredentials(credentials: opened, bundleId: project.bundleId, projectId: project.id)
        let result = try store.withProjectLock(projectId: projectId) {
            try run(project: project, credentials: apiCredentials, trigger: trigger, progress: progress)
        }
        guard let result else {
            throw DomainError(.reconcileInProgress,
                              "A reconciliation of project \(projectId.lowercasedText) is already running.")
        }
        return result
    }

    /// One scheduler tick: every project with credentials whose last scheduled run started at least `interval`
    /// ago (checked under the project's lock, so across instances each interval runs once) is reconciled. A
    /// project that fails is reported through `log` (one line, no secrets) and the others go on.
    /// `isCancelled` (the process is shutting down) ends a run early, recorded as `partial`.
    public func runScheduled(interval: TimeInterval, log: (String) -> Void,
                             isCancelled: @escaping () -> Bool = { false }) throws
        -> [ReconcileReport]
    {
        var reports: [ReconcileReport] = []
        for projectId in try store.projectsWithCredentials() {
            if isCancelled() { break }
            do {
                guard let project = try projects.project(id: projectId) else { continue }
                let opened = try credentials.unsealedCredentials(projectId: projectId)
                let apiCredentials = AppStoreAPICredentials(credentials: opened, bundleId: project.bundleId, projectId: project.id)
                let report = try store.withProjectLock(projectId: projectId) { () throws -> ReconcileReport? in
                    if let last = try store.lastRunStart(projectId: projectId, trigger: .schedule),
                       now().timeIntervalSince(last) < interval {
                        return nil
                    }
                    return try run(project: project, credentials: apiCredentials, trigger: .schedule, progress: { _ in },
                                   isCancelled: isCancelled)
                }
                if let report = report ?? nil {
                    reports.append(report)
                    log("reconciled project \(projectId.lowercasedText): run \(report.runId) "
                        + "\(report.outcome.rawValue), checked \(report.checked), changed \(report.changed), "
                        + "notifications applied \(report.notificationsApplied), errors \(report.errorCount)")
                }
            } catch let error as DomainError where error.code == .serviceUnavailable {
                throw error
            } catch {
                log("reconcile project \(projectId.lowercasedText) failed: \(error)")
            }
        }
        return reports
    }

    /// The project's runs, newest first, with their changes.
    public func runs(projectId: UUID, limit: Int) throws -> [ReconcileReport] {
        _ = try projects.existingProject(id: projectId)
        return try store.runs(projectId: projectId, limit: max(1, min(limit, 100)), changesPerRun: 100)
    }

    // MARK: - One run

    /// Errors that stop a run: Apple down or refusing us, or our database failing.
    static func stopsRun(_ error: any Error) -> Bool {
        if let error = error as? AppStoreAPIError {
            return error.kind == .unavailable || error.kind == .unauthorized || error.kind == .invalidRequest
        }
        if let error = error as? DomainError { return error.code == .serviceUnavailable }
        return !(error is VerificationFailure)
    }

    private func run(project: Project, credentials: AppStoreAPICredentials, trigger: ReconcileTrigger,
                     progress: (String) -> Void, isCancelled: @escaping () -> Bool = { false }) throws -> ReconcileReport {
        let startedAt = now()
        let runId = try store.startRun(projectId: project.id, trigger: trigger, instance: instance, at: startedAt)
        var state = RunState(report: ReconcileReport(runId: runId, projectId: project.id, trigger: trigger,
                                                     startedAt: startedAt),
                             settings: settings, isCancelled: isCancelled)
        let environments = [StoreEnvironment.production, .sandbox].filter { project.environments.contains($0) }
        progress("run \(runId) of project \(project.id.lowercasedText) (\(environments.map(\.rawValue).joined(separator: ", ")))")
        do {
            try readRefundHistory(project, environments, credentials, &state, progress)
            try checkPurchases(project, environments, credentials, &state, progress)
            for environment in environments {
                try catchUp(project, environment, credentials, startedAt, &state, progress)
            }
            state.report.outcome = state.report.errorCount == 0 && state.report.skipped == 0 ? .completed : .partial
        } catch {
            state.report.outcome = .failed
            state.problem(ReconcileProblem(stage: state.stage, environment: state.environment,
                                           message: "run stopped: \(error)"))
            state.report.finishedAt = now()
            try? store.finishRun(state.report)
            progress("run \(runId) failed: \(error)")
            throw error
        }
        state.report.finishedAt = now()
        try store.finishRun(state.report)
        progress("run \(runId) \(state.report.outcome.rawValue): checked \(state.report.checked), changed "
            + "\(state.report.changed), notifications applied \(state.report.notificationsApplied), skipped "
            + "\(state.report.skipped), errors \(state.report.errorCount)")
        return state.report
    }

    /// What a run has done so far, and its budget.
    private struct RunState {
        var report: ReconcileReport
        let settings: ReconcileSettings
        let isCancelled: () -> Bool
        var cancelled = false
        var lastCall: Date?
        var stage = "subscription_status"
        var environment: StoreEnvironment?

        mutating func problem(_ problem: ReconcileProblem) {
            report.errorCount += 1
            if report.errors.count < settings.maxProblemsKept { report.errors.append(problem) }
        }

        var callsLeft: Int { max(0, settings.maxCallsPerRun - report.appleCalls) }
    }

    /// Waits for the per-second budget, then counts the call; `false` when the run's budget is spent or the run
    /// is cancelled (shutdown).
    private func takeCall(_ state: inout RunState) -> Bool {
        guard state.callsLeft > 0, !state.cancelled else { return false }
        if state.isCancelled() {
            state.cancelled = true
            state.problem(ReconcileProblem(stage: state.stage, message: "stopped early: the process is shutting down"))
            return false
        }
        if let last = state.lastCall, settings.callsPerSecond > 0 {
            let wait = 1 / settings.callsPerSecond - now().timeIntervalSince(last)
            if wait > 0 { sleep(min(wait, 60)) }
        }
        state.lastCall = now()
        state.report.appleCalls += 1
        return true
    }

    private func checkPurchases(_ project: Project, _ environments: [StoreEnvironment],
                                _ credentials: AppStoreAPICredentials, _ state: inout RunState,
                                _ progress: (String) -> Void) throws {
        let at = now()
        let budget = max(0, settings.maxCallsPerRun - settings.historyReserve * environments.count)
        let subscriptions = try store.subscriptionsToCheck(
            projectId: project.id, environments: environments, expiredSince: at.addingTimeInterval(-settings.expiredWindow),
            limit: budget)
        let others = try store.purchasesToCheck(
            projectId: project.id, environments: environments,
            limit: max(0, budget - subscriptions.candidates.count))
        progress("\(subscriptions.total) subscriptions and \(others.total) other purchases to check")
        state.report.skipped = subscriptions.total - subscriptions.candidates.count + others.total - others.candidates.count
        // Get All Subscription Statuses answers for every subscription of the customer: what it covered is not
        // asked again in this run.
        var covered = Set<String>()
        var unchecked = 0
        for candidate in subscriptions.candidates + others.candidates {
            let key = candidate.environment.rawValue + "/" + candidate.originalTransactionId
            if covered.contains(key) { continue }
            guard state.report.appleCalls < budget, takeCall(&state) else {
                unchecked += 1
                continue
            }
            let isSubscription = candidate.type == .autoRenewable
            state.stage = isSubscription ? ReconcileVia.subscriptionStatus.rawValue : ReconcileVia.transactionInfo.rawValue
            state.environment = candidate.environment
            do {
                if isSubscription {
                    let statuses = try appStore.subscriptionStatuses(
                        transactionId: candidate.originalTransactionId, environment: candidate.environment,
                        credentials: credentials)
                    state.report.checked += 1
                    for status in statuses {
                        covered.insert(candidate.environment.rawValue + "/" + status.originalTransactionId)
                        try apply(status, project, candidate, &state, progress)
                    }
                } else {
                    let jws = try appStore.transactionInfo(
                        transactionId: candidate.latestTransactionId, environment: candidate.environment,
                        credentials: credentials)
                    state.report.checked += 1
                    try applyTransaction(jws, renewal: nil, via: .transactionInfo, project, &state, progress)
                }
                try store.markChecked(projectId: project.id, environment: candidate.environment,
                                      originalTransactionId: candidate.originalTransactionId, at: now())
            } catch let error where !Self.stopsRun(error) {
                // A 404, a rejected request or an unreadable answer for one purchase: noted, never a verdict.
                state.problem(ReconcileProblem(stage: state.stage, environment: candidate.environment,
                                               originalTransactionId: candidate.originalTransactionId,
                                               message: "\(error)"))
                progress("\(candidate.environment) \(candidate.originalTransactionId): \(error)")
                try store.markChecked(projectId: project.id, environment: candidate.environment,
                                      originalTransactionId: candidate.originalTransactionId, at: now())
            }
        }
        state.report.skipped += unchecked
        if state.report.skipped > 0 {
            state.problem(ReconcileProblem(
                stage: "budget",
                message: "\(state.report.skipped) purchases left for the next run (BOUNCER_RECONCILE_MAX_CALLS "
                    + "\(settings.maxCallsPerRun) per run)"))
        }
    }

    private func apply(_ status: SignedSubscriptionStatus, _ project: Project, _ candidate: ReconcileCandidate,
                       _ state: inout RunState, _ progress: (String) -> Void) throws {
        var renewal: RenewalFacts?
        do {
            renewal = try verifier.verifyRenewalInfo(status.signedRenewalInfo, for: project)
        } catch let failure as VerificationFailure {
            state.problem(ReconcileProblem(stage: state.stage, environment: candidate.environment,
                                           originalTransactionId: status.originalTransactionId,
                                           message: "renewal info rejected: \(failure)"))
        }
        try applyTransaction(status.signedTransactionInfo, renewal: renewal, via: .subscriptionStatus, project,
                             &state, progress)
    }

    private func applyTransaction(_ jws: String, renewal: RenewalFacts?, via: ReconcileVia, _ project: Project,
                                  _ state: inout RunState,
                                  _ progress: (String) -> Void) throws {
        let transaction = try verifier.verifyTransaction(jws, for: project)
        let applied = try store.applyChecked(transaction: transaction, renewal: renewal, via: via, project: project,
                                             runId: state.report.runId, now: now())
        if applied.newRefund {
            state.report.refundsFound += 1
            progress("\(transaction.environment) \(transaction.transactionId): refund found (\(via.rawValue))")
        }
        if let change = applied.change {
            state.report.changed += 1
            progress("\(change.environment) \(change.originalTransactionId): "
                + "\(change.beforeStatus?.rawValue ?? "unknown") -> \(change.afterStatus.rawValue) (\(via.rawValue))")
        }
    }

    /// Notification History of one environment since the last complete pass; the cursor moves only when every
    /// page was read and no payload failed for a reason that may pass (`VerificationFailure.isRetryable`).
    private func catchUp(_ project: Project, _ environment: StoreEnvironment, _ credentials: AppStoreAPICredentials,
                         _ end: Date, _ state: inout RunState, _ progress: (String) -> Void) throws {
        state.stage = ReconcileVia.notificationHistory.rawValue
        state.environment = environment
        let earliest = end.addingTimeInterval(-ReconcileSettings.historyLookback)
        let cursor = try store.catchUpCursor(projectId: project.id, environment: environment)
        let start = max(earliest, cursor.map { $0.addingTimeInterval(-settings.historyOverlap) } ?? earliest)
        guard start < end else { return }
        var token: String?
        var complete = true
        var pages = 0
        while true {
            guard takeCall(&state) else {
                complete = false
                state.problem(ReconcileProblem(
                    stage: state.stage, environment: environment,
                    message: "budget spent after \(pages) history pages; the next run reads them again"))
                break
            }
            let fetched = Result { () throws -> NotificationHistoryPage in
                try appStore.notificationHistory(from: start, to: end, paginationToken: token,
                                                 environment: environment, credentials: credentials)
            }
            guard case .success(let page) = fetched else {
                if case .failure(let error) = fetched {
                    if Self.stopsRun(error) { throw error }
                    state.problem(ReconcileProblem(stage: state.stage, environment: environment, message: "\(error)"))
                }
                complete = false
                break
            }
            pages += 1
            for payload in page.signedItems {
                do {
                    let facts = try verifier.verifyNotification(payload, for: project)
                    let (outcome, change) = try store.applyRecovered(facts, project: project, runId: state.report.runId,
                                                                     now: now())
                    if outcome == .processed {
                        state.report.notificationsApplied += 1
                        progress("\(environment) recovered \(facts.type) \(facts.notificationUUID.lowercasedText)")
                    }
                    if let change {
                        state.report.changed += 1
                        progress("\(change.environment) \(change.originalTransactionId): "
                            + "\(change.beforeStatus?.rawValue ?? "unknown") -> \(change.afterStatus.rawValue) (history)")
                    }
                } catch let error where !Self.stopsRun(error) {
                    if (error as? VerificationFailure)?.isRetryable == true { complete = false }
                    state.problem(ReconcileProblem(stage: state.stage, environment: environment,
                                                   message: "history payload not applied: \(error)"))
                }
            }
            guard page.hasMore else { break }
            guard let next = page.next, next != token else {
                complete = false
                state.problem(ReconcileProblem(stage: state.stage, environment: environment,
                                               message: "Apple said more pages follow but gave no new paginationToken"))
                break
            }
            token = next
        }
        if complete {
            try store.setCatchUpCursor(projectId: project.id, environment: environment, to: end, now: now())
        }
        progress("\(environment) history: \(pages) pages\(complete ? "" : " (incomplete: the cursor stays)")")
    }

    /// Get Refund History of the project's customers, each from the revision its last read reached (Apple: store
    /// the last page's revision and ask from it for newer refunds), at most `refundPagesPerCustomer` pages each and
    /// a quarter of the calls the purchase checks may use in all. Customers not reached wait for the next run
    /// (read longest ago first).
    private func readRefundHistory(_ project: Project, _ environments: [StoreEnvironment],
                                   _ credentials: AppStoreAPICredentials, _ state: inout RunState,
                                   _ progress: (String) -> Void) throws {
        state.stage = ReconcileVia.refundHistory.rawValue
        let budget = max(0, settings.maxCallsPerRun - settings.historyReserve * environments.count) / 4
        guard budget > 0 else { return }
        let customers = try store.refundHistoryCustomers(projectId: project.id, environments: environments,
                                                         limit: budget)
        var read = 0
        for customer in customers {
            state.environment = customer.environment
            var revision = customer.revision
            var pages = 0
            var failed = false
            while pages < settings.refundPagesPerCustomer, state.report.appleCalls < budget, takeCall(&state) {
                let fetched = Result { () throws -> TransactionHistoryPage in
                    try appStore.refundHistory(transactionId: customer.transactionId, revision: revision,
                                               environment: customer.environment, credentials: credentials)
                }
                guard case .success(let page) = fetched else {
                    if case .failure(let error) = fetched {
                        if Self.stopsRun(error) { throw error }
                        // A revision Apple no longer accepts, or a customer it no longer knows: read from the start
                        // next time (what was read twice records nothing new).
                        state.problem(ReconcileProblem(stage: state.stage, environment: customer.environment,
                                                       message: "refund history of \(customer.key): \(error)"))
                    }
                    failed = true
                    break
                }
                pages += 1
                for jws in page.signedItems {
                    do {
                        try applyTransaction(jws, renewal: nil, via: .refundHistory, project, &state, progress)
                    } catch let error where !Self.stopsRun(error) {
                        state.problem(ReconcileProblem(stage: state.stage, environment: customer.environment,
                                                       message: "refunded transaction not applied: \(error)"))
                    }
                }
                if let next = page.next { revision = next }
                guard page.hasMore, page.next != nil else { break }
            }
            if pages > 0 || failed {
                read += 1
                try store.setRefundRevision(projectId: project.id, customer: customer, revision: failed ? nil : revision,
                                            at: now())
            }
            if state.report.appleCalls >= budget || state.cancelled { break }
        }
        progress("refund history: \(read) of \(customers.count) customers read, \(state.report.refundsFound) refunds found")
    }
}
