import Domain
import Foundation
import JSON
import Primitives
import Storage

/// `bouncer fx import FILE`: exchange rates from the European Central Bank's published history CSV, stored as
/// `PUT /v1/admin/exchange-rates` stores them (one transaction, one audit entry).
public enum FXCommands {
    static let usage = """
        usage: bouncer fx import FILE

        Imports exchange rates from the European Central Bank's history CSV (eurofxref-hist.csv, in
        https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist.zip): a header `Date,USD,JPY,...` and one row per
        day, `2025-01-02,1.0321,163.22,...`; each rate is units of that currency per 1 EUR (so the base is EUR).
        Cells `N/A` or empty are skipped; a trailing comma is allowed. A day's rates already stored are replaced.
        Prints {"imported": N, "days": D, "from": first day, "to": last day}. Exit status: 0 done, 1 failed
        (unreadable file, database), 2 usage or a malformed file (nothing stored).

        """
    public static let command = Command(name: "fx", summary: "Import exchange rates (the ECB's history CSV)", usage: usage,
                                 run: { run($0) })
    /// The largest file read (the full ECB history is about 7 MB).
    static let maxBytes = 64 * 1024 * 1024

    static func run(_ args: [String]) -> Int32 {
        AdminCommands.run(args, usage: usage, { args throws(AdminCommands.UsageError) in
            guard args.count == 2, args[0] == "import" else {
                throw AdminCommands.UsageError(message: "expected: import FILE")
            }
            let path = args[1]
            guard let data = FileManager.default.contents(atPath: path), data.count <= maxBytes else {
                throw AdminCommands.UsageError(message: "cannot read \(path) (at most \(maxBytes) bytes)")
            }
            let rates: [ExchangeRate]
            do throws(ECBRatesCSV.ParseError) {
                rates = try ECBRatesCSV.parse(Array(data))
            } catch {
                throw AdminCommands.UsageError(message: "\(path): \(error.message)")
            }
            return CLIAudit.recorded("PUT", "/v1/admin/exchange-rates") { (store: PostgresChartStore) in
                let stored = try store.storeRates(rates)
                let days = Set(rates.map { Int64($0.day.timeIntervalSince1970) }).sorted()
                let object = JSONValue.object(JSONObject([
                    ("imported", JSONValue(Int64(stored))), ("days", JSONValue(Int64(days.count))),
                    ("from", days.first.map { .string(RFC3339.day(secondsSince1970: Double($0))) } ?? .null),
                    ("to", days.last.map { .string(RFC3339.day(secondsSince1970: Double($0))) } ?? .null),
                ]))
                return [Array(object.serializedString().utf8)]
            }
        }, administration: { _, database in PostgresChartStore(pool: database.pool) })
    }
}
