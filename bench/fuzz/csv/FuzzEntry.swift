// libFuzzer entry for the CSV readers of files an operator hands `bouncer`: CSVRecordReader (RFC 4180 records, fed
// in pieces: `bouncer verify FILE`) and ECBRatesCSV (the ECB's history, `bouncer fx import FILE`), compiled by
// bench/fuzz-csv with Sources/Commands/CSVRecordReader.swift, ECBRatesCSV.swift and the Domain and Primitives
// modules. Any trap or ASan report is a bug. The first input byte is the piece size (1…256) the reader is fed in.
// Checked on every input:
//   - the records do not depend on how the bytes are cut (pieces of that size against the whole at once), nor does
//     a failure (both fail, at the same line);
//   - every record holds 1…maxFields fields;
//   - ECBRatesCSV either fails with a message naming a line, or answers rates with an ISO 4217 code and a positive
//     exact value whose text parses back to itself;
//   - TaxRate.milliPercent (`PUT /v1/admin/tax-rates`' percents, also in Domain's Money.swift) on every field either
//     refuses it or answers 0…99999 milli-percent whose shortest text (TaxRate.text) parses back to it.
import Domain
import Foundation

private func records(_ bytes: [UInt8], piece: Int) -> Result<[[String]], CSVRecordReader.Failure> {
    var reader = CSVRecordReader()
    var out: [[String]] = []
    var start = 0
    do throws(CSVRecordReader.Failure) {
        while start < bytes.count {
            let end = min(start + piece, bytes.count)
            out += try reader.feed(Array(bytes[start..<end]))
            start = end
        }
        out += try reader.finish()
        return .success(out)
    } catch {
        return .failure(error)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCSV(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let piece = Int(data[0]) + 1
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch (records(rest, piece: piece), records(rest, piece: max(rest.count, 1))) {
    case let (.success(a), .success(b)):
        guard a == b else { fatalError("records depend on the pieces: \(a) vs \(b)") }
        for field in a.joined() {
            guard let milli = TaxRate.milliPercent(field) else { continue }
            guard (0..<100_000).contains(milli), TaxRate.milliPercent(TaxRate.text(milliPercent: milli)) == milli else {
                fatalError("a tax rate that breaks its rules: \(field) → \(milli)")
            }
        }
        for record in a where record.isEmpty || record.count > CSVRecordReader.maxFields {
            fatalError("a record of \(record.count) fields")
        }
    case let (.failure(a), .failure(b)):
        guard a.message == b.message else { fatalError("failures depend on the pieces: \(a) vs \(b)") }
    case let (a, b):
        fatalError("one cut failed, the other did not: \(a) vs \(b)")
    }
    do throws(ECBRatesCSV.ParseError) {
        for rate in try ECBRatesCSV.parse(rest) {
            guard ExchangeRate.isCurrencyCode(rate.currency), rate.base == "EUR", rate.rate.mantissa > 0,
                  ExchangeRate.Value(rate.rate.text) == rate.rate else {
                fatalError("a rate that breaks its rules: \(rate)")
            }
        }
    } catch {
        guard error.message.hasPrefix("line ") || error.message == "empty file" else {
            fatalError("a failure without its line: \(error.message)")
        }
    }
    return 0
}
