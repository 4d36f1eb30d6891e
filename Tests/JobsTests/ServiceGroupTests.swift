import Crypto
import Dispatch
import Foundation
import Primitives
import Synchronization
import XCTest
@testable import Jobs

/// The lifecycle: services start in order and stop in reverse, once; a job's stop waits for its unit of work.
final class ServiceGroupTests: XCTestCase {
    /// Lines appended from several threads.
    final class Journal: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// A service that records its start and stop in a shared journal.
    final class Recorder: Service {
        let name: String
        let journal: Journal
        private let running = Job.Flag(false)

        init(_ name: String, journal: Journal) {
            self.name = name
            self.journal = journal
        }

        func start() {
            running.set(true)
            journal.append("start " + name)
        }

        func stop(grace: Duration) {
            running.set(false)
            journal.append("stop " + name)
        }

        var isRunning: Bool { running.value }
    }

    func testStartsInOrderStopsInReverseOnce() {
        let journal = Journal()
        let services = ["a", "b", "c"].map { Recorder($0, journal: journal) }
        let lines = Journal()
        let group = ServiceGroup(services, log: { lines.append($0) })
        group.start()
        group.start()
        XCTAssertEqual(group.health.map { $0.isRunning }, [true, true, true])
        group.stop(grace: .seconds(1))
        group.stop(grace: .seconds(1))
        XCTAssertEqual(journal.all, ["start a", "start b", "start c", "stop c", "stop b", "stop a"])
        XCTAssertEqual(group.health.map { $0.isRunning }, [false, false, false])
        XCTAssertTrue(lines.all.contains(#"{"event":"service","service":"a","state":"stopped"}"#),
                      "\(lines.all)")
    }

    func testAGroupNeverStartedStopsNothing() {
        let journal = Journal()
        let group = ServiceGroup([Recorder("a", journal: journal)], log: { _ in })
        group.stop(grace: .seconds(1))
        group.start()
        XCTAssertEqual(journal.all, [])
    }

    func testJobRunsOnWakeAndStopWaitsForTheUnitInProgress() {
        let runs = Atomic<Int>(0)
        let inUnit = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = Job.Flag(false)
        let job = Job(name: "test.job", interval: .seconds(3600)) { job in
            let n = runs.add(1, ordering: .relaxed).newValue
            if n == 2 {
                inUnit.signal()
                release.wait()
                finished.set(true)
            }
            return .wait
        }
        XCTAssertFalse(job.isRunning)
        job.start()
        XCTAssertTrue(job.isRunning)
        job.wake()  // the second run blocks until released
        XCTAssertEqual(inUnit.wait(timeout: .now() + 30), .success)
        job.requestStop()
        XCTAssertFalse(job.awaitStop(until: .now() + 0.05), "stop waits for the unit in progress")
        release.signal()
        XCTAssertTrue(job.awaitStop(until: .now() + 30))
        XCTAssertTrue(finished.value)
        XCTAssertFalse(job.isRunning)
        XCTAssertEqual(runs.load(ordering: .relaxed), 2)
    }

    /// A job's thread carries its name for the kernel (top -H, bench/api's CPU split) without the `bouncer.`
    /// prefix, cut to the kernel's 15 bytes.
    func testAJobsThreadIsNamedForTheKernel() throws {
        let seen = Mutex<String?>(nil)
        let ran = DispatchSemaphore(value: 0)
        let job = Job(name: "bouncer.webhooks.derive-long-name") { _ in
            seen.withLock { $0 = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) }
            ran.signal()
            return .finished
        }
        job.start()
        XCTAssertEqual(ran.wait(timeout: .now() + 30), .success)
        XCTAssertTrue(job.awaitStop(until: .now() + 30))
        XCTAssertEqual(seen.withLock { $0 }, "webhooks.derive\n")
    }

    /// Wakes within `minimumGap` of a run's start gather into one later run; `stop` ends that wait.
    func testWakesWithinTheMinimumGapGatherAndStopEndsTheWait() {
        let runs = Atomic<Int>(0)
        let first = DispatchSemaphore(value: 0)
        let job = Job(name: "test.gap", interval: .seconds(3600), minimumGap: .seconds(3600)) { _ in
            if runs.add(1, ordering: .relaxed).newValue == 1 { first.signal() }
            return .wait
        }
        job.start()
        XCTAssertEqual(first.wait(timeout: .now() + 30), .success)
        for _ in 0..<5 { job.wake() }
        // The wakes are pending, not run: the gap (an hour) has not passed. Waiting longer could only add runs,
        // so this checks the absence of a second run without depending on how fast the thread is.
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(runs.load(ordering: .relaxed), 1)
        XCTAssertTrue(job.stop(grace: .seconds(30)), "stop ends the gap's wait")
        XCTAssertFalse(job.isRunning)
        XCTAssertEqual(runs.load(ordering: .relaxed), 1)
    }

    /// A body's `rest` is not cut short by wakes (they stay pending for the next run), only by `stop`.
    func testRestIgnoresWakesAndStopEndsIt() {
        let rested = DispatchSemaphore(value: 0)
        let runs = Atomic<Int>(0)
        let job = Job(name: "test.rest", interval: .seconds(3600)) { job in
            if runs.add(1, ordering: .relaxed).newValue == 1 {
                job.rest(.milliseconds(300))
                rested.signal()
                job.rest(.seconds(3600))
            }
            return .wait
        }
        let started = DispatchTime.now()
        job.start()
        for _ in 0..<5 {
            job.wake()
            Thread.sleep(forTimeInterval: 0.01)
        }
        XCTAssertEqual(rested.wait(timeout: .now() + 30), .success)
        XCTAssertGreaterThanOrEqual(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds, 300_000_000)
        XCTAssertEqual(runs.load(ordering: .relaxed), 1, "the wakes wait for the rest")
        XCTAssertTrue(job.stop(grace: .seconds(30)), "stop ends the hour's rest")
        XCTAssertFalse(job.isRunning)
    }

    /// The derived work's yield: none while no receipt committed; 3× the unit's duration (at most 1 s) while
    /// receipts commit without waiting; 9× (at most 2 s) while most of them waited for a batch slot.
    func testDerivedWorkRestsByWhatTheReceiptsDidMeanwhile() {
        func load(_ commits: Int, _ receipts: Int, _ waited: Int) -> ReceiptLoad {
            var load = ReceiptLoad()
            load.commits = commits
            load.receipts = receipts
            load.waited = waited
            return load
        }
        let start = load(10, 10, 4)
        let cases: [(String, Double, ReceiptLoad, Double)] = [
            ("idle", 0.2, start, 0),
            ("idle, receipts without group commit counted as not waiting", 0.2, load(10, 10, 4), 0),
            ("busy, none waited", 0.01, load(30, 30, 4), 0.03),
            ("busy, half waited (not most)", 0.01, load(30, 30, 14), 0.03),
            ("busy, capped", 0.5, load(30, 30, 4), 1),
            ("commits without group commit's counters", 0.01, load(30, 10, 4), 0.03),
            ("saturated", 0.01, load(30, 30, 15), 0.09),
            ("saturated, capped", 0.5, load(30, 30, 24), 2),
            ("no time taken", 0, load(30, 30, 24), 0),
        ]
        for (name, took, to, expected) in cases {
            XCTAssertEqual(ReceiptLoad.rest(after: took, from: start, to: to), expected, accuracy: 1e-9, name)
        }
    }

    func testAFinishedBodyEndsTheThreadAndOnStopInterruptsIt() {
        let blocker = DispatchSemaphore(value: 0)
        let job = Job(name: "test.blocked", onStop: { blocker.signal() }) { _ in
            blocker.wait()
            return .finished
        }
        job.start()
        XCTAssertTrue(job.stop(grace: .seconds(30)))
        XCTAssertFalse(job.isRunning)
    }

    func testWebhookSignatureIsHMACOfTimestampAndBody() {
        let body = Array(#"{"id":"e"}"#.utf8)
        let header = WebhookSignature.header(secrets: ["s1", "s2"], timestamp: 1_700_000_000, body: body)
        let message = Array("1700000000.".utf8) + body
        let expected = ["s1", "s2"].map { "v1=" + Hex.encode(HMAC.sha256(key: Array($0.utf8), message: message)) }
        XCTAssertEqual(header, expected.joined(separator: ","))
    }
}
