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

    struct ParseError: Error { let message: String }

    /// The rates of an ECB history CSV.
    static func parse(_ text: String) throws(ParseError) -> [ExchangeRate] {
        var lines = text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
        guard !lines.isEmpty else { throw ParseError(message: "empty file") }
        let header = lines.removeFirst().split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard header.first == "Date" else { throw ParseError(message: "line 1: expected a header starting with Date") }
        let currencies = header.dropFirst().map { $0 }
        for code in currencies where !code.isEmpty && !ExchangeRate.isCurrencyCode(code) {
            throw ParseError(message: "line 1: \(code.prefix(16)) is not an ISO 4217 code")
        }
        var rates: [ExchangeRate] = []
        for (n, line) in lines.enumerated() {
            let cells = line.split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard let first = cells.first, let day = parseDay(first) else {
                throw ParseError(message: "line \(n + 2): expected a date as YYYY-MM-DD")
            }
            for (i, cell) in cells.dropFirst().enumerated() where !cell.isEmpty && cell != "N/A" {
                guard currencies.indices.contains(i), !currencies[i].isEmpty else {
                    throw ParseError(message: "line \(n + 2): more cells than the header")
                }
                guard let rate = ExchangeRate.Value(cell) else {
                    throw ParseError(message: "line \(n + 2): \(currencies[i]) is not a positive decimal")
                }
                rates.append(ExchangeRate(day: Date(timeIntervalSince1970: Double(day) * 86_400), base: "EUR",
                                          currency: currencies[i], rate: rate))
            }
        }
        return rates
    }

    /// Days since 1970 of `YYYY-MM-DD` (a real calendar date), else nil.
    static func parseDay(_ text: String) -> Int64? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }),
              let y = Int64(parts[0]), let m = Int64(parts[1]), let d = Int64(parts[2]),
              GregorianCalendar.isValid(year: y, month: m, day: d) else { return nil }
        return GregorianCalendar.daysSince1970(year: y, month: m, day: d)
    }

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
            do throws(ParseError) {
                rates = try parse(String(decoding: data, as: UTF8.self))
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
