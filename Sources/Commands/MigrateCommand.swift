import Jobs
import Foundation

/// `bouncer migrate`: applies pending schema migrations (the embedded database is started, then stopped).
public enum MigrateCommand {
    static let usage = """
        usage: bouncer migrate

        Applies pending migrations from schema/ (embedded in the binary), each in its own transaction, under a
        PostgreSQL advisory lock. Uses DATABASE_URL, or else the embedded PostgreSQL under BOUNCER_DATA_DIR
        (default ./.bouncer), which it starts and stops again.

        """

    public static let command = Command(name: "migrate", summary: "Apply pending database migrations", usage: usage) { args in
        if let status = CLI.handleHelpOrReject(args, usage: usage) { return status }
        guard let settings = ServeSettings.fromProcessEnvironment(command: "bouncer migrate") else { return 2 }
        let log: @Sendable (String) -> Void = { CLI.err($0 + "\n") }
        do {
            let database = try Database.open(settings.database, log: log)
            database.close(log: log)
            return 0
        } catch {
            CLI.err("bouncer migrate: \(error)\n")
            return 1
        }
    }
}
