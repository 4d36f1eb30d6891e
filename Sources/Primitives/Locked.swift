#if canImport(Glibc)
public import Glibc
#elseif canImport(Darwin)
public import Darwin
#endif

/// A value behind a pthread mutex, for state that I/O loops and workers hit per request.
///
/// Why not `Synchronization.Mutex`: its slow path spins before parking, and with more runnable threads than cores
/// (loops + workers + the load generator on 2 cores) perf showed ~30% of CPU in `_MutexHandle._lockSlow`. A pthread
/// mutex parks the waiter at once. (This was an `NSLock`, which is the same pthread mutex behind an Objective-C-style
/// class; the mutex itself keeps this module free of Foundation.)
public final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only reached through `withLock`, which holds `mutex`.
    // The mutex lives at a fixed heap address (a pthread mutex must not move): allocated in init, freed in deinit.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    /// A lock around `value`.
    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        // Default attributes: pthread_mutex_init cannot fail for them on Linux.
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
