import Domain
import Foundation
import Postgres
@testable import Storage
import XCTest

/// Money's rules in both languages (issue 26): `Money` (Swift) against `bouncer_money_*` (SQL, which the charts'
/// roll-ups use), on the same table of cases, boundaries and rounding ties included.
final class MoneyRulesTests: XCTestCase {
    private var s: TestStores!

    override func setUpWithError() throws {
        s = try TestStores.make(label: "money", poolSize: 1)
    }

    override func tearDown() {
        s?.close()
    }

    static let prices: [Int64] = [0, 1, 5, 10, 15, 50, 333, 990, 4990, 9990, 14_990, 59_990, 999_990, 1_000_000_000_000]

    private func sql(_ query: Query) throws -> Int64 {
        try s.pool.withConnection { c in
            let rows = try c.query(query)
            return try XCTUnwrap(rows.first).decode(at: 0, as: Int64.self)
        }
    }

    func testProceedsShareAndCommissionAgree() throws {
        for price in Self.prices {
            for percent in [15, 30] {
                XCTAssertEqual(try sql("SELECT bouncer_money_proceeds(\(price)::int8, \(percent)::int)"),
                               Money.proceeds(priceMilli: price, commissionPercent: percent), "\(price) at \(percent)")
            }
            for milli in [0, 1, 15, 40_000, 50_000, 67_932, 99_999, 100_000] {
                XCTAssertEqual(try sql("SELECT bouncer_money_share(\(price)::int8, \(milli)::int)"),
                               Money.share(price, milliPercent: milli), "\(price) × \(milli)")
            }
        }
        for sbp in [false, true] {
            for sub in [false, true] {
                for days in [0, 364, 365, 900] {
                    XCTAssertEqual(try sql("SELECT bouncer_money_commission(\(sbp), \(sub), \(days)::int)::int8"),
                                   Int64(Money.commissionPercent(smallBusiness: sbp, subscription: sub, paidDaysBefore: days)))
                }
            }
        }
    }

    func testRefundPercentMonthlyAndConversionAgree() throws {
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        for type: String? in [nil, "REFUND_FULL", "REFUND_PRORATED", "FAMILY_REVOKE", "OTHER"] {
            for percentage: Int64? in [nil, -5, 0, 67_932, 100_000, 250_000] {
                for revoked in [false, true] {
                    XCTAssertEqual(
                        try sql("""
                            SELECT bouncer_money_refund_share(\(revoked ? at : nil)::timestamptz, \(type)::text,
                                \(percentage)::int8)::int8
                            """),
                        Int64(Money.refundedMilliPercent(revoked: revoked, type: type, percentage: percentage)),
                        "\(String(describing: type)) \(String(describing: percentage)) \(revoked)")
                }
            }
        }
        for price in Self.prices {
            for days in [1, 3, 7, 10, 11, 28, 30, 31, 45, 60, 91, 182, 365, 366] {
                let seconds = Int64(days) * 86_400
                XCTAssertEqual(
                    try sql("""
                        SELECT bouncer_money_monthly(\(price)::int8, \(at)::timestamptz,
                            \(at.addingTimeInterval(Double(seconds)))::timestamptz)
                        """),
                    Money.monthly(priceMilli: price, periodSeconds: seconds), "\(price) over \(days) days")
            }
            for rate in ["1", "1.0921", "0.9156", "158.61", "0.000001", "7.46"] {
                let value = try XCTUnwrap(ExchangeRate.Value(rate))
                XCTAssertEqual(try sql("SELECT bouncer_money_convert(\(price)::int8, \(rate)::numeric)"),
                               Money.convert(price, rate: value), "\(price) at \(rate)")
            }
        }
    }
}
