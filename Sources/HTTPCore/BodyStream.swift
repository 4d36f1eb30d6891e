import Primitives
import Dispatch
import Synchronization

/// A response body written piece by piece while it is sent, so its size never sits in memory (exports).
///
/// The producer runs on the worker that ran the handler, after the head went out: `Transfer-Encoding: chunked` on
/// HTTP/1.1 (RFC 9112 §7.1), close-delimited on HTTP/1.0 (RFC 9112 §6.3). Each `write` buffers up to `chunkBytes`;
/// a full buffer is handed to the connection's loop and the producer waits until the socket took all of it, so one
/// stream holds at most about two chunks whatever its length. A producer that throws after the head ends the
/// connection without the last chunk: the client sees a truncated body, never a complete-looking one. A client that
/// goes away (or stops reading past the write deadline) makes the next `write` throw `BodyStreamCancelled`.
public struct BodyStream: Sendable {
    let produce: @Sendable (BodyWriter) throws -> Void

    /// A body produced by `produce`, which calls `BodyWriter.write` as often as it likes.
    public init(_ produce: @escaping @Sendable (BodyWriter) throws -> Void) {
        self.produce = produce
    }
}

/// The client went away (or stopped reading) while a `BodyStream` was being sent.
public struct BodyStreamCancelled: Error {}

/// Where a `BodyStream`'s producer writes; used from the producer's thread only.
public final class BodyWriter: @unchecked Sendable {
    // @unchecked: `buffer` and `bytesWritten` are touched only by the producer's thread; `state` and `resumed` are
    // the only members the loop touches (Mutex, semaphore).
    /// How much a stream buffers before handing a chunk to the connection.
    static let chunkBytes = 64 * 1024

    enum Sink {
        /// Hands framed bytes to the connection's loop; `final` ends the response (`close`: and the connection).
        case connection(send: @Sendable (_ bytes: [UInt8], _ writer: BodyWriter?, _ close: Bool) -> Void, chunked: Bool,
                        wait: Duration)
        /// Keeps the whole body (tests, and the rare route run on the event loop).
        case memory
    }

    private let sink: Sink
    private var buffer: [UInt8] = []
    /// Body bytes produced so far (unframed), for the access log.
    private(set) var bytesWritten = 0
    private let cancelled = Atomic<Bool>(false)
    private let resumed = DispatchSemaphore(value: 0)

    init(_ sink: Sink) {
        self.sink = sink
        if case .connection = sink { buffer.reserveCapacity(Self.chunkBytes + 16) }
    }

    /// Appends bytes to the body; blocks while the client has not taken the previous chunk.
    public func write(_ bytes: some Sequence<UInt8>) throws(BodyStreamCancelled) {
        guard !cancelled.load(ordering: .acquiring) else { throw BodyStreamCancelled() }
        let before = buffer.count
        buffer.append(contentsOf: bytes)
        bytesWritten += buffer.count - before
        if case .connection = sink, buffer.count >= Self.chunkBytes { try flushChunk() }
    }

    /// Appends the UTF-8 of `text`.
    public func write(_ text: String) throws(BodyStreamCancelled) { try write(text.utf8) }

    /// Sends what is buffered as one chunk and waits until the connection sent it.
    private func flushChunk() throws(BodyStreamCancelled) {
        guard case .connection(_, let chunked, _) = sink, !buffer.isEmpty else { return }
        let framed = Self.frame(buffer, chunked: chunked)
        buffer.removeAll(keepingCapacity: true)
        try sendAndWait(framed)
    }

    /// Hands `bytes` to the connection (the response goes on) and waits until they left the socket.
    func sendAndWait(_ bytes: [UInt8]) throws(BodyStreamCancelled) {
        guard case .connection(let send, _, let wait) = sink else { return }
        guard !cancelled.load(ordering: .acquiring) else { throw BodyStreamCancelled() }
        send(bytes, self, false)
        let deadline = DispatchTime.now() + .nanoseconds(Int(clamping: wait.nanoseconds))
        if resumed.wait(timeout: deadline) == .timedOut { cancelled.store(true, ordering: .releasing) }
        guard !cancelled.load(ordering: .acquiring) else { throw BodyStreamCancelled() }
    }

    /// After the producer returned: the rest of the body and the end of the response.
    func finish(close: Bool) throws(BodyStreamCancelled) {
        guard case .connection(let send, let chunked, _) = sink else { return }
        guard !cancelled.load(ordering: .acquiring) else { throw BodyStreamCancelled() }
        var last = buffer.isEmpty ? [] : Self.frame(buffer, chunked: chunked)
        if chunked { last.append(contentsOf: Array("0\r\n\r\n".utf8)) }
        buffer = []
        send(last, nil, close || !chunked)
    }

    /// After the producer threw: end the connection without the last chunk, so the body reads as truncated.
    func abort() {
        guard case .connection(let send, _, _) = sink else { return }
        buffer = []
        send([], nil, true)
    }

    /// The loop took the chunk off the socket: the producer may go on.
    func resume() { resumed.signal() }

    /// The connection closed: the producer's next (or current) `write` throws.
    func cancel() {
        cancelled.store(true, ordering: .releasing)
        resumed.signal()
    }

    /// The whole body of a `.memory` writer.
    var collected: [UInt8] { buffer }

    /// One chunk (RFC 9112 §7.1: hex size, CRLF, data, CRLF), or the bytes themselves when close-delimited.
    static func frame(_ data: [UInt8], chunked: Bool) -> [UInt8] {
        guard chunked else { return data }
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 12)
        out.append(contentsOf: Array(String(data.count, radix: 16).utf8))
        out.append(contentsOf: [0x0D, 0x0A])
        out.append(contentsOf: data)
        out.append(contentsOf: [0x0D, 0x0A])
        return out
    }
}

extension Response {
    /// A response whose body `stream` writes while it is sent (no `Content-Length`).
    public static func streaming(_ status: Int, headers: HTTPHeaders = .init(), _ stream: BodyStream) -> Response {
        var response = Response(status: status, headers: headers)
        response.stream = stream
        return response
    }

    /// The same response with its stream run into `body` (in-process tests; routes placed on the event loop).
    public func collected() throws -> Response {
        guard let stream else { return self }
        let writer = BodyWriter(.memory)
        try stream.produce(writer)
        var copy = self
        copy.stream = nil
        copy.body = writer.collected
        return copy
    }
}
