import API
import Domain
import Foundation
import HTTPCore
import Storage

/// `bouncer export transactions --project ID [--from DAY] [--to DAY] [--include-jws] > file.csv`: the CSV of
/// `GET /v1/admin/projects/:id/exports/transactions.csv`, read from the database page by page and written to stdout
/// as it comes (memory stays flat), with a progress line on stderr.
public enum ExportCommand {
    static let usage = """
        usage: bouncer export transactions --project ID [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--include-jws]

        Writes every transaction of the project purchased from --from to --to (UTC days, inclusive; default the
        last 30 days) to stdout as CSV, exactly as GET /v1/admin/projects/ID/exports/transactions.csv does: one row
        each with its money and the SHA-256 of the JWS it came from (--include-jws: the JWS too, so that
        `bouncer verify FILE` can re-verify every row offline). Progress goes to stderr. Exit status: 0 done,
        1 failed (database, unknown project; the output is then incomplete), 2 usage.

        """
    public static let command = Command(name: "export", summary: "Export a project's transactions as CSV",
                                        usage: usage, run: { run($0) })

    static func run(_ args: [String]) -> Int32 {
        if args.first == "--help" || args.first == "-h" {
            CLI.out(usage)
            return 0
        }
        var items: [(name: String, value: String)] = []
        var projectId: UUID?
        var rest = args[...]
        guard rest.popFirst() == "transactions" else { return usageError("expected: export transactions …") }
        while let flag = rest.popFirst() {
            switch flag {
            case "--include-jws":
                items.append(("include_jws", "true"))
            case "--project", "--from", "--to":
                guard let value = rest.popFirst() else { return usageError("\(flag) needs a value") }
                if flag == "--project" {
                    guard let id = UUID(uuidString: value) else { return usageError("--project takes a project id") }
                    projectId = id
                } else {
                    items.append((String(flag.dropFirst(2)), value))
                }
            default:
                return usageError("unknown argument \(flag)")
            }
        }
        guard let projectId else { return usageError("--project is required") }
        let query: TransactionExportQuery
        do throws(HTTPError) {
            query = try TransactionExportCSV.query(items, projectId: projectId, now: Date())
        } catch {
            return usageError(error.details.map { "--\($0.path.joined(separator: ".")): \($0.message)" }
                .joined(separator: "; "))
        }
        guard let settings = ServeSettings.fromProcessEnvironment(command: "bouncer") else { return 2 }
        let log: @Sendable (String) -> Void = { CLI.err($0 + "\n") }
        guard let database = settings.openDatabase(command: "bouncer", log: log) else { return 1 }
        defer { database.close(log: log) }
        do {
            guard try PostgresProjectStore(pool: database.pool).project(id: projectId) != nil else {
                CLI.err("bouncer: project \(projectId.lowercasedText) not found\n")
                return 1
            }
            var buffer = TransactionExportCSV.header(includeJWS: query.includeJWS)
            var rows = 0
            try PostgresChartStore(pool: database.pool).exportTransactions(query, pageSize: 500) { row in
                buffer += TransactionExportCSV.line(row, includeJWS: query.includeJWS)
                rows += 1
                if buffer.utf8.count >= 64 * 1024 {
                    CLI.out(buffer)
                    buffer = ""
                    CLI.err("\rexported \(rows) transactions")
                }
            }
            CLI.out(buffer)
            CLI.err("\rexported \(rows) transactions\n")
            return 0
        } catch {
            CLI.err("\nbouncer: export failed: \(error)\n")
            return 1
        }
    }

    private static func usageError(_ message: String) -> Int32 {
        CLI.err("bouncer: \(message)\n\n" + usage)
        return 2
    }
}
