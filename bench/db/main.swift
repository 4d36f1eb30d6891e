// bench-db: drives single-row upserts through our Postgres layer (pool + prepared statements).
// Built by bench/db/run.sh together with Sources/Postgres/*.swift; see that script.
//
//   bench-db start DIR            start/reuse a durable cluster in DIR, create bench_kv, print the socket dir
//   bench-db run DIR WORKERS SECS run the upsert for SECS seconds on WORKERS threads, print tps
//   bench-db stop DIR             stop the cluster
import Foundation
import Synchronization

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

let args = CommandLine.arguments
guard args.count >= 3 else { fail("usage: bench-db start|run|stop DIR [WORKERS SECONDS]") }
let directory = args[2]

do {
    let cluster = try LocalCluster.startOrReuse(directory: directory, durable: true) { line in
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
    switch args[1] {
    case "start":
        try cluster.createDatabase("bench")
        let c = try Connection(settings: cluster.settings.database("bench"))
        try c.executeScript(unsafeSQL: "DROP TABLE IF EXISTS bench_kv; CREATE TABLE bench_kv (k int PRIMARY KEY, v bigint NOT NULL)")
        print(cluster.socketDirectory)
    case "stop":
        try cluster.stop()
    case "run":
        guard args.count >= 5, let workers = Int(args[3]), let seconds = Double(args[4]), workers > 0 else {
            fail("usage: bench-db run DIR WORKERS SECONDS")
        }
        var settings = cluster.settings.database("bench")
        // Same session options as pgbench gets through PGOPTIONS (e.g. "-c synchronous_commit=off").
        if let options = ProcessInfo.processInfo.environment["PGOPTIONS"], !options.isEmpty {
            settings.parameters.append(("options", options))
        }
        let pool = ConnectionPool(settings: settings, configuration: .init(size: workers))
        // Open every connection (and prepare the statement) before the clock starts, as pgbench does.
        // Keys from a per-thread xorshift, like pgbench's own PRNG (Int32.random costs a getrandom syscall).
        let upsert: @Sendable (Connection, inout UInt64) throws -> Void = { c, state in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            let k = Int32(truncatingIfNeeded: state % 100_000) + 1
            try c.execute("INSERT INTO bench_kv (k, v) VALUES (\(k), 1) ON CONFLICT (k) DO UPDATE SET v = bench_kv.v + 1")
        }
        let stop = Atomic<Bool>(false)
        let total = Atomic<Int>(0)
        let errors = Atomic<Int>(0)
        let ready = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for _ in 0..<workers {
            ready.enter()
            done.enter()
            Thread.detachNewThread {
                var count = 0
                var rng = UInt64.random(in: 1...UInt64.max)
                do {
                    try pool.withConnection { c in try upsert(c, &rng) }
                    ready.leave()
                    go.wait()
                    // A pool checkout (with its health check) per statement, as a request handler does.
                    while !stop.load(ordering: .relaxed) {
                        try pool.withConnection { c in try upsert(c, &rng) }
                        count += 1
                    }
                } catch {
                    errors.add(1, ordering: .relaxed)
                    FileHandle.standardError.write(Data("worker error: \(String(reflecting: error))\n".utf8))
                }
                total.add(count, ordering: .relaxed)
                done.leave()
            }
        }
        ready.wait()
        let start = DispatchTime.now()
        for _ in 0..<workers { go.signal() }
        Thread.sleep(forTimeInterval: seconds)
        stop.store(true, ordering: .relaxed)
        done.wait()
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        pool.shutdown()
        guard errors.load(ordering: .relaxed) == 0 else { fail("errors during run") }
        print(String(format: "%.0f", Double(total.load(ordering: .relaxed)) / elapsed))
    default:
        fail("unknown command \(args[1])")
    }
} catch {
    fail("bench-db: \(String(reflecting: error))")
}
