import Domain
import XCTest

/// Money's rules (issue 26) on hand-computed cases. `StorageTests.MoneyRulesTests` runs the same table through the
/// SQL twins.
final class MoneyTests: XCTestCase {
    /// (price, commission %, proceeds): price − round(price × % / 100), half away from zero.
    static let proceeds: [(Int64, Int, Int64)] = [
        (9990, 30, 6993), (9990, 15, 8491), (4990, 30, 3493), (4990, 15, 4241), (1, 30, 1), (5, 30, 3),
        (50, 15, 42), (0, 30, 0), (999_990, 30, 699_993), (10, 15, 8), (1_000_000_000_000, 30, 700_000_000_000),
    ]
    /// (amount, milli-percent, share): round(amount × m / 100000).
    static let shares: [(Int64, Int, Int64)] = [
        (9990, 100_000, 9990), (9990, 50_000, 4995), (6993, 50_000, 3497), (6993, 67_932, 4750), (9990, 15, 1),
        (9990, 0, 0), (3, 50_000, 2), (8492, 40_000, 3397),
    ]
    /// (price, period seconds, monthly).
    static let monthly: [(Int64, Int64, Int64)] = [
        (9990, 30 * 86_400, 9990), (9990, 31 * 86_400, 9990), (4990, 28 * 86_400, 4990), (2990, 7 * 86_400, 12957),
        (59_990, 365 * 86_400, 4999), (59_990, 366 * 86_400, 4999), (14_990, 91 * 86_400, 4997),
        (29_990, 182 * 86_400, 4998), (1000, 3 * 86_400, 4333),
    ]

    func testProceedsRoundOnceHalfAwayFromZero() {
        for (price, percent, expected) in Self.proceeds {
            XCTAssertEqual(Money.proceeds(priceMilli: price, commissionPercent: percent), expected, "\(price) at \(percent) %")
        }
    }

    func testRefundedShare() {
        for (amount, milli, expected) in Self.shares {
            XCTAssertEqual(Money.share(amount, milliPercent: milli), expected, "\(amount) × \(milli)")
        }
    }

    func testMonthlyPriceByPeriod() {
        for (price, seconds, expected) in Self.monthly {
            XCTAssertEqual(Money.monthly(priceMilli: price, periodSeconds: seconds), expected, "\(price) over \(seconds) s")
        }
    }

    func testCommissionFollowsTheSmallBusinessProgramAndTheOneYearRule() {
        XCTAssertEqual(Money.commissionPercent(smallBusiness: false, subscription: true, paidDaysBefore: 0), 30)
        XCTAssertEqual(Money.commissionPercent(smallBusiness: false, subscription: true, paidDaysBefore: 364), 30)
        XCTAssertEqual(Money.commissionPercent(smallBusiness: false, subscription: true, paidDaysBefore: 365), 15)
        XCTAssertEqual(Money.commissionPercent(smallBusiness: false, subscription: false, paidDaysBefore: 900), 30)
        XCTAssertEqual(Money.commissionPercent(smallBusiness: true, subscription: false, paidDaysBefore: 0), 15)
        XCTAssertEqual(Money.commissionPercent(smallBusiness: true, subscription: true, paidDaysBefore: 0), 15)
    }

    func testRefundedPercentByRevocationType() {
        XCTAssertEqual(Money.refundedMilliPercent(revoked: false, type: "REFUND_FULL", percentage: nil), 0)
        XCTAssertEqual(Money.refundedMilliPercent(revoked: true, type: nil, percentage: nil), 100_000)
        XCTAssertEqual(Money.refundedMilliPercent(revoked: true, type: "REFUND_FULL", percentage: nil), 100_000)
        XCTAssertEqual(Money.refundedMilliPercent(revoked: true, type: "REFUND_PRORATED", percentage: 67_932), 67_932)
        XCTAssertEqual(Money.refundedMilliPercent(revoked: true, type: "REFUND_PRORATED", percentage: 250_000), 100_000)
        XCTAssertEqual(Money.refundedMilliPercent(revoked: true, type: "REFUND_PRORATED", percentage: -5), 0)
        XCTAssertEqual(Money.refundedMilliPercent(revoked: true, type: "FAMILY_REVOKE", percentage: nil), 0)
    }

    func testRatesAreExactDecimals() throws {
        for (text, mantissa, scale) in [("1.0921", Int64(10921), 4), ("158.61", 15861, 2), ("1", 1, 0),
                                        ("0.000001", 1, 6), ("7.4600", 74600, 4)] {
            let value = try XCTUnwrap(ExchangeRate.Value(text), text)
            XCTAssertEqual(value.mantissa, mantissa, text)
            XCTAssertEqual(value.scale, scale, text)
            XCTAssertEqual(value.text, text)
        }
        for bad in ["", "0", "0.0", "-1", "1e3", ".5", "5.", "1.2.3", "N/A", " 1", "1234567890123456789",
                    "0.0000000000001", "１"] {
            XCTAssertNil(ExchangeRate.Value(bad), bad)
        }
        // 9.99 EUR at 1.0921 USD per EUR: 10.910079 → 10.910 USD; at 1/1.0921 the other way is the SQL's business.
        XCTAssertEqual(Money.convert(9990, rate: try XCTUnwrap(ExchangeRate.Value("1.0921"))), 10910)
        XCTAssertEqual(Money.convert(4995, rate: try XCTUnwrap(ExchangeRate.Value("1.5"))), 7493)
        XCTAssertNil(Money.convert(Int64.max, rate: try XCTUnwrap(ExchangeRate.Value("2"))))
        XCTAssertTrue(ExchangeRate.isCurrencyCode("EUR"))
        XCTAssertFalse(ExchangeRate.isCurrencyCode("eur"))
        XCTAssertFalse(ExchangeRate.isCurrencyCode("EURO"))
    }

    func testRatiosHaveFourDecimals() {
        XCTAssertEqual(ChartResult.ratio(1, 2), "0.5000")
        XCTAssertEqual(ChartResult.ratio(1, 3), "0.3333")
        XCTAssertEqual(ChartResult.ratio(2, 3), "0.6667")
        XCTAssertEqual(ChartResult.ratio(3, 3), "1.0000")
        XCTAssertNil(ChartResult.ratio(0, 0))
        // A per-customer net below zero (a refund converted at a dearer day's rate than its sale) keeps its sign.
        XCTAssertEqual(ChartResult.ratio(-1, 20), "-0.0500")
        XCTAssertEqual(ChartResult.ratio(-68910, 3), "-22970.0000")
        XCTAssertEqual(ChartResult.ratio(-1, 30_000), "0.0000")
        XCTAssertNil(ChartResult.ratio(1, -2))
    }

    func testRetentionHasOneRatioPerMonthSince() {
        let retention = Chart.subscriptionRetention
        XCTAssertEqual(retention.measures.count, 1 + 2 * 13)
        XCTAssertEqual(retention.ratios.map(\.name), (0...12).map { "retention_\($0)" })
        for r in retention.ratios {
            let month = r.name.dropFirst("retention_".count)
            XCTAssertEqual(retention.measures[r.numerator], "retained_\(month)")
            XCTAssertEqual(retention.measures[r.denominator], "reached_\(month)")
        }
        XCTAssertEqual(Chart.realizedLTV.ratios.map(\.name), ["net_per_customer_milli"])
        XCTAssertEqual(Chart.revenue.ratios.count, 0)
    }
}
