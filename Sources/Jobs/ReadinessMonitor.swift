import Foundation
import Postgres
import Synchronization

/// Pings the database once a second on its own thread, so `/readyz` answers from memory and never blocks
/// the I/O loop on a dead database.
final class ReadinessMonitor: Sendable {
    private let ready = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)

    init(pool: ConnectionPool, interval: Duration = .seconds(1)) {
        ready.store(pool.ping(), ordering: .releasing)
        let thread = Thread { [self] in
            while !stopped.load(ordering: .acquiring) {
                _ = wake.wait(timeout: .now() + .milliseconds(Int(interval.components.seconds * 1000)))
                if stopped.load(ordering: .acquiring) { break }
                ready.store(pool.ping(), ordering: .releasing)
            }
        }
        thread.name = "bouncer-readiness"
        thread.start()
    }

    /// The last ping's answer.
    var isReady: Bool { ready.load(ordering: .acquiring) }

    /// Ends the monitor thread.
    func stop() {
        stopped.store(true, ordering: .releasing)
        wake.signal()
    }
}
