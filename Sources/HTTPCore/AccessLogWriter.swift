import Dispatch
import Foundation
import Glibc
import Primitives

/// Buffers access-log lines in memory and writes them in batches from its own thread, so no I/O loop or
/// worker ever waits on the log's file descriptor (a slow stderr pipe, a full disk).
///
/// A line costs the caller one uncontended lock and a copy into the buffer. The thread wakes when the
/// first line lands in an empty buffer, lets `flushInterval` gather more, then writes everything in one
/// `write(2)` (or a few): under load one write per interval, none at all when idle.
///
/// Bounded: past `maxBufferedBytes` a line is dropped and counted (`droppedLines`, and an
/// `{"event":"access_log_dropped","lines":N}` line in the log itself) rather than blocking the caller: a
/// blocked I/O loop would stall every other connection it serves. `close()` writes everything queued
/// before returning, so a graceful stop loses no line.
public final class AccessLogWriter: @unchecked Sendable {
    // @unchecked: `state` is only touched inside `withState`, which holds `lock`; `spare` only by the thread.
    private struct State {
        var buffer: [UInt8] = []
        var droppedSinceWrite = 0
        var droppedTotal = 0
        var stopping = false
        var stopped = false
    }

    private let fd: Int32
    private let maxBufferedBytes: Int
    private let flushInterval: Duration
    // A pthread mutex, not Synchronization.Mutex: the latter spins when contended (see `Locked`).
    private let lock = NSLock()
    private var state = State()
    /// Signalled when the first line lands in an empty buffer.
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled to cut the gathering wait short: the buffer is half full, or `close()`.
    private let hurry = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the writer thread.
    /// - Parameters:
    ///   - fd: where lines go (not closed by the writer); default stderr.
    ///   - maxBufferedBytes: the bound on queued bytes; default 4 MiB (~20,000 lines).
    ///   - flushInterval: how long the thread gathers lines before a write; a line reaches `fd` at most this
    ///     late (plus the write itself). Default 50 ms.
    public init(fd: Int32 = 2, maxBufferedBytes: Int = 4 << 20, flushInterval: Duration = .milliseconds(50)) {
        self.fd = fd
        self.maxBufferedBytes = max(1, maxBufferedBytes)
        self.flushInterval = flushInterval
        state.buffer.reserveCapacity(min(self.maxBufferedBytes, 64 * 1024))
        let thread = Thread { [self] in run() }
        thread.name = "bouncer-log"
        thread.start()
    }

    private func withState<R>(_ body: (inout State) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }

    /// Lines dropped because the buffer was full, since start.
    public var droppedLines: Int { withState { $0.droppedTotal } }

    /// Queues one line (a newline is appended); never blocks on I/O. After `close()` the line is written
    /// synchronously instead.
    public func write(_ line: String) {
        var line = line
        line.withUTF8 { append($0) }
    }

    private enum Outcome { case queued, first, halfFull, dropped, closed }

    private func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        let outcome = withState { s -> Outcome in
            if s.stopped {
                // After close: straight to the fd, under the lock so late lines keep their order.
                var copy = Array(bytes)
                copy.append(0x0A)
                writeAll(copy)
                return .closed
            }
            let before = s.buffer.count
            guard before + bytes.count + 1 <= maxBufferedBytes else {
                s.droppedSinceWrite += 1
                s.droppedTotal += 1
                return .dropped
            }
            s.buffer.append(contentsOf: bytes)
            s.buffer.append(0x0A)
            if before == 0 { return .first }
            let half = maxBufferedBytes / 2
            return before < half && s.buffer.count >= half ? .halfFull : .queued
        }
        switch outcome {
        case .first: wake.signal()
        case .halfFull: hurry.signal()
        case .queued, .dropped, .closed: break
        }
    }

    /// Writes everything queued, then stops the thread; later lines are written synchronously. Idempotent.
    public func close() {
        let first = withState { s -> Bool in
            defer { s.stopping = true }
            return !s.stopping
        }
        guard first else { return }
        wake.signal()
        hurry.signal()
        finished.wait()
    }

    private func run() {
        var spare: [UInt8] = []
        spare.reserveCapacity(min(maxBufferedBytes, 64 * 1024))
        while true {
            wake.wait()
            // Gather: lines arriving meanwhile share one write. `close()` or a half-full buffer cut it short.
            if !withState({ $0.stopping }) {
                _ = hurry.wait(timeout: .now() + .nanoseconds(Int(min(flushInterval.nonNegativeNanoseconds, UInt64(Int.max)))))
            }
            let (dropped, stopping) = withState { s -> (Int, Bool) in
                swap(&s.buffer, &spare)
                defer { s.droppedSinceWrite = 0 }
                return (s.droppedSinceWrite, s.stopping)
            }
            if dropped > 0 {
                spare.append(contentsOf: #"{"event":"access_log_dropped","lines":\#(dropped)}"#.utf8)
                spare.append(0x0A)
            }
            writeAll(spare)
            spare.removeAll(keepingCapacity: spare.capacity <= 1 << 20)
            if stopping {
                // Anything queued between the swap and now, then the synchronous mode for late lines.
                withState { s in
                    writeAll(s.buffer)
                    s.buffer = []
                    s.stopped = true
                }
                finished.signal()
                return
            }
            // A line queued after the swap found the buffer empty and signalled `wake` for the next round.
        }
    }

    private func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { p in
            var offset = 0
            while offset < p.count, let base = p.baseAddress {
                let n = Glibc.write(fd, base + offset, p.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                offset += n
            }
        }
    }
}
