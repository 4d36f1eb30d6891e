import Dispatch
import Foundation
import Glibc
import Synchronization

/// Batches log lines and writes them to a file descriptor from its own thread, so an I/O loop
/// never blocks on a slow stderr pipe. Bounded: past `maxBufferedBytes` lines are dropped and counted.
final class AccessLogWriter: @unchecked Sendable {
    // @unchecked: `state` is only touched inside `withState`, which holds `lock`.
    private struct State {
        var buffer: [UInt8] = []
        var dropped = 0
        var stopping = false
    }

    private let fd: Int32
    private let maxBufferedBytes: Int
    // A pthread mutex, not Synchronization.Mutex: the latter spins when contended (see HTTPCore.Locked).
    private let lock = NSLock()
    private var state = State()
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(fd: Int32 = 2, maxBufferedBytes: Int = 4 << 20) {
        self.fd = fd
        self.maxBufferedBytes = maxBufferedBytes
        let thread = Thread { [self] in run() }
        thread.name = "bouncer-log"
        thread.start()
    }

    private func withState<R>(_ body: (inout State) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }

    /// Queues one line (a newline is appended); never blocks on I/O.
    func write(_ line: String) {
        let first = withState { s -> Bool in
            guard s.buffer.count + line.utf8.count < maxBufferedBytes else {
                s.dropped += 1
                return false
            }
            let wasEmpty = s.buffer.isEmpty
            s.buffer.append(contentsOf: line.utf8)
            s.buffer.append(0x0A)
            return wasEmpty
        }
        if first { wake.signal() }
    }

    /// Writes what is queued and stops the thread.
    func close() {
        withState { $0.stopping = true }
        wake.signal()
        finished.wait()
    }

    private func run() {
        while true {
            _ = wake.wait(timeout: .now() + .milliseconds(200))
            let (bytes, dropped, stopping) = withState { s -> ([UInt8], Int, Bool) in
                let taken = (s.buffer, s.dropped, s.stopping)
                s.buffer = []
                s.dropped = 0
                return taken
            }
            var out = bytes
            if dropped > 0 { out.append(contentsOf: #"{"event":"access_log_dropped","lines":\#(dropped)}"#.utf8 + [0x0A]) }
            var offset = 0
            while offset < out.count {
                let n = out[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                offset += n
            }
            if stopping {
                finished.signal()
                return
            }
        }
    }
}
