import Foundation
import XCTest
@testable import Metrics

final class MetricsRegistryTests: XCTestCase {
    func testCountersRenderInTextFormatWithSortedSeries() {
        let registry = MetricsRegistry()
        let requests = registry.counter("http_requests_total", help: "Requests.", labels: ["route", "status"])
        requests.increment(["/b", "200"])
        requests.increment(["/a", "404"], by: 2)
        requests.increment(["/a", "200"])
        requests.increment(["/a", "200"])
        XCTAssertEqual(registry.render(), """
            # HELP http_requests_total Requests.
            # TYPE http_requests_total counter
            http_requests_total{route="/a",status="200"} 2
            http_requests_total{route="/a",status="404"} 2
            http_requests_total{route="/b",status="200"} 1

            """)
        XCTAssertEqual(requests.value(["/a", "200"]), 2)
        XCTAssertEqual(requests.value(["/zzz", "200"]), 0)
    }

    func testUnlabelledGaugeAndWrongLabelCountIsIgnored() {
        let registry = MetricsRegistry()
        let gauge = registry.gauge("temperature", help: "Degrees.")
        gauge.set(21.5)
        gauge.add(-1)
        gauge.set(99, ["unexpected"])  // wrong arity: dropped, never a crash
        XCTAssertEqual(registry.render(), """
            # HELP temperature Degrees.
            # TYPE temperature gauge
            temperature 20.5

            """)
    }

    func testHistogramBucketsAreCumulativeWithSumAndCount() {
        let registry = MetricsRegistry()
        let h = registry.histogram("latency_seconds", help: "Latency.", labels: ["route"], buckets: [1, 0.1, 0.5])
        for v in [0.05, 0.1, 0.3, 2.0] { h.observe(v, ["/x"]) }
        h.observe(.nan, ["/x"])
        XCTAssertEqual(h.count(["/x"]), 4)
        XCTAssertEqual(registry.render(), """
            # HELP latency_seconds Latency.
            # TYPE latency_seconds histogram
            latency_seconds_bucket{route="/x",le="0.1"} 2
            latency_seconds_bucket{route="/x",le="0.5"} 3
            latency_seconds_bucket{route="/x",le="1"} 3
            latency_seconds_bucket{route="/x",le="+Inf"} 4
            latency_seconds_sum{route="/x"} 2.45
            latency_seconds_count{route="/x"} 4

            """)
    }

    func testLabelValuesAndHelpAreEscaped() {
        let registry = MetricsRegistry()
        let c = registry.counter("odd_total", help: "Back\\slash\nnewline.", labels: ["v"])
        c.increment(["a\"b\\c\nd"])
        XCTAssertEqual(registry.render(), """
            # HELP odd_total Back\\\\slash\\nnewline.
            # TYPE odd_total counter
            odd_total{v="a\\"b\\\\c\\nd"} 1

            """)
    }

    func testCallbackFamiliesAreReadAtRenderTime() {
        let registry = MetricsRegistry()
        let source = Source()
        registry.callback("pool_connections", help: "Pool.", type: .gauge, labels: ["state"]) {
            [MetricSample(["idle"], Double(source.value)), MetricSample(["in_use", "extra"], 1)]
        }
        source.value = 3
        XCTAssertTrue(registry.render().hasSuffix("pool_connections{state=\"idle\"} 3\n"))
        source.value = 7
        XCTAssertTrue(registry.render().hasSuffix("pool_connections{state=\"idle\"} 7\n"))
        XCTAssertFalse(registry.render().contains("in_use"), "samples with the wrong label count are skipped")
    }

    func testSeriesPerFamilyAreCappedAndDropsCounted() {
        let registry = MetricsRegistry(maxSeriesPerFamily: 2)
        let c = registry.counter("types_total", help: "Types.", labels: ["type"])
        for t in ["a", "b", "c", "d", "a"] { c.increment([t]) }
        XCTAssertEqual(registry.render(), """
            # HELP types_total Types.
            # TYPE types_total counter
            types_total{type="a"} 2
            types_total{type="b"} 1
            # HELP metrics_series_dropped_total Increments dropped because a family reached its label-combination cap.
            # TYPE metrics_series_dropped_total counter
            metrics_series_dropped_total 2

            """)
    }

    func testNumberFormatting() {
        XCTAssertEqual(Exposition.format(3.0), "3")
        XCTAssertEqual(Exposition.format(0.005), "0.005")
        XCTAssertEqual(Exposition.format(-2.0), "-2")
        XCTAssertEqual(Exposition.format(Double.infinity), "+Inf")
        XCTAssertEqual(Exposition.format(-Double.infinity), "-Inf")
        XCTAssertEqual(Exposition.format(Double.nan), "NaN")
        XCTAssertEqual(Exposition.format(1e20), "1e+20")
        XCTAssertEqual(Exposition.format(UInt64.max), "18446744073709551615")
    }

    func testConcurrentIncrementsAreNotLost() {
        let registry = MetricsRegistry()
        let c = registry.counter("hits_total", help: "Hits.", labels: ["k"])
        let h = registry.histogram("d", help: "D.", buckets: [1])
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for _ in 0..<1000 {
                c.increment([String(i % 2)])
                h.observe(0.5)
            }
        }
        XCTAssertEqual(c.value(["0"]), 4000)
        XCTAssertEqual(c.value(["1"]), 4000)
        XCTAssertEqual(h.count(), 8000)
    }
}

/// A value a callback reads; the test mutates it between renders on one thread.
final class Source: @unchecked Sendable {
    var value = 0
}
