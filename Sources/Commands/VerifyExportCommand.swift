import API
import AppStoreJWS
import Crypto
import Domain
import Foundation
import Primitives

/// `bouncer verify FILE` on a transactions export (`…/exports/transactions.csv?include_jws=true` or `bouncer export
/// transactions --include-jws`): each row's JWS verified as `bouncer verify` verifies one (chain to the trusted root at
/// its signedDate, Apple's marker OIDs, ES256, the policy), its SHA-256 equal to the row's `jws_sha256`, the row's
/// signed fields equal to the payload's, and its money consistent with the signed price and refund (`Money`). Reads
/// the file as a stream: memory stays flat whatever its size. Prints one line per failing row and a summary; exit 0
/// when every row verifies, 1 when one does not, 2 when the file is not such an export.
enum VerifyExportCommand {
    /// Whether `path` names a file that starts with the export's header.
    static func isExport(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let prefix = Array(TransactionExportCSV.columns.prefix(2).joined(separator: ",").utf8)
        return (try? handle.read(upToCount: prefix.count)).map { Array($0) == prefix } ?? false
    }

    static func run(path: String, verifier: SignedDataVerifier, policy: (String) -> VerificationPolicy,
                    out: (String) -> Void, err: (String) -> Void) -> Int32 {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            err("bouncer verify: cannot read \(path)\n")
            return 2
        }
        defer { try? handle.close() }
        var reader = CSVRecordReader()
        var header: [String]?
        var rows = 0, failed = 0
        func check(_ record: [String]) -> Bool {
            guard let header else {
                let expected = TransactionExportCSV.columns + ["jws"]
                guard record == expected else {
                    err("bouncer verify: not a transactions export with its JWS (expected the header "
                        + expected.joined(separator: ",") + "; export with include_jws=true)\n")
                    return false
                }
                header = record
                return true
            }
            rows += 1
            let problems = record.count == header.count
                ? Self.problems(Dictionary(uniqueKeysWithValues: zip(header, record)), verifier: verifier, policy: policy)
                : ["has \(record.count) fields, not \(header.count)"]
            if !problems.isEmpty {
                failed += 1
                let id = record.indices.contains(1) ? record[1] : "?"
                err("row \(rows) (line \(rows + 1), transaction \(id)): " + problems.joined(separator: "; ") + "\n")
            }
            return true
        }
        while true {
            let data: Data
            do { data = try handle.read(upToCount: 64 * 1024) ?? Data() } catch {
                err("bouncer verify: cannot read \(path): \(error)\n")
                return 2
            }
            let records: [[String]]
            do { records = try data.isEmpty ? reader.finish() : reader.feed(Array(data)) } catch {
                err("bouncer verify: line \(reader.line): \(error.message)\n")
                return 2
            }
            for record in records where !check(record) { return 2 }
            if data.isEmpty { break }
        }
        guard header != nil else {
            err("bouncer verify: \(path) is empty\n")
            return 2
        }
        out("\(rows) rows: \(rows - failed) verified, \(failed) failed\n")
        return failed == 0 ? 0 : 1
    }

    /// What is wrong with one row (empty: it verifies).
    static func problems(_ row: [String: String], verifier: SignedDataVerifier,
                         policy: (String) -> VerificationPolicy) -> [String] {
        let jws = row["jws"] ?? ""
        guard !jws.isEmpty else { return ["no JWS (a StoreKit 1 record, or stored before evidence was kept)"] }
        var problems: [String] = []
        if Hex.encode(Digest.sha256(Array(jws.utf8))) != row["jws_sha256"] {
            problems.append("jws_sha256 is not the SHA-256 of the JWS")
        }
        let bundleId = SignedDataKind.claimedBundleId(fromJWS: jws) ?? ""
        let t: JWSTransaction
        do { t = try verifier.verifyTransaction(jws, policy: policy(bundleId), at: nil).transaction } catch {
            return problems + ["JWS: \(error.description)"]
        }
        func instant(_ date: Date?) -> String { date.map { RFC3339.string(secondsSince1970: $0.timeIntervalSince1970) } ?? "" }
        let signed: [(String, String)] = [
            ("environment", t.environment.rawValue), ("transaction_id", t.transactionId),
            ("original_transaction_id", t.originalTransactionId), ("product_id", t.productId),
            ("type", t.type.rawValue), ("storefront", t.storefront ?? ""),
            ("purchase_date", instant(t.purchaseDate)), ("expires_date", instant(t.expiresDate)),
            ("revocation_date", instant(t.revocationDate)), ("signed_date", instant(t.signedDate)),
        ]
        for (column, value) in signed where unformula(row[column] ?? "") != value {
            problems.append("\(column) \(row[column] ?? "") is not the signed \(value)")
        }
        problems += moneyProblems(row, t)
        return problems
    }

    /// The value before `csvCell`'s formula guard (a leading `'` it added).
    private static func unformula(_ text: String) -> String {
        guard text.hasPrefix("'"), let second = text.unicodeScalars.dropFirst().first,
              "=+-@\t\r".unicodeScalars.contains(second) else { return text }
        return String(text.dropFirst())
    }

    /// The money columns against the signed price and refund, by `Money`'s rules (commission 15 or 30 %, the row's
    /// tax rate).
    static func moneyProblems(_ row: [String: String], _ t: JWSTransaction) -> [String] {
        guard let currency = row["currency"], !currency.isEmpty else {
            return t.price.map { _ in ["no money columns for a priced transaction"] } ?? []
        }
        func int(_ column: String) -> Int64? { row[column].flatMap { Int64(unformula($0)) } }
        var problems: [String] = []
        if currency != t.currency { problems.append("currency \(currency) is not the signed \(t.currency ?? "none")") }
        guard let price = int("price_milli"), price == (t.price ?? 0) else {
            return problems + ["price_milli \(row["price_milli"] ?? "") is not the signed \(t.price.map(String.init) ?? "none")"]
        }
        let pct = Money.refundedMilliPercent(revoked: t.revocationDate != nil, type: t.revocationType?.rawValue,
                                             percentage: t.revocationPercentage)
        guard let commission = int("commission_percent"), commission == 15 || commission == 30 else {
            return problems + ["commission_percent is neither 15 nor 30"]
        }
        // The tax rate is the operator's, not Apple's: the row's own (none in an export before tax rates, 0 %).
        let taxText = unformula(row["tax_rate"] ?? "")
        guard let tax = taxText.isEmpty ? 0 : TaxRate.milliPercent(taxText) else {
            return problems + ["tax_rate \(taxText) is not a percent from 0 to below 100"]
        }
        let proceeds = Money.proceeds(priceMilli: price, commissionPercent: Int(commission), taxMilliPercent: tax)
        var expected: [(String, Int64)] = [
            ("proceeds_milli", proceeds), ("refund_milli_percent", Int64(pct)),
            ("refunded_milli", Money.share(price, milliPercent: pct)),
            ("net_milli", proceeds - Money.share(proceeds, milliPercent: pct)),
        ]
        if row["tax_milli"] != nil { expected.append(("tax_milli", Money.tax(priceMilli: price, taxMilliPercent: tax))) }
        for (column, value) in expected where int(column) != value {
            problems.append("\(column) \(row[column] ?? "") is not \(value) (from the signed price and refund)")
        }
        return problems
    }
}
