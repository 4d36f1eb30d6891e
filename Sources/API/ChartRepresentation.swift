import Domain
import Foundation
import Primitives

/// The one writer of a chart, as JSON and as CSV (the same table).
enum ChartRepresentation {
    /// `{project_id, chart, from, to, interval, environment, product_id, country, currency, small_business_program,
    /// proceeds_basis, fresh_as_of, points: [{date, measures…, ratio?, unconverted: {CODE: {measures…}}}], totals: {…}}`.
    static func json(_ result: ChartResult, _ query: ChartQuery) -> [UInt8] {
        let chart = query.chart
        var body = JSONBody(capacity: 512 + 160 * result.points.count)
        body.beginObject()
        body.field("project_id", query.projectId.lowercasedText)
        body.field("chart", chart.rawValue)
        body.field("from", MetricsController.dayString(query.from))
        body.field("to", MetricsController.dayString(query.to.addingTimeInterval(-86_400)))
        body.field("interval", query.interval.rawValue)
        body.field("environment", query.environment?.rawValue)
        body.field("product_id", query.productId)
        body.field("country", query.country)
        body.field("currency", result.settings.reportingCurrency)
        body.field("small_business_program", result.settings.smallBusinessProgram)
        body.field("proceeds_basis", result.settings.proceedsBasis)
        body.field("fresh_as_of", result.freshAsOf)
        body.key("points")
        body.beginArray()
        for point in result.points { writePoint(point, chart, date: true, into: &body) }
        body.endArray()
        body.key("totals")
        writePoint(result.totals(chart), chart, date: false, into: &body)
        body.endObject()
        return body.bytes
    }

    private static func writePoint(_ point: ChartPoint, _ chart: Chart, date: Bool, into body: inout JSONBody) {
        body.beginObject()
        if date { body.field("date", MetricsController.dayString(point.date)) }
        writeMeasures(point.values, chart, into: &body)
        if chart.money {
            body.key("unconverted")
            body.beginObject()
            for currency in point.unconverted.keys.sorted() {
                body.key(named: currency)
                body.beginObject()
                writeMeasures(point.unconverted[currency] ?? [], chart, into: &body)
                body.endObject()
            }
            body.endObject()
        }
        body.endObject()
    }

    private static func writeMeasures(_ values: [Int64], _ chart: Chart, into body: inout JSONBody) {
        for (i, name) in chart.measures.enumerated() {
            body.key(named: name)
            body.int(values.indices.contains(i) ? values[i] : 0)
        }
        for ratio in ratios(values, chart) {
            body.key(named: ratio.name)
            if let value = ratio.value { body.string(value) } else { body.null() }
        }
    }

    private static func ratios(_ values: [Int64], _ chart: Chart) -> [(name: String, value: String?)] {
        chart.ratios.map { r in
            let n = values.indices.contains(r.numerator) ? values[r.numerator] : 0
            let d = values.indices.contains(r.denominator) ? values[r.denominator] : 0
            return (r.name, ChartResult.ratio(n, d))
        }
    }

    /// The same table as CSV (RFC 4180, formula-safe cells: `AuditLogController.csvCell`): `date,currency,measures…`
    /// (and the ratio), one row per point in the reporting currency, then one per currency without a rate, then the
    /// totals (`date` = `total`).
    static func csv(_ result: ChartResult, _ query: ChartQuery) -> String {
        let chart = query.chart
        var columns = ["date", "currency"] + chart.measures
        columns += chart.ratios.map(\.name)
        var out = columns.joined(separator: ",") + "\r\n"
        func row(_ date: String, _ currency: String, _ values: [Int64]) {
            var cells = [date, currency] + chart.measures.indices.map { values.indices.contains($0) ? String(values[$0]) : "0" }
            cells += ratios(values, chart).map { $0.value ?? "" }
            out += cells.map(AuditLogController.csvCell).joined(separator: ",") + "\r\n"
        }
        func rows(_ point: ChartPoint, _ date: String) {
            row(date, chart.money ? result.settings.reportingCurrency : "", point.values)
            for currency in point.unconverted.keys.sorted() { row(date, currency, point.unconverted[currency] ?? []) }
        }
        for point in result.points { rows(point, MetricsController.dayString(point.date)) }
        rows(result.totals(chart), "total")
        return out
    }
}
