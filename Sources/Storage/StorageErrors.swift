import Domain
import Postgres

/// Translates database failures into `DomainError`s at the store boundary.
///
/// Server text and SQL go only into `underlying` (for logs): clients see a fixed sentence per code.
enum StorageErrors {
    /// Runs `body`, mapping `PGError`s: unreachable or overloaded database → `.serviceUnavailable`; unique
    /// violation → `.conflict`; foreign key violation → `.projectNotFound`; anything else is rethrown untouched
    /// (the API turns it into a 500 with a request id: it is a bug, not a verdict). `DomainError`s pass through.
    ///
    /// Every foreign key of the schema leads to `projects` (directly or through `purchases`), so a foreign key
    /// violation (23503) means the project is gone (never created, or deleted concurrently): `.projectNotFound`.
    static func mapping<T>(_ action: StaticString, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PGError {
            throw translate(error, action: action)
        }
    }

    /// The `DomainError` a `PGError` becomes, or the error itself when it is not one we can name.
    static func translate(_ error: PGError, action: StaticString) -> any Error {
        let underlying = "\(action): \(String(reflecting: error))"
        if isTransient(error) {
            return DomainError(
                .serviceUnavailable, "The database is unavailable; retry later.", underlying: underlying)
        }
        if error.isUniqueViolation {
            return DomainError(.conflict, "The value conflicts with existing data.", underlying: underlying)
        }
        if error.sqlState == "23503" {
            return DomainError(.projectNotFound, "No project with that id.", underlying: underlying)
        }
        return error
    }

    /// Unreachable, shutting down or overloaded: the client should retry, nothing is wrong with its data.
    ///
    /// Beyond `PGError.isUnavailable`: a statement timeout (57014) means the database is too slow right now,
    /// and a serialization failure or deadlock (40001/40P01) that is still thrown has exhausted the pool's
    /// retries — both are load, not a verdict.
    static func isTransient(_ error: PGError) -> Bool {
        error.isUnavailable || error.isRetryable || error.sqlState == "57014"
    }
}
