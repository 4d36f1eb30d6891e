import Dispatch
import Foundation
import Glibc
import HTTPCore
import JSON
import Synchronization

/// Keeps the HTTPS listener's certificate current: SIGHUP reloads at once, and a periodic check reloads when either
/// file changed (cert-manager and certbot replace files or swap symlinks; no signal reaches us). A pair that does
/// not load is refused with one log line and the old pair keeps serving.
final class TLSReloader: @unchecked Sendable {
    // @unchecked: `sources` (Dispatch sources are not Sendable) is only touched under `lock`; the rest is immutable
    // or a Mutex.
    private let server: HTTPServer
    private let files: [String]
    private let log: @Sendable (String) -> Void
    private let queue = DispatchQueue(label: "bouncer.tls-reload")
    private let lock = NSLock()
    private var sources: [any DispatchSourceProtocol] = []
    /// The files' identity (device, inode, size, mtime) at the last load attempt, good or bad.
    private let lastSeen = Mutex<[String]>([])

    init(server: HTTPServer, certificateFile: String, keyFile: String, log: @escaping @Sendable (String) -> Void) {
        self.server = server
        self.files = [certificateFile, keyFile]
        self.log = log
        lastSeen.withLock { $0 = Self.fingerprint(files) }
    }

    /// Starts watching: SIGHUP (whose default action, terminating, the caller has already set to ignored before
    /// any thread started) and a check every `interval`.
    func start(checkEvery interval: Duration) {
        let hup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: queue)
        hup.setEventHandler { [self] in reload(trigger: "sighup") }
        hup.resume()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let nanos = Int(min(interval.components.seconds, 86_400)) * 1_000_000_000
            + Int(interval.components.attoseconds / 1_000_000_000)
        timer.schedule(deadline: .now() + .nanoseconds(nanos), repeating: .nanoseconds(max(nanos, 1_000_000)))
        timer.setEventHandler { [self] in
            let now = Self.fingerprint(files)
            if now != lastSeen.withLock({ $0 }) { reload(trigger: "file_change") }
        }
        timer.resume()
        lock.withLock { sources = [hup, timer] }
    }

    func stop() {
        lock.withLock {
            sources.forEach { $0.cancel() }
            sources = []
        }
    }

    /// Loads the pair now; logs `{"event":"tls_reload","trigger",…,"outcome":"ok"|"refused",…}`.
    func reload(trigger: String) {
        lastSeen.withLock { $0 = Self.fingerprint(files) }
        var line = JSONWriter(reservingCapacity: 256)
        line.writeRaw(#"{"event":"tls_reload","trigger":"#)
        line.writeString(trigger)
        do {
            let result = try server.reloadTLS()
            line.writeRaw(#","outcome":"ok","certificate_serial":"#)
            line.writeString(result.certificateSerial)
        } catch {
            // The reason names the file and what failed (no key material); OpenSSL's detail goes along for the operator.
            line.writeRaw(#","outcome":"refused","reason":"#)
            line.writeString(String(describing: error))
            line.writeRaw(#","detail":"#)
            line.writeString(String(reflecting: error))
            line.writeRaw(#","serving_serial":"#)
            line.writeString(server.tlsCertificateSerial ?? "")
        }
        line.writeRaw("}")
        log(String(decoding: line.bytes, as: UTF8.self))
    }

    /// Per file: device, inode, size and modification time, following symlinks (a swapped link changes the inode).
    static func fingerprint(_ files: [String]) -> [String] {
        files.map { path in
            var info = stat()
            guard stat(path, &info) == 0 else { return "missing" }
            return "\(info.st_dev):\(info.st_ino):\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        }
    }
}

/// The optional plain-HTTP port next to HTTPS: `/healthz` answers (for probes that cannot speak TLS), every other
/// request is redirected to the same host on the HTTPS port with 308 (which keeps the method and body).
enum HTTPSRedirect {
    /// The router and fallback of the redirect port's server.
    static func router() -> Router {
        var router = Router()
        let ok = Array(#"{"status":"ok"}"#.utf8)
        router.add(.get, "/healthz", placement: .eventLoop) { _ in .json(200, ok) }
        return router
    }

    static let badHost = HTTPError(
        status: 400, code: "BAD_REQUEST", message: "Missing or invalid Host header",
        suggestion: "Send a Host header with the server's name, or use https:// directly.")

    /// 308 to `https://HOST:httpsPort/path?query`; the Host's own port is dropped, a missing or malformed Host is 400.
    static func handler(httpsPort: Int) -> Handler {
        { request in
            guard let host = request.headers["Host"].flatMap(hostName) else { throw badHost }
            var location = "https://" + host
            if httpsPort != 443 { location += ":\(httpsPort)" }
            location += request.path
            if let query = request.query { location += "?" + query }
            return Response(status: 308, headers: ["Location": location], body: [])
        }
    }

    /// The host part of a Host header value when it is a plain DNS name, IPv4 address or bracketed IPv6 literal
    /// (RFC 9110 §7.2), else nil: nothing else may reach a Location header.
    static func hostName(_ value: String) -> String? {
        var text = Substring(value)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let literal = text[text.index(after: text.startIndex)..<close]
            guard !literal.isEmpty, literal.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isASCIIDigit)) else { return nil }
            return "[" + literal + "]"
        }
        if let colon = text.firstIndex(of: ":") {
            guard text[text.index(after: colon)...].allSatisfy(\.isASCIIDigit) else { return nil }
            text = text[..<colon]
        }
        guard !text.isEmpty, text.utf8.count <= 253,
              text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }) else { return nil }
        return String(text)
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
