public import Foundation

/// Money, computed once (issue 26; README "Revenue and charts"). Amounts are Apple's milli-units (`price` 9990 is
/// 9.99 in `currency`), integers end to end: no floating point touches an amount or a rate. Each rule rounds once,
/// half away from zero, to the milli-unit.
///
/// The roll-ups apply these rules in SQL, next to the rows (`schema/functions/bouncer_money_*.sql`: proceeds, share,
/// refund_share, commission, convert, monthly); `StorageTests.MoneyRulesTests` runs both on the same table of cases,
/// so the two copies cannot drift. This file is the one Swift author: the API, the CLI and the tests use it.
public enum Money {
    /// Apple's commission in percent: 15 in the Small Business Program, and for an auto-renewable subscription's
    /// transaction that begins after one year (365 days) of paid service in its subscription group; else 30.
    public static func commissionPercent(smallBusiness: Bool, subscription: Bool, paidDaysBefore: Int) -> Int {
        smallBusiness || (subscription && paidDaysBefore >= 365) ? 15 : 30
    }

    /// Proceeds: `price − round(price × percent / 100)`. Before tax (Apple's signed data carries none).
    public static func proceeds(priceMilli: Int64, commissionPercent: Int) -> Int64 {
        priceMilli - rounded(Int128(priceMilli) * Int128(commissionPercent), dividedBy: 100)
    }

    /// The tax included in a price at a storefront's rate (`TaxRate`, milli-percent: 19 % is 19000):
    /// `round(price × rate / (100000 + rate))`; 0 at a rate of 0 or less.
    public static func tax(priceMilli: Int64, taxMilliPercent: Int) -> Int64 {
        guard taxMilliPercent > 0 else { return 0 }
        return rounded(Int128(priceMilli) * Int128(taxMilliPercent), dividedBy: 100_000 + Int128(taxMilliPercent))
    }

    /// Proceeds after tax: Apple remits the tax included in the price and takes its commission on the rest, so
    /// `proceeds(price − tax, percent)`, each step rounded once. At a rate of 0, `proceeds(priceMilli:commissionPercent:)`.
    public static func proceeds(priceMilli: Int64, commissionPercent: Int, taxMilliPercent: Int) -> Int64 {
        // |tax| ≤ |price| for any rate, so the difference fits.
        proceeds(priceMilli: priceMilli - tax(priceMilli: priceMilli, taxMilliPercent: taxMilliPercent),
                 commissionPercent: commissionPercent)
    }

    /// The refunded share of an amount: `round(amount × milliPercent / 100000)` (`revocationPercentage` is in
    /// milli-percent; 100000 is all of it).
    public static func share(_ amountMilli: Int64, milliPercent: Int) -> Int64 {
        rounded(Int128(amountMilli) * Int128(milliPercent), dividedBy: 100_000)
    }

    /// The milli-percent of a transaction refunded: none while not revoked; `REFUND_PRORATED`: its
    /// `revocationPercentage` (clamped to 0…100000); `FAMILY_REVOKE`: none (access withdrawn, nobody refunded);
    /// `REFUND_FULL` or a revocation without a type (before December 2025): all of it.
    public static func refundedMilliPercent(revoked: Bool, type: String?, percentage: Int64?) -> Int {
        guard revoked else { return 0 }
        switch type {
        case "REFUND_PRORATED": return Int(min(max(percentage ?? 100_000, 0), 100_000))
        case "FAMILY_REVOKE": return 0
        default: return 100_000
        }
    }

    /// A subscription transaction's monthly price (its share of MRR): a period of at most 10 days is weekly
    /// (× 52 / 12); a longer one is n months, n = its days ÷ 30.4375 rounded (at least 1). `periodSeconds` is
    /// expiry − purchase.
    public static func monthly(priceMilli: Int64, periodSeconds: Int64) -> Int64 {
        let days = rounded(Int128(periodSeconds), dividedBy: 86_400)
        if days <= 10 { return rounded(Int128(priceMilli) * 52, dividedBy: 12) }
        // days / 30.4375 = days × 10000 / 304375
        let months = max(rounded(Int128(days) * 10_000, dividedBy: 304_375), 1)
        return rounded(Int128(priceMilli), dividedBy: Int128(months))
    }

    /// `round(amount × rate)`, nil when it does not fit 64 bits.
    public static func convert(_ amountMilli: Int64, rate: ExchangeRate.Value) -> Int64? {
        let (product, overflow) = Int128(amountMilli).multipliedReportingOverflow(by: Int128(rate.mantissa))
        guard !overflow else { return nil }
        return Int64(exactly: roundedWide(product, dividedBy: ExchangeRate.Value.power(rate.scale)))
    }

    /// `n / d` rounded half away from zero (`d` > 0), as an `Int64`: callers pass quotients that fit.
    static func rounded(_ n: Int128, dividedBy d: Int128) -> Int64 {
        Int64(clamping: roundedWide(n, dividedBy: d))
    }

    static func roundedWide(_ n: Int128, dividedBy d: Int128) -> Int128 {
        let q = n / d
        let r = n % d
        guard r.magnitude * 2 >= d.magnitude else { return q }
        return n < 0 ? q - 1 : q + 1
    }
}

/// Published exchange rates: on `day`, one unit of `base` buys `rate` units of each currency.
public struct ExchangeRate: Sendable, Equatable {
    public var day: Date
    public var base: String
    public var currency: String
    public var rate: Value

    public init(day: Date, base: String, currency: String, rate: Value) {
        self.day = day
        self.base = base
        self.currency = currency
        self.rate = rate
    }

    /// An exact positive decimal (`1.0921` is mantissa 10921, scale 4): at most 18 significant digits and 12
    /// fractional ones; parsed from its text, never through a `Double`.
    public struct Value: Sendable, Equatable {
        public let mantissa: Int64
        public let scale: Int

        /// `digits[.digits]`, > 0; nil otherwise (no sign, exponent or spaces).
        public init?(_ text: String) {
            guard let decimal = Self.decimal(text), decimal.mantissa > 0, decimal.scale <= 12 else { return nil }
            self.mantissa = decimal.mantissa
            self.scale = decimal.scale
        }

        /// `digits[.digits]` as an exact decimal: its digits as an integer, how many follow the point, how many
        /// precede it; nil for anything else (no sign, exponent or spaces), more than 32 bytes or 18 significant
        /// digits. The one reader of decimal text (exchange rates, tax rates).
        static func decimal(_ text: String) -> (mantissa: Int64, scale: Int, whole: Int)? {
            let bytes = Array(text.utf8)
            guard !bytes.isEmpty, bytes.count <= 32 else { return nil }
            var mantissa: Int64 = 0
            var scale = 0
            var whole = 0
            var seenPoint = false
            var digits = 0
            for (i, b) in bytes.enumerated() {
                if b == UInt8(ascii: ".") {
                    guard !seenPoint, i > 0, i < bytes.count - 1 else { return nil }
                    seenPoint = true
                    continue
                }
                guard (0x30...0x39).contains(b) else { return nil }
                if mantissa > 0 || b != 0x30 { digits += 1 }
                guard digits <= 18 else { return nil }
                mantissa = mantissa * 10 + Int64(b - 0x30)
                if seenPoint { scale += 1 } else { whole += 1 }
            }
            return (mantissa, scale, whole)
        }

        /// The decimal text (trailing fractional zeros kept as given): what PostgreSQL's `numeric` stores.
        public var text: String {
            guard scale > 0 else { return String(mantissa) }
            var digits = String(mantissa)
            if digits.count <= scale { digits = String(repeating: "0", count: scale - digits.count + 1) + digits }
            let point = digits.index(digits.endIndex, offsetBy: -scale)
            return String(digits[..<point]) + "." + String(digits[point...])
        }

        static func power(_ scale: Int) -> Int128 {
            var p: Int128 = 1
            for _ in 0..<scale { p *= 10 }
            return p
        }
    }

    /// An ISO 4217 code as Apple signs `currency`: three ASCII capital letters.
    public static func isCurrencyCode(_ text: String) -> Bool {
        text.utf8.count == 3 && text.utf8.allSatisfy { (0x41...0x5A).contains($0) }
    }
}

/// The operator's tax rate for a storefront from a day on (`PUT /v1/admin/tax-rates`, table `tax_rates`): the VAT or
/// GST included in that storefront's prices, which Apple remits before its commission. A transaction uses its
/// storefront's rate in force on its purchase day (the latest dated on or before it); none is 0 %.
public struct TaxRate: Sendable, Equatable {
    public var day: Date
    /// Apple's `storefront`: ISO 3166-1 alpha-3.
    public var storefront: String
    /// The rate in milli-percent: 19 % is 19000; 0 ≤ rate < 100000.
    public var milliPercent: Int

    public init(day: Date, storefront: String, milliPercent: Int) {
        self.day = day
        self.storefront = storefront
        self.milliPercent = milliPercent
    }

    /// A percent as exact decimal text (`19`, `7.7`, `8.125`): 1 or 2 digits, then optionally a point and 1 to 3
    /// digits; its milli-percent, nil otherwise (no sign, exponent or spaces; never through a `Double`).
    public static func milliPercent(_ text: String) -> Int? {
        guard let decimal = ExchangeRate.Value.decimal(text), decimal.whole <= 2, decimal.scale <= 3 else { return nil }
        var milli = decimal.mantissa
        for _ in decimal.scale..<3 { milli *= 10 }
        return Int(milli)
    }

    /// The shortest decimal text of a milli-percent (19000 is `19`, 7700 `7.7`, 8125 `8.125`): what
    /// `milliPercent(_:)` reads back.
    public static func text(milliPercent: Int) -> String {
        let whole = String(milliPercent / 1000)
        var fraction = String(milliPercent % 1000)
        guard milliPercent % 1000 != 0, milliPercent >= 0 else { return whole }
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return whole + "." + fraction
    }

    /// Apple's `storefront`: three ASCII capital letters (ISO 3166-1 alpha-3).
    public static func isStorefront(_ text: String) -> Bool {
        ExchangeRate.isCurrencyCode(text)
    }
}

/// A project's money settings (`revenue_settings`): Small Business Program membership (Apple's 15 % commission on
/// every sale) and the currency its charts report in.
public struct RevenueSettings: Sendable, Equatable {
    public var smallBusinessProgram: Bool
    public var reportingCurrency: String
    /// Whether the operator has configured tax rates (`tax_rates`, for every project): then proceeds are after the
    /// tax of each transaction's storefront (`proceeds_basis` `after_tax`), else before tax. Not a project setting:
    /// read with them by the answers that show money.
    public var taxRatesConfigured: Bool

    public static let standard = RevenueSettings(smallBusinessProgram: false, reportingCurrency: "USD")

    public init(smallBusinessProgram: Bool, reportingCurrency: String, taxRatesConfigured: Bool = false) {
        self.smallBusinessProgram = smallBusinessProgram
        self.reportingCurrency = reportingCurrency
        self.taxRatesConfigured = taxRatesConfigured
    }

    /// `after_tax` or `before_tax`: what the API says proceeds and net are (README "Money").
    public var proceedsBasis: String { taxRatesConfigured ? "after_tax" : "before_tax" }
}
