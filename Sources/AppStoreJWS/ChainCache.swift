import Crypto
import Glibc
import Synchronization

/// Bounded LRU cache of verified chains, so steady state costs one ECDSA verify per JWS.
///
/// Key: the certificates themselves, not their encoding in a header: SHA-256 over SHA-256(leaf DER),
/// SHA-256(intermediate DER) and the identity of the trust anchors they were validated against. The
/// same certificates in a re-encoded header (other JSON whitespace, key order, extra keys) map to the
/// same entry, so an attacker cannot mint fresh keys from one public chain. Value: the leaf's P-256 key
/// and the window in which leaf, intermediate and root are all valid; a hit counts only if the effective
/// date is inside that window, so an entry never extends a certificate's validity.
///
/// Filled only by a JWS that passed everything (chain, marker OIDs, signature, claims): at most one
/// insertion per successfully verified input and none for a failure, so a flood of unverifiable input
/// (re-encoded headers, garbage, forged signatures) cannot evict the entries genuine traffic uses.
/// Xcode keys are never cached. Each verifier owns its cache, so its roots cannot change under it.
///
/// A second, smaller map memoizes the exact header segment text → the key its certificates decode to, so
/// the steady state skips decoding the header and both certificates and the three digests. It is never
/// trusted on its own: it only names a key (a pure function of those exact bytes, compared in full), the
/// entry under that key must still exist and cover the effective date, and the signature is still checked.
/// It is filled only by a verified JWS, holds at most `capacity` texts and forgets those of an evicted chain.
/// With each text it keeps SHA-256's state after `text‖"."`, the start of every signing input under that header,
/// so a JWS's digest hashes only its payload segment (a pure function of the same exact bytes).
final class ChainCache: Sendable {
    struct Key: Hashable, Sendable {
        var a: UInt64, b: UInt64, c: UInt64, d: UInt64

        /// The key of a leaf ← intermediate pair under the trust anchors identified by `rootsIdentity`.
        init(leafDER: [UInt8], intermediateDER: [UInt8], rootsIdentity: [UInt8]) {
            let material = Digest.sha256(leafDER)
                + Digest.sha256(intermediateDER) + rootsIdentity
            self.init(digest: Digest.sha256(material))
        }

        /// Test seam: a key from any bytes (hashed).
        init(bytes: [UInt8]) { self.init(digest: Digest.sha256(bytes)) }

        private init(digest: [UInt8]) {
            func word(_ offset: Int) -> UInt64 {
                var value: UInt64 = 0
                for index in offset..<(offset + 8) { value = value << 8 | UInt64(digest[index]) }
                return value
            }
            a = word(0); b = word(8); c = word(16); d = word(24)
        }
    }

    struct Entry: Sendable {
        var key: P256.PublicKey
        /// Seconds since the epoch; valid iff notBefore <= t < notAfter (OpenSSL's X509_cmp_time rule).
        var notBefore: Int64
        var notAfter: Int64
    }

    /// A header segment's exact bytes, compared in full and in bulk (Array's own hash goes byte by byte).
    struct HeaderText: Hashable, Sendable {
        let bytes: [UInt8]

        /// The length and the first 512 bytes, which hold the start of the leaf (serial, issuer, validity):
        /// SipHash over all ~3.3 KB cost ~39k instructions per JWS. Collisions cost only comparisons, and
        /// only against the few verified texts held.
        func hash(into hasher: inout Hasher) {
            hasher.combine(bytes.count)
            bytes.withUnsafeBytes { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0.prefix(512))) }
        }

        static func == (lhs: HeaderText, rhs: HeaderText) -> Bool {
            lhs.bytes.count == rhs.bytes.count && lhs.bytes.withUnsafeBytes { l in
                rhs.bytes.withUnsafeBytes { r in
                    guard let a = l.baseAddress, let b = r.baseAddress else { return true }   // both empty
                    return memcmp(a, b, l.count) == 0
                }
            }
        }
    }

    /// What a memoized header text names: its chain's key, and SHA-256 after `text‖"."` (`nil` if OpenSSL failed).
    struct HeaderMemo: Sendable {
        var key: Key
        var signingInputPrefix: Digest.SHA256Prefix?
    }

    /// Both tables under one lock, on one clock.
    private struct State: ~Copyable {
        var entries = LRUTable<Key, Entry>()
        var headers = LRUTable<HeaderText, HeaderMemo>()
        var clock: UInt64 = 0
    }

    let capacity: Int
    private let state = Mutex(State())
    /// Insertions since creation (tests and the flood measurement: proves failures insert nothing).
    private let insertionCount = Atomic<Int>(0)

    /// `capacity` 0 disables caching (every JWS pays for full path validation).
    init(capacity: Int) { self.capacity = max(0, capacity) }

    /// The cached leaf key if the pair was verified before and `time` is inside its window.
    func lookup(_ key: Key, at time: Int64) -> P256.PublicKey? {
        guard let entry = entry(key), entry.notBefore <= time, time < entry.notAfter else { return nil }
        return entry.key
    }

    /// The entry for `key` whatever the time (marks it used).
    func entry(_ key: Key) -> Entry? {
        guard capacity > 0 else { return nil }
        return state.withLock { state -> Entry? in
            state.clock &+= 1
            return state.entries.use(key, at: state.clock)
        }
    }

    /// What this exact header text names (the key its certificates were verified under, the signing input's hash
    /// prefix), if it was seen by a verified JWS.
    func memo(forHeader text: HeaderText) -> HeaderMemo? {
        guard capacity > 0 else { return nil }
        return state.withLock { state -> HeaderMemo? in
            state.clock &+= 1
            return state.headers.use(text, at: state.clock)
        }
    }

    /// Remembers that `text` names the certificates under `key`, after a JWS with that header verified completely.
    func remember(header text: HeaderText, as key: Key) {
        guard capacity > 0 else { return }
        let prefix = (text.bytes + [UInt8(ascii: ".")]).withUnsafeBytes { Digest.SHA256Prefix(prefix: $0) }
        state.withLock { state in
            guard state.entries.contains(key) else { return }   // only ever point at a cached chain
            state.clock &+= 1
            state.headers.set(text, HeaderMemo(key: key, signingInputPrefix: prefix), at: state.clock, capacity: capacity)
        }
    }

    /// Remembers a pair after a JWS signed by it verified completely, evicting the least recently used entry when full.
    func insert(_ key: Key, publicKey: P256.PublicKey, notBefore: Int64, notAfter: Int64) {
        guard capacity > 0 else { return }
        insertionCount.wrappingAdd(1, ordering: .relaxed)
        state.withLock { state in
            state.clock &+= 1
            let entry = Entry(key: publicKey, notBefore: notBefore, notAfter: notAfter)
            if let victim = state.entries.set(key, entry, at: state.clock, capacity: capacity) {
                state.headers.removeAll { $0.key == victim }   // O(capacity) scans, only on a miss that inserts
            }
        }
    }

    /// Number of cached pairs (tests, diagnostics).
    var count: Int { state.withLock { $0.entries.count } }

    /// Number of memoized header texts (tests).
    var headerCount: Int { state.withLock { $0.headers.count } }

    /// Calls to `insert` so far (re-inserting a cached pair counts too).
    var insertions: Int { insertionCount.load(ordering: .relaxed) }
}

/// A table of at most `capacity` values that evicts the least recently used one to make room; the ticks come from
/// its owner, so tables under one lock share one clock. Eviction scans the table (O(count)): only an insert of a
/// new key into a full table pays for it.
struct LRUTable<Key: Hashable, Value> {
    private var slots: [Key: (value: Value, lastUse: UInt64)] = [:]

    /// Number of values held.
    var count: Int { slots.count }

    /// Whether `key` holds a value (does not mark it used).
    func contains(_ key: Key) -> Bool { slots.index(forKey: key) != nil }

    /// The value under `key`, marked used at `tick`.
    mutating func use(_ key: Key, at tick: UInt64) -> Value? {
        guard let index = slots.index(forKey: key) else { return nil }
        slots.values[index].lastUse = tick
        return slots.values[index].value
    }

    /// Stores `value` under `key`, used at `tick`. A new key in a full table first evicts the least recently used
    /// value: its key is returned.
    @discardableResult
    mutating func set(_ key: Key, _ value: Value, at tick: UInt64, capacity: Int) -> Key? {
        var evicted: Key?
        if slots.index(forKey: key) == nil, slots.count >= capacity,
           let victim = slots.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
            slots[victim] = nil
            evicted = victim
        }
        slots[key] = (value, tick)
        return evicted
    }

    /// Forgets every value `shouldRemove` picks.
    mutating func removeAll(where shouldRemove: (Value) -> Bool) {
        slots = slots.filter { !shouldRemove($0.value.value) }
    }
}
