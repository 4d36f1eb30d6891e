import Foundation
import JSON
import Postgres
import XCTest

/// Figures for deploy/citus.md (run with BOUNCER_BENCH=1; skipped otherwise, like the other benchmarks): the same
/// sequential receipts and reads against `bouncer serve` on one node and on the Citus cluster (all nodes on this
/// machine's cores: overhead, not scale), with what the coordinator adds per receipt (`citus_stat_counters`).
final class CitusFiguresE2ETests: XCTestCase {
    private struct Figures {
        var post: [Double]
        var get: [Double]
    }

    private func measure(databaseURL: String, count: Int) throws -> Figures {
        let server = try BouncerProcess(databaseURL: databaseURL)
        defer { server.stopAndAssertCleanExit() }
        let api = API(client: server.client)
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let receipts = try (0..<count).map { _ in try TransactionPayload(bundleId: tenant.bundleId).mint() }
        var figures = Figures(post: [], get: [])
        for (index, jws) in receipts.enumerated() {
            let start = Date()
            let r = try api.postReceipt(tenant.publicKey, jws, user: "u\(index)")
            figures.post.append(Date().timeIntervalSince(start) * 1000)
            XCTAssertEqual(r.status, 201, r.description)
        }
        for index in 0..<count {
            let start = Date()
            let r = try api.user(tenant.publicKey, "u\(index)")
            figures.get.append(Date().timeIntervalSince(start) * 1000)
            XCTAssertEqual(r.status, 200, r.description)
        }
        return figures
    }

    private static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }

    private static func load() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3)
            .joined(separator: " ")
    }

    func testLatencyAndCoordinatorWorkPerReceipt() throws {
        guard ProcessInfo.processInfo.environment["BOUNCER_BENCH"] == "1" else {
            throw XCTSkip("set BOUNCER_BENCH=1 to run")
        }
        let citus = try CitusCluster.sharedOrSkip()
        let count = 200
        let single = try E2EDatabase(label: "figures_single", cluster: TestDatabase.cluster())
        let one = try measure(databaseURL: single.url, count: count)

        let name = try citus.bouncerDatabase(label: "figures")
        let coordinator = try Connection(settings: citus.coordinator.settings.database(name))
        try coordinator.executeScript(unsafeSQL: "ALTER DATABASE \(name) SET citus.enable_stat_counters = on")
        let counters = "SELECT row_to_json(c)::text AS c FROM citus_stat_counters c WHERE c.name = current_database()"
        let before = try coordinator.query(Query(unsafeSQL: counters)).first?.decode("c", as: String.self) ?? "none"
        let cluster = try measure(databaseURL: citus.url(database: name), count: count)
        let after = try coordinator.query(Query(unsafeSQL: counters)).first?.decode("c", as: String.self) ?? "none"

        func line(_ label: String, _ f: Figures) -> String {
            String(format: "RESULT citus-figures %@: POST p50 %.2f ms p90 %.2f ms, GET p50 %.2f ms p90 %.2f ms (n=%d, load %@)",
                   label, Self.percentile(f.post, 0.5), Self.percentile(f.post, 0.9), Self.percentile(f.get, 0.5),
                   Self.percentile(f.get, 0.9), count, Self.load())
        }
        print(line("one node", one))
        print(line("citus (coordinator + 2 workers)", cluster))
        print("RESULT citus-figures counters before: \(before)")
        print("RESULT citus-figures counters after \(count) POST + \(count) GET (+ setup): \(after)")
    }
}
