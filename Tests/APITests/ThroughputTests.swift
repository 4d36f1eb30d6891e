import Domain
import Foundation
import HTTPCore
import XCTest

/// The API layer's own cost per request (routing, parsing, rendering) over in-memory ports, on one thread.
/// Prints req/s; the bound is loose (debug builds, a shared machine) and only catches pathological regressions.
final class ThroughputTests: XCTestCase {
    func testHandlerThroughput() {
        let h = Harness()
        h.register("a.b.c", facts())
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "user_123").status, 201)
        // API_BENCH_ITERATIONS raises the count for profiling (perf record on the release test binary).
        let iterations = ProcessInfo.processInfo.environment["API_BENCH_ITERATIONS"].flatMap { Int($0) } ?? 3000
        let body = #"{"signed_transaction_info":"a.b.c","user_id":"user_123","device_id":"d1"}"#
        let post = rate(iterations) {
            h.send(.post, "/v1/receipts/\(Harness.publicKey)", headers: [("Content-Type", "application/json")], body: body)
        }
        let get = rate(iterations) { h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/user_123") }
        print("API handler throughput (in-process, fakes, 1 thread): POST \(Int(post)) req/s, GET \(Int(get)) req/s")
        XCTAssertGreaterThan(post, 500)
        XCTAssertGreaterThan(get, 500)
    }

    private func rate(_ n: Int, _ call: () -> Response) -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<n { XCTAssertLessThan(call().status, 300) }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return Double(n) / elapsed
    }
}
