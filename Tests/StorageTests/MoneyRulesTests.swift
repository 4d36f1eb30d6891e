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

    /// Tax included in a price and proceeds after it (README "Money"): the same in both languages on every price and
    /// rate, and figures computed by hand.
    func testTaxAndProceedsAfterTaxAgree() throws {
        for price in Self.prices + [-9990] {
            for rate in [0, 1, 5_000, 7_700, 10_000, 19_000, 20_000, 25_500, 99_999] {
                XCTAssertEqual(try sql("SELECT bouncer_money_tax(\(price)::int8, \(rate)::int)"),
                               Money.tax(priceMilli: price, taxMilliPercent: rate), "tax of \(price) at \(rate)")
                for percent in [15, 30] {
                    XCTAssertEqual(try sql("SELECT bouncer_money_proceeds(\(price)::int8, \(percent)::int, \(rate)::int)"),
                                   Money.proceeds(priceMilli: price, commissionPercent: percent, taxMilliPercent: rate),
                                   "\(price) at \(percent) % after \(rate)")
                }
            }
        }
        // By hand. 9.99 EUR at 19 %: tax 9990 × 19 / 119 = 1595.04 → 1595; 8395 before commission.
        XCTAssertEqual(Money.tax(priceMilli: 9990, taxMilliPercent: 19_000), 1595)
        // 30 %: 8395 × 0.3 = 2518.5 → 2519 (half away from zero), proceeds 5876; 15 %: 1259.25 → 1259, 7136.
        XCTAssertEqual(Money.proceeds(priceMilli: 9990, commissionPercent: 30, taxMilliPercent: 19_000), 5876)
        XCTAssertEqual(Money.proceeds(priceMilli: 9990, commissionPercent: 15, taxMilliPercent: 19_000), 7136)
        // ¥1,200 at 10 %: tax 1,200,000 / 11 = 109,090.9 → 109,091; 1,090,909 × 0.3 = 327,272.7 → 327,273;
        // proceeds 763,636.
        XCTAssertEqual(Money.tax(priceMilli: 1_200_000, taxMilliPercent: 10_000), 109_091)
        XCTAssertEqual(Money.proceeds(priceMilli: 1_200_000, commissionPercent: 30, taxMilliPercent: 10_000), 763_636)
        // 0 %: before tax, the two-argument rule (9990 × 0.3 = 2997 → 6993).
        XCTAssertEqual(Money.proceeds(priceMilli: 9990, commissionPercent: 30, taxMilliPercent: 0), 6993)
        // A prorated refund of 25 % of the 19 % sale: refunded proceeds 5876 × 0.25 = 1469, net 4407.
        XCTAssertEqual(5876 - Money.share(5876, milliPercent: 25_000), 4407)
        XCTAssertEqual(try sql("""
            SELECT p - bouncer_money_share(p, 25000) FROM (SELECT bouncer_money_proceeds(9990::int8, 30, 19000) AS p) x
            """), 4407)
    }

    func testTaxRateTextRoundTrips() {
        for (text, milli) in [("0", 0), ("19", 19_000), ("7.7", 7_700), ("8.125", 8_125), ("0.001", 1), ("99.999", 99_999),
                              ("5.50", 5_500), ("05", 5_000)] {
            XCTAssertEqual(TaxRate.milliPercent(text), milli, text)
        }
        for text in ["", "100", "020", "-1", "+5", "1e1", "19.", ".5", "1.2345", "19 ", " 19", "1,5", "1..2", "123456789"] {
            XCTAssertNil(TaxRate.milliPercent(text), text)
        }
        for milli in [0, 1, 10, 100, 7_700, 8_125, 19_000, 99_999] {
            XCTAssertEqual(TaxRate.milliPercent(TaxRate.text(milliPercent: milli)), milli)
        }
        XCTAssertEqual(TaxRate.text(milliPercent: 19_000), "19")
        XCTAssertEqual(TaxRate.text(milliPercent: 7_700), "7.7")
        XCTAssertEqual(TaxRate.text(milliPercent: 50), "0.05")
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

    /// `bouncer_money_rates` (a chart's range at once) against `bouncer_money_rate` (one currency and day) on every
    /// currency, target and day of rates with four bases, gaps of days, a currency quoted in several bases on the same
    /// day (the tie its latest-base lookup breaks), a base that is no currency's row, and currencies with no rate: the
    /// same rates to the digit (compared as text: the same divisions give the same scales), NULL where one is NULL.
    func testRatesSetBasedAgreeWithRate() throws {
        try s.pool.withConnection { c in
            _ = try c.execute("BEGIN")
            defer { _ = try? c.execute("ROLLBACK") }
            _ = try c.execute("""
                INSERT INTO exchange_rates (day, base, currency, rate)
                SELECT date '2026-01-01' + d, b, x, round((1 + (abs(hashtext(b || x || d)) % 100000) / 1000.0)::numeric,
                    4 + abs(hashtext(x || d)) % 3)
                FROM generate_series(0, 60) d, unnest('{EUR,USD,GBP,XAU}'::text[]) b,
                    unnest('{AUD,BRL,CAD,EUR,USD,GBP,JPY,XAU}'::text[]) x
                WHERE b <> x AND abs(hashtext(b || x || d || 'x')) % 4 = 0
                ON CONFLICT DO NOTHING
                """)
            let rows = try c.query("""
                SELECT count(*) AS n, count(r.rate) AS rated,
                    count(*) FILTER (WHERE r.rate::text IS NOT DISTINCT FROM o.rate::text) AS same,
                    (SELECT count(*) FROM (SELECT 1 FROM exchange_rates e GROUP BY e.currency, e.day
                        HAVING count(*) > 1) k) AS ties
                FROM unnest('{USD,EUR,JPY,GBP,XAU,ZZZ}'::text[]) t,
                    LATERAL bouncer_money_rates('{AUD,BRL,CAD,EUR,USD,GBP,JPY,INR,XAU,ZZZ,AUD}', t,
                        date '2025-12-25', date '2026-03-10') r,
                    LATERAL (SELECT bouncer_money_rate(r.currency, t, r.day) AS rate) o
                """)
            let row = try XCTUnwrap(rows.first)
            let n = try row.decode("n", as: Int64.self)
            XCTAssertEqual(n, 6 * 10 * 76)
            XCTAssertEqual(try row.decode("same", as: Int64.self), n)
            XCTAssertGreaterThan(try row.decode("rated", as: Int64.self), n / 2)
            XCTAssertGreaterThan(try row.decode("ties", as: Int64.self), 0)
        }
    }
}
