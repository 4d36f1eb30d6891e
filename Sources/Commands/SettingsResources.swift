public import AppStoreJWS
public import Jobs

/// What a subcommand opens from its settings before it works, each failure printed once in the same words.
extension ServeSettings {
    /// The roots signed data must chain to: Apple's, or the files of `BOUNCER_ROOT_CERTIFICATES`. Nil after
    /// printing why the files are unusable, prefixed with `command` (`bouncer`, `bouncer serve`): exit 2.
    public func trustedRoots(command: String) -> TrustedRoots? {
        do {
            return rootCertificatePaths.isEmpty ? TrustedRoots.apple : try TrustedRoots(contentsOf: rootCertificatePaths)
        } catch {
            CLI.err("\(command): BOUNCER_ROOT_CERTIFICATES: \(error)\n")
            return nil
        }
    }

    /// The database (embedded or `DATABASE_URL`), migrated. Nil after printing why it could not be opened,
    /// prefixed with `command`: exit 1.
    public func openDatabase(command: String, log: @escaping @Sendable (String) -> Void) -> Database? {
        do {
            return try Database.open(database, log: log)
        } catch {
            CLI.err("\(command): database: \(error)\n")
            return nil
        }
    }
}
