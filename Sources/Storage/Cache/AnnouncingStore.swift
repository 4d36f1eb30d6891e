import Domain

/// What every announcing decorator is: an inner store whose calls it forwards, and the announcement of what its
/// writes changed (`announce`: this instance at once, the others through `CacheSynchronizer`), after they return.
///
/// Each decorator subclasses it (and restates `@unchecked Sendable`): `inner` is a `Sendable` store and `announce`
/// a `@Sendable` closure, both immutable, and a subclass adds only immutable `Sendable` state of its own.
public class AnnouncingStore<Inner: Sendable>: @unchecked Sendable {
    /// The store every call goes through.
    let inner: Inner
    /// Hears what a write changed.
    let announce: @Sendable ([CacheMessage]) -> Void

    /// Wraps `inner`.
    public init(inner: Inner, announce: @escaping @Sendable ([CacheMessage]) -> Void) {
        self.inner = inner
        self.announce = announce
    }

    /// Runs `body`, then announces `messages` (if any, and if `changed` holds of the result); also after
    /// `.serviceUnavailable`, which may hide a commit whose answer was lost.
    func announcing<T>(_ messages: [CacheMessage], changed: (T) -> Bool = { _ in true }, _ body: () throws -> T)
        throws -> T
    {
        do {
            let result = try body()
            if changed(result), !messages.isEmpty { announce(messages) }
            return result
        } catch let error as DomainError where error.code == .serviceUnavailable {
            if !messages.isEmpty { announce(messages) }
            throw error
        }
    }
}
