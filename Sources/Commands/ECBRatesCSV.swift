import Domain
import Foundation
import Primitives

/// The European Central Bank's published history of its reference rates (`eurofxref-hist.csv`): a header
/// `Date,USD,JPY,…` and one row per day, `2025-01-02,1.0321,163.22,…`, each rate units of the currency per 1 EUR.
/// Cells `N/A` or empty are skipped; a trailing comma is allowed; blank lines are skipped. A bounded composition of
/// `CSVRecordReader` (records), `ExchangeRate.Value` (each rate, exact) and the calendar: the input is a file an
/// operator downloaded, fuzzed by bench/fuzz-csv.
enum ECBRatesCSV {
    struct ParseError: Error, Equatable { let message: String }

    /// The rates of the whole file, base EUR.
    static func parse(_ bytes: [UInt8]) throws(ParseError) -> [ExchangeRate] {
        var reader = CSVRecordReader()
        var records: [[String]]
        do throws(CSVRecordReader.Failure) {
            records = try reader.feed(bytes)
            records += try reader.finish()
        } catch {
            throw ParseError(message: "line \(reader.line): \(error.message)")
        }
        // Line numbers as a reader counts them (no ECB cell holds a line break).
        let lines = records.enumerated().map { (number: $0.offset + 1, cells: $0.element) }
            .filter { $0.cells != [""] }
        guard let header = lines.first else { throw ParseError(message: "empty file") }
        let names = header.cells.map(trimmed)
        guard names.first == "Date" else {
            throw ParseError(message: "line \(header.number): expected a header starting with Date")
        }
        let currencies = Array(names.dropFirst())
        for code in currencies where !code.isEmpty && !ExchangeRate.isCurrencyCode(code) {
            throw ParseError(message: "line \(header.number): \(code.prefix(16)) is not an ISO 4217 code")
        }
        var rates: [ExchangeRate] = []
        for line in lines.dropFirst() {
            let cells = line.cells.map(trimmed)
            guard let first = cells.first, let day = parseDay(first) else {
                throw ParseError(message: "line \(line.number): expected a date as YYYY-MM-DD")
            }
            for (i, cell) in cells.dropFirst().enumerated() where !cell.isEmpty && cell != "N/A" {
                guard currencies.indices.contains(i), !currencies[i].isEmpty else {
                    throw ParseError(message: "line \(line.number): more cells than the header")
                }
                guard let rate = ExchangeRate.Value(cell) else {
                    throw ParseError(message: "line \(line.number): \(currencies[i]) is not a positive decimal")
                }
                rates.append(ExchangeRate(day: Date(timeIntervalSince1970: Double(day) * 86_400), base: "EUR",
                                          currency: currencies[i], rate: rate))
            }
        }
        return rates
    }

    private static func trimmed(_ cell: String) -> String {
        cell.trimmingCharacters(in: .whitespaces)
    }

    /// Days since 1970 of `YYYY-MM-DD` (a real calendar date), else nil.
    static func parseDay(_ text: String) -> Int64? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].utf8.count == 4, parts[1].utf8.count == 2, parts[2].utf8.count == 2,
              parts.allSatisfy({ $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }),
              let y = Int64(parts[0]), let m = Int64(parts[1]), let d = Int64(parts[2]),
              GregorianCalendar.isValid(year: y, month: m, day: d) else { return nil }
        return GregorianCalendar.daysSince1970(year: y, month: m, day: d)
    }
}
