public import Postgres

/// What every PostgreSQL store is: statements over a `ConnectionPool` it does not own.
///
/// Each store subclasses it (and restates `@unchecked Sendable`): the pool is `Sendable` and immutable, and a
/// subclass adds only immutable `Sendable` state of its own.
public class PostgresStore: @unchecked Sendable {
    /// The pool every statement of the store runs on.
    let pool: ConnectionPool

    /// A store over `pool`; the pool's lifetime is the caller's.
    public init(pool: ConnectionPool) {
        self.pool = pool
    }
}
