// libFuzzer entry for the TLS record path as far as it is ours (built by bench/fuzz-tls): the first-bytes
// classification of HTTPCore's TLS port, and Crypto's non-blocking TLSServerSession state machine fed by a memory
// BIO exactly as the event loop drives it (handshake until done, then read, write, shutdown).
// Input: first byte = chunk size selector (how the network splits the bytes), rest = bytes from a hostile client.
// Checks, beyond "no crash, no leak": the classification is total and prefix-stable (a TLS or HTTP verdict never
// changes with more bytes), a session never reports done(0) on read, and output stays bounded.
import Foundation

private let context: TLSContext? = {
    guard let directory = ProcessInfo.processInfo.environment["FUZZ_TLS_DIR"] else { return nil }
    return try? TLSContext(server: TLSServerConfiguration(
        certificateChainFile: directory + "/server.pem", privateKeyFile: directory + "/server.key"))
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTLS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let selector = Int(data[0])
    let input = UnsafeRawBufferPointer(start: data + 1, count: size - 1)

    // Classification: every prefix is classified; a decisive verdict holds for all longer prefixes.
    var decided: FirstBytes?
    for length in 0...min(input.count, 8) {
        let verdict = FirstBytes.classify(UnsafeRawBufferPointer(rebasing: input[0..<length]))
        if let decided { precondition(verdict == decided, "verdict changed with more bytes") }
        if verdict != .needMore { decided = verdict }
    }

    guard let context, let session = try? TLSServerSession(inMemoryWith: context) else {
        precondition(context != nil, "FUZZ_TLS_DIR must hold server.pem and server.key")
        return 0
    }
    let chunk = max(1, selector % 64 == 0 ? input.count : selector % 64 * 16)
    var offset = 0
    var output = 0
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    loop: while true {
        if offset < input.count {
            let end = min(input.count, offset + chunk)
            session.receive(UnsafeRawBufferPointer(rebasing: input[offset..<end]))
            offset = end
        }
        if !session.isEstablished {
            switch session.handshake() {
            case .done: continue loop
            case .wantRead, .wantWrite: if offset >= input.count { break loop }
            case .closed, .failed: break loop
            }
        } else {
            let step = buffer.withUnsafeMutableBytes { session.read(into: $0) }
            switch step {
            case .done(let n):
                precondition(n > 0 && n <= buffer.count, "read size out of range")
                _ = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8).withUnsafeBytes { session.write($0) }
            case .wantRead, .wantWrite: if offset >= input.count { break loop }
            case .closed, .failed: break loop
            }
        }
        output += session.takeOutput().count
        precondition(output < 1 << 20, "unbounded output")
    }
    session.shutdown()
    _ = session.takeOutput()
    return 0
}
