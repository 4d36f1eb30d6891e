public import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A keep-alive HTTPS client for tests: a real TLS handshake (Crypto's `TLSConnection`) that verifies the server's
/// certificate against a test CA and the host name, then HTTP/1.1 requests read back by Content-Length.
public final class TLSTestClient {
    public let fd: Int32
    public let connection: TLSConnection
    private var buffer: [UInt8] = []
    private let timeout: Duration

    /// Connects to 127.0.0.1:`port` (from `source`, any 127.x.y.z, when given) and completes the handshake,
    /// verifying the certificate against `caFile` for `serverName`.
    public init(port: Int, caFile: String, serverName: String = "localhost", from source: String? = nil,
                timeout: Duration = .seconds(5)) throws {
        self.timeout = timeout
        let probe = try TestClient(port: port, timeout: 5, from: source)
        fd = dup(probe.fd)  // the TestClient closes its own descriptor when it goes; we keep the duplicate
        guard fd >= 0 else { throw HarnessFailure(description: "dup: errno \(errno)") }
        do {
            let context = try TLSContext(client: TLSClientConfiguration(trustsSystemRoots: false, additionalCAFile: caFile))
            connection = try TLSConnection(context: context, connectedSocket: fd, serverName: serverName,
                                           deadline: .now + timeout)
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }

    /// Sends one GET (or `method`) and reads its response.
    public func request(_ path: String, method: String = "GET", headers: [String: String] = [:]) throws -> HTTPResponse {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8))
        return try readResponse()
    }

    /// Writes raw bytes through TLS.
    public func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try connection.write($0, deadline: .now + timeout) }
    }

    /// Reads one response (Content-Length framed).
    public func readResponse() throws -> HTTPResponse {
        while true {
            if let end = Self.find(buffer), let length = Self.contentLength(buffer[0..<end]), buffer.count >= end + 4 + length {
                let whole = Array(buffer[0..<(end + 4 + length)])
                buffer.removeFirst(whole.count)
                return try TestClient.parse(whole)
            }
            guard try fill() else { throw HarnessFailure(description: "connection closed mid-response (\(buffer.count) bytes)") }
        }
    }

    /// True when the server ended the TLS stream (close_notify or EOF) with nothing more to read.
    public func isClosedByPeer() -> Bool { buffer.isEmpty && ((try? fill()) ?? true) == false }

    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let n = try chunk.withUnsafeMutableBytes { try connection.read(into: $0, deadline: .now + timeout) }
        if n == 0 { return false }
        buffer += chunk[0..<n]
        return true
    }

    private static func find(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    private static func contentLength(_ head: ArraySlice<UInt8>) -> Int? {
        for line in String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }
        }
        return 0
    }
}

extension TLSTestPKI {
    /// Issues another certificate for localhost / 127.0.0.1 from the same CA (a renewal: new key, new serial) into
    /// `name`.pem / `name`.key in the PKI's directory; returns the two paths.
    public func issueServerCertificate(named name: String) throws -> (certificate: String, key: String) {
        func openssl(_ arguments: [String]) throws { try Subprocess.run(["openssl"] + arguments, in: directory) }
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(name).key",
                     "-out", "\(name).csr", "-subj", "/CN=\(name)"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
            .write(toFile: directory + "/\(name).ext", atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                     "-days", "2", "-extfile", "\(name).ext", "-out", "\(name).pem"])
        return (directory + "/\(name).pem", directory + "/\(name).key")
    }

    /// The uppercase hex serial of a PEM certificate file (as `openssl x509 -serial` prints it).
    public func serial(ofCertificate path: String) throws -> String {
        let output = try Subprocess.run(["openssl", "x509", "-noout", "-serial", "-in", path], in: directory)
        return output.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "serial=", with: "")
    }
}
