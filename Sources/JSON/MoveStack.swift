/// A growable stack that hands its top elements out as an exact-size `Array` by *moving* them.
///
/// The parser pushes every array element / object member here while a container is open and
/// takes them out in one piece when it closes: one allocation of the right size per container,
/// instead of an `Array` that doubles (and reallocates) as it is appended to, and no
/// retain/release per element as copying out of a shared `Array` would cost.
/// Owns `storage[0..<count]` (initialized) and frees it in `deinit`. One parse, one thread.
final class MoveStack<Element> {
    private var storage: UnsafeMutablePointer<Element>
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int = 64) {
        self.capacity = max(capacity, 1)
        storage = UnsafeMutablePointer<Element>.allocate(capacity: self.capacity)
    }

    deinit {
        storage.deinitialize(count: count)
        storage.deallocate()
    }

    @inline(__always)
    func push(_ element: consuming Element) {
        if count == capacity { grow() }
        (storage + count).initialize(to: element)
        count &+= 1
    }

    /// Element at `position` (`0..<count`, checked by callers' loop bounds).
    @inline(__always)
    subscript(position: Int) -> Element { storage[position] }

    /// Moves elements `start..<count` out into a new array; the stack shrinks to `start`.
    func popArray(from start: Int) -> [Element] {
        let moved = count &- start
        guard moved > 0, start >= 0 else { return [] }
        let result = [Element](unsafeUninitializedCapacity: moved) { buffer, initialized in
            if let destination = buffer.baseAddress {
                destination.moveInitialize(from: storage + start, count: moved)
                initialized = moved
            }
        }
        count = start
        return result
    }

    private func grow() {
        let bigger = capacity &* 2
        let fresh = UnsafeMutablePointer<Element>.allocate(capacity: bigger)
        fresh.moveInitialize(from: storage, count: count)
        storage.deallocate()
        storage = fresh
        capacity = bigger
    }
}
