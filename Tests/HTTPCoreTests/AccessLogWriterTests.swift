import Foundation
import Glibc
import XCTest
@testable import HTTPCore

/// The access-log buffer: order, the bound (drop and count, never block), nothing lost on `close()`.
final class AccessLogWriterTests: XCTestCase {
    /// A pipe whose read end is drained into memory by its own thread.
    final class Sink: @unchecked Sendable {
        // @unchecked: `data` is written by the reader thread only until `finish()` joins it.
        let readFD: Int32
        let writeFD: Int32
        private var data: [UInt8] = []
        private let done = DispatchSemaphore(value: 0)

        init() throws {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
            readFD = fds[0]
            writeFD = fds[1]
        }

        /// Starts reading (call it later to keep the pipe full meanwhile).
        func startReading() {
            let thread = Thread { [self] in
                var chunk = [UInt8](repeating: 0, count: 65536)
                while true {
                    let n = chunk.withUnsafeMutableBytes { Glibc.read(readFD, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { break }
                    data.append(contentsOf: chunk[0..<n])
                }
                done.signal()
            }
            thread.start()
        }

        /// Closes the write end and returns the lines read.
        func finish() -> [String] {
            Glibc.close(writeFD)
            done.wait()
            Glibc.close(readFD)
            return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        }
    }

    func testLinesArriveInOrderFromOneThread() throws {
        let sink = try Sink()
        sink.startReading()
        let writer = AccessLogWriter(fd: sink.writeFD, flushInterval: .milliseconds(1))
        for i in 0..<20_000 { writer.write("line \(i)") }
        writer.close()
        XCTAssertEqual(sink.finish(), (0..<20_000).map { "line \($0)" })
        XCTAssertEqual(writer.droppedLines, 0)
    }

    func testEachThreadsLinesKeepTheirOrder() throws {
        let sink = try Sink()
        sink.startReading()
        let writer = AccessLogWriter(fd: sink.writeFD, flushInterval: .milliseconds(1))
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<5_000 { writer.write("\(t) \(i)") }
        }
        writer.close()
        let lines = sink.finish()
        XCTAssertEqual(lines.count, 20_000)
        for t in 0..<4 {
            XCTAssertEqual(lines.filter { $0.hasPrefix("\(t) ") }, (0..<5_000).map { "\(t) \($0)" })
        }
    }

    func testCloseWritesEverythingQueuedWithoutWaitingForTheInterval() throws {
        let sink = try Sink()
        sink.startReading()
        // An hour-long interval: only `close()` can make these lines reach the pipe before the test ends.
        let writer = AccessLogWriter(fd: sink.writeFD, flushInterval: .seconds(3600))
        for i in 0..<100 { writer.write("queued \(i)") }
        writer.close()
        writer.write("after close")  // written synchronously
        writer.close()  // idempotent
        XCTAssertEqual(sink.finish(), (0..<100).map { "queued \($0)" } + ["after close"])
    }

    func testAFullBufferDropsAndCountsLinesInsteadOfBlocking() throws {
        let sink = try Sink()
        // Fill the pipe so the writer thread blocks in write(2): the buffer can only fill up.
        let flags = fcntl(sink.writeFD, F_GETFL)
        _ = fcntl(sink.writeFD, F_SETFL, flags | O_NONBLOCK)
        var filler = 0
        let pad = [UInt8](repeating: UInt8(ascii: "#"), count: 1023) + [0x0A]
        while pad.withUnsafeBytes({ Glibc.write(sink.writeFD, $0.baseAddress, $0.count) }) > 0 { filler += 1 }
        _ = fcntl(sink.writeFD, F_SETFL, flags)

        let writer = AccessLogWriter(fd: sink.writeFD, maxBufferedBytes: 1_000, flushInterval: .milliseconds(1))
        let total = 500
        for i in 0..<total { writer.write(String(format: "line %03d", i)) }  // 9 bytes each with the newline
        // Returned without blocking although nothing can be written: the writer holds at most two buffers' worth.
        XCTAssertGreaterThanOrEqual(writer.droppedLines, total - 2 * (1_000 / 9))

        sink.startReading()
        writer.close()
        let lines = sink.finish().filter { !$0.hasPrefix("#") }
        let kept = lines.filter { $0.hasPrefix("line ") }
        XCTAssertEqual(kept, kept.sorted(), "kept lines stay in order")
        XCTAssertEqual(kept.count + writer.droppedLines, total)
        let reported = lines.compactMap { line -> Int? in
            guard line.hasPrefix(#"{"event":"access_log_dropped","lines":"#) else { return nil }
            return Int(line.dropFirst(#"{"event":"access_log_dropped","lines":"#.count).dropLast())
        }
        XCTAssertEqual(reported.reduce(0, +), writer.droppedLines, "every drop is reported in the log too")
        XCTAssertGreaterThan(filler, 0)
    }
}
