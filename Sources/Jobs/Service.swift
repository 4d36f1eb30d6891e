public import Dispatch
import CSystem
import Foundation
import JSON
import Synchronization

/// A long-running part of `bouncer serve` (a job, a cache's listener, the readiness probe): `start` begins it,
/// `stop` ends it after the unit of work in progress, `isRunning` says whether its threads still run.
/// `ServiceGroup` starts and stops every service of the process; nothing starts a thread in an `init`.
public protocol Service: AnyObject, Sendable {
    /// The name in the lifecycle's log lines (`{"event":"service","service":NAME,"state":"stopped"}`).
    var name: String { get }
    /// Starts the service's threads. Called once, by `ServiceGroup.start`.
    func start()
    /// Asks the service to stop and waits for its current unit of work to finish, at most `grace` unless the
    /// service documents otherwise. Called once, by `ServiceGroup.stop`.
    func stop(grace: Duration)
    /// Whether any of the service's threads still runs (false before `start` and after a completed `stop`).
    var isRunning: Bool { get }
}

/// Starts services in order and stops them in reverse order, each once: the one lifecycle of `bouncer serve`.
/// A service listed after another may rely on it while running (the deriver after the caches that wake it).
public final class ServiceGroup: Sendable {
    private enum Phase { case idle, started, stopped }

    private let services: [any Service]
    private let log: @Sendable (String) -> Void
    private let phase = Mutex(Phase.idle)

    /// - Parameter log: receives one JSON line per service started and stopped.
    public init(_ services: [any Service], log: @escaping @Sendable (String) -> Void) {
        self.services = services
        self.log = log
    }

    /// Starts every service in order. A second call, or a call after `stop`, does nothing.
    public func start() {
        let first = phase.withLock { phase -> Bool in
            guard phase == .idle else { return false }
            phase = .started
            return true
        }
        guard first else { return }
        for service in services {
            service.start()
            log(Self.line(service.name, "started"))
        }
    }

    /// Stops every started service in reverse order, each after the one after it has stopped. Idempotent: only
    /// the first call stops anything; a group never started stops nothing.
    public func stop(grace: Duration) {
        let wasStarted = phase.withLock { phase -> Bool in
            defer { phase = .stopped }
            return phase == .started
        }
        guard wasStarted else { return }
        for service in services.reversed() {
            service.stop(grace: grace)
            log(Self.line(service.name, service.isRunning ? "stop_timed_out" : "stopped"))
        }
    }

    /// Each service's name and whether it runs, in start order.
    public var health: [(name: String, isRunning: Bool)] { services.map { ($0.name, $0.isRunning) } }

    /// `{"event":"service","service":NAME,"state":STATE}`.
    static func line(_ name: String, _ state: String) -> String {
        JSONValue.object(JSONObject([
            ("event", .string("service")), ("service", .string(name)), ("state", .string(state)),
        ])).serializedString()
    }
}

/// The one shape of a service thread: a named thread that runs `body` until stopped. After each call the thread
/// runs `body` again at once (`.again`), waits `interval` or a `wake` (`.wait`), or ends (`.finished`: a body that
/// runs its own loop until `isStopping`). `stop` sets `isStopping`, wakes the thread, runs `onStop` (to interrupt
/// a body blocked elsewhere, e.g. a `LISTEN` session) and waits for the body to return.
public final class Job: Sendable {
    /// What the thread does after one call of the body.
    public enum Next: Sendable {
        /// Run the body again at once (there is more work).
        case again
        /// Wait for `interval`, a `wake` or `stop`, then run the body again.
        case wait
        /// End the thread.
        case finished
    }

    /// The thread's name (`ps -L`, debuggers).
    public let name: String
    private let interval: Duration
    private let minimumGap: Duration?
    private let body: @Sendable (Job) -> Next
    private let onStop: @Sendable () -> Void
    private let signal = DispatchSemaphore(value: 0)
    private let requested = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let running = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - interval: the longest wait after `.wait` (a poll for work nobody announces).
    ///   - minimumGap: after `.wait`, the shortest time between the starts of two runs of the body: wakes that come
    ///     sooner gather into one run (under load one run takes what many wakes would have taken a little at a
    ///     time); `nil` runs at each wake.
    ///   - onStop: run by `stop` after the flag is set, before waiting for the thread.
    public init(name: String, interval: Duration = .seconds(3600), minimumGap: Duration? = nil,
                onStop: @escaping @Sendable () -> Void = {}, body: @escaping @Sendable (Job) -> Next) {
        self.name = name
        self.interval = interval
        self.minimumGap = minimumGap
        self.onStop = onStop
        self.body = body
    }

    /// Starts the thread (once).
    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            defer {
                running.store(false, ordering: .releasing)
                done.signal()
            }
            Self.nameThread(name)
            while !isStopping {
                let started = DispatchTime.now()
                switch body(self) {
                case .again: continue
                case .wait: waitForWork(since: started)
                case .finished: return
                }
            }
        }
        thread.name = name
        thread.start()
    }

    /// Gives the calling thread `name` without its `bouncer.` or `bouncer-` prefix (at most 15 bytes, the kernel's
    /// limit) as its kernel name (`comm`, through `prctl`): `Thread.name` is not passed to the kernel here, and
    /// bench/api splits bouncer's CPU by thread by it (`webhooks.derive`, `webhooks.claim`, `webhooks.0`…). Best
    /// effort: a failure leaves the name.
    static func nameThread(_ name: String) {
        let bare = name.hasPrefix("bouncer.") || name.hasPrefix("bouncer-") ? name.dropFirst(8) : Substring(name)
        var short = Array(bare.utf8.prefix(15))
        short.append(0)
        _ = short.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { bouncer_set_thread_name($0.baseAddress) }
        }
    }

    /// Asks for a run of the body soon. Requests while one is pending coalesce into it.
    public func wake() {
        if !requested.exchange(true, ordering: .acquiringAndReleasing) { signal.signal() }
    }

    /// Waits up to `interval` for a `wake` or `stop`, then, if `minimumGap` has not passed since `started`, for the
    /// rest of it (only `stop` ends that wait early: further wakes are already pending and gather into the next run).
    private func waitForWork(since started: DispatchTime) {
        _ = signal.wait(timeout: .now() + Self.seconds(interval))
        if let minimumGap, !isStopping {
            let due = started + Self.seconds(minimumGap)
            if DispatchTime.now() < due { _ = signal.wait(timeout: due) }
        }
        requested.store(false, ordering: .releasing)
    }

    /// Waits up to `duration` for a `wake` or `stop`; for the body's own back-off after an error.
    public func pause(_ duration: Duration) {
        _ = signal.wait(timeout: .now() + Self.seconds(duration))
        requested.store(false, ordering: .releasing)
    }

    /// Sleeps `duration`, ended early only by `stop` (wakes stay pending for the next `.wait`): a body's yield.
    public func rest(_ duration: Duration) {
        let deadline = DispatchTime.now() + Self.seconds(duration)
        while !isStopping {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline.uptimeNanoseconds else { return }
            Thread.sleep(forTimeInterval: min(Double(deadline.uptimeNanoseconds - now) / 1e9, 0.02))
        }
    }

    /// Set by `stop`: the body should end its unit of work soon.
    public var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Whether the thread runs.
    public var isRunning: Bool { running.load(ordering: .acquiring) }

    /// Sets `isStopping`, wakes the thread and runs `onStop`, without waiting (see `awaitStop`).
    public func requestStop() {
        stopping.store(true, ordering: .releasing)
        signal.signal()
        onStop()
    }

    /// Waits until the thread ended or `deadline` passed (nil: without a bound); whether it ended.
    @discardableResult
    public func awaitStop(until deadline: DispatchTime?) -> Bool {
        guard isRunning else { return true }
        let ended: Bool
        if let deadline {
            ended = done.wait(timeout: deadline) == .success
        } else {
            done.wait()
            ended = true
        }
        if ended { done.signal() }  // for another waiter
        return ended
    }

    /// `requestStop`, then `awaitStop` for at most `grace` (nil: without a bound).
    @discardableResult
    public func stop(grace: Duration?) -> Bool {
        requestStop()
        return awaitStop(until: grace.map { .now() + Self.seconds($0) })
    }

    /// `duration` in seconds, for `DispatchTime` arithmetic.
    public static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

extension Job {
    /// A Boolean shared between a job's thread and its readers.
    public final class Flag: Sendable {
        private let storage: Atomic<Bool>

        /// A flag holding `value`.
        public init(_ value: Bool) { storage = Atomic(value) }

        /// The value last set.
        public var value: Bool { storage.load(ordering: .acquiring) }

        /// Replaces the value.
        public func set(_ value: Bool) { storage.store(value, ordering: .releasing) }
    }
}
