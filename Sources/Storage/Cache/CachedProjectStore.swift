public import Domain
public import Foundation
import Synchronization

/// `PostgresProjectStore` with every project and its keys held in memory, so public-key authentication and
/// secret-key checks cost no round trip.
///
/// Each instance is kept true by `CacheSynchronizer`: changes made through any instance (or `bouncer project …`)
/// are announced in their own database transaction (`CacheMessage.project`), and every instance reloads the project
/// as the message arrives; the writing instance reloads before the call returns, so it reads its own writes. Key
/// expiry is compared at lookup time (`isLive(at:)`), so a retiring key stops working at its instant. While the
/// cache is not live (the channel is down or not yet listening), every call goes to the database; a reload that
/// loses a race with a newer invalidation is dropped (the newer one reloads), and until a project's reload lands
/// its lookups go to the database too.
public final class CachedProjectStore: ProjectStore {
    struct Entry {
        var project: Project
        /// Newest first, as `keys(projectId:)` returns them.
        var keys: [StoredProjectKey]
    }
    struct State {
        var live = false
        var projects: [UUID: Entry] = [:]
        var byPublicKey: [String: UUID] = [:]
        var sequence: UInt64 = 0
        /// The sequence of each project's latest invalidation since the last full refresh began.
        var touched: [UUID: UInt64] = [:]
        /// Projects invalidated and not reloaded since: their lookups go to the database.
        var stale: Set<UUID> = []
    }

    private let inner: PostgresProjectStore
    private let state = Mutex(State())
    /// Told about every project change seen here (the read cache forgets the project's users).
    private let changed: @Sendable (UUID) -> Void

    /// A cache over `inner`; `changed` hears of every project this instance changes or is told changed.
    public init(inner: PostgresProjectStore, changed: @escaping @Sendable (UUID) -> Void = { _ in }) {
        self.inner = inner
        self.changed = changed
    }

    /// Whether lookups are answered from memory.
    public var isLive: Bool { state.withLock { $0.live } }

    // MARK: - Reads

    /// From memory when the key is cached; a key the cache does not know is looked up in the database (as
    /// before the cache: one indexed lookup), so a project or key created through another instance works at once.
    /// Finding one there means this cache is behind: the project is reloaded.
    public func project(publicKey: String, at now: Date) throws -> Project? {
        switch lookup(publicKey: publicKey, at: now) {
        case .found(let project): return project
        case .expired: return nil
        case .database(let known):
            let project = try inner.project(publicKey: publicKey, at: now)
            if let project, !known { invalidate(project.id) }
            return project
        }
    }

    /// The project when its key is cached and live; nil for everything `project(publicKey:at:)` would ask the
    /// database about, and for a key that is no longer live (the database's answer then is nil too, but saying so
    /// is left to it).
    public func projectInMemory(publicKey: String, at now: Date) -> Project? {
        if case .found(let project) = lookup(publicKey: publicKey, at: now) { return project }
        return nil
    }

    private enum Lookup { case found(Project), expired, database(known: Bool) }

    private func lookup(publicKey: String, at now: Date) -> Lookup {
        state.withLock { s -> Lookup in
            guard s.live else { return .database(known: true) }
            guard let id = s.byPublicKey[publicKey] else { return .database(known: false) }
            guard !s.stale.contains(id), let entry = s.projects[id] else { return .database(known: true) }
            let live = entry.keys.contains { $0.kind == .public && $0.publicKey == publicKey && $0.isLive(at: now) }
            return live ? .found(entry.project) : .expired
        }
    }

    public func keys(projectId: UUID) throws -> [StoredProjectKey] {
        let cached = state.withLock { s -> [StoredProjectKey]? in
            guard s.live, !s.stale.contains(projectId) else { return nil }
            return s.projects[projectId]?.keys
        }
        return try cached ?? inner.keys(projectId: projectId)
    }

    public func project(id: UUID) throws -> Project? { try inner.project(id: id) }
    public func allProjects() throws -> [Project] { try inner.allProjects() }
    public func products(projectId: UUID) throws -> [ProductMapping] { try inner.products(projectId: projectId) }

    // MARK: - Writes: the store announces them in their transaction; this instance reloads before returning

    public func createProject(_ new: NewProject, keys: [StoredProjectKey], now: Date) throws -> Project {
        let project = try inner.createProject(new, keys: keys, now: now)
        invalidate(project.id)
        return project
    }

    public func updateProject(id: UUID, _ changes: ProjectChanges, now: Date) throws -> Project? {
        defer { invalidate(id) }
        return try inner.updateProject(id: id, changes, now: now)
    }

    public func deleteProject(id: UUID) throws -> Bool {
        defer { invalidate(id) }
        return try inner.deleteProject(id: id)
    }

    public func rotateKeys(id: UUID, _ replacements: [KeyReplacement], now: Date) throws -> Project? {
        defer { invalidate(id) }
        return try inner.rotateKeys(id: id, replacements, now: now)
    }

    public func setProduct(projectId: UUID, _ mapping: ProductMapping, now: Date) throws -> ProductMapping {
        defer { invalidate(projectId) }
        return try inner.setProduct(projectId: projectId, mapping, now: now)
    }

    public func deleteProduct(projectId: UUID, productId: String) throws -> Bool {
        defer { invalidate(projectId) }
        return try inner.deleteProduct(projectId: projectId, productId: productId)
    }

    // MARK: - Keeping it true

    /// Marks the project stale (its lookups go to the database), tells `changed`, then reloads it; a failed reload
    /// leaves it stale until the next invalidation or full refresh.
    public func invalidate(_ id: UUID) {
        let ticket = state.withLock { s -> UInt64 in
            s.sequence += 1
            s.touched[id] = s.sequence
            s.stale.insert(id)
            return s.sequence
        }
        changed(id)
        let loaded: PostgresProjectStore.Snapshot?
        do {
            loaded = try inner.snapshot(projectId: id)
        } catch {
            return
        }
        state.withLock { s in
            guard s.touched[id] == ticket else { return }  // a newer invalidation reloads
            s.stale.remove(id)
            s.remove(id)
            if let loaded { s.insert(Entry(project: loaded.project, keys: loaded.keys)) }
        }
    }

    /// Reloads every project (the safety net behind the announcements, and the catch-up after a reconnect).
    /// - Throws: the store's error; the cache then stays as it was.
    public func refreshAll() throws {
        let ticket = state.withLock { $0.sequence }
        let all = try inner.snapshotAll()
        state.withLock { s in
            // A project invalidated after the snapshot began keeps what its own reload left (or will leave).
            let newer = s.touched.filter { $0.value > ticket }
            let kept = newer.keys.compactMap { s.projects[$0] }
            s.projects = [:]
            s.byPublicKey = [:]
            for loaded in all where newer[loaded.project.id] == nil {
                s.insert(Entry(project: loaded.project, keys: loaded.keys))
            }
            for entry in kept { s.insert(entry) }
            s.touched = newer
            s.stale = s.stale.filter { newer[$0] != nil }
        }
    }

    /// Starts answering from memory (the channel listens and a refresh since has landed).
    public func goLive() {
        state.withLock { $0.live = true }
    }

    /// Stops answering from memory (the channel is down: announcements may be lost).
    public func goOffline() {
        state.withLock { $0.live = false }
    }
}

extension CachedProjectStore.State {
    mutating func insert(_ entry: CachedProjectStore.Entry) {
        projects[entry.project.id] = entry
        for key in entry.keys where key.kind == .public {
            if let publicKey = key.publicKey { byPublicKey[publicKey] = entry.project.id }
        }
    }

    mutating func remove(_ id: UUID) {
        guard let old = projects.removeValue(forKey: id) else { return }
        for key in old.keys {
            if let publicKey = key.publicKey, byPublicKey[publicKey] == id { byPublicKey[publicKey] = nil }
        }
    }
}
