import Foundation

/// A value behind a pthread mutex (`NSLock`), for state that I/O loops and workers hit per request.
///
/// Why not `Synchronization.Mutex`: its slow path spins before parking, and with more runnable
/// threads than cores (loops + workers + the load generator on 2 cores) perf showed ~30% of CPU
/// in `_MutexHandle._lockSlow`. A pthread mutex parks the waiter at once.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only reached through `withLock`, which holds `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
