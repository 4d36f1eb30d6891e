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
/// request is redirected to the HTTPS listener with 308 (which keeps the method and body).
///
/// The redirect names the server's own host, never one the request chose: `BOUNCER_PUBLIC_HOST` when set, else one
/// of the served certificate's names. A request for any other host is 421 (RFC 9110 §15.5.20): echoing its Host would
/// make this port an open redirect for whoever points a name at it.
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

    static let misdirected = HTTPError(
        status: 421, code: "MISDIRECTED_REQUEST", message: "This server does not answer for that host",
        suggestion: "Use an https:// URL with this server's own host name.")

    /// 308 to `https://HOST[:PORT]/path?query`: HOST is `publicHost` (its port, else `httpsPort` unless 443) when
    /// the request's Host names it, or, without `publicHost`, the certificate name (`certificateName`) the Host
    /// equals; otherwise 421. A missing or malformed Host is 400.
    static func handler(
        httpsPort: Int, publicHost: PublicHost?, certificateName: @escaping @Sendable (String) -> String?
    ) -> Handler {
        { request in
            guard let requested = request.headers["Host"].flatMap(authority) else { throw badHost }
            let host: String
            var port = httpsPort
            if let publicHost {
                guard requested.host.lowercased() == publicHost.host else { throw misdirected }
                host = publicHost.host
                port = publicHost.port ?? httpsPort
            } else {
                let bare = requested.host.hasPrefix("[") ? String(requested.host.dropFirst().dropLast()) : requested.host
                guard let name = certificateName(bare) else { throw misdirected }
                // An address is written canonically (bracketed when IPv6), not as the request spelled it.
                host = IPAddress(name).map { $0.isIPv4 ? $0.description : "[\($0)]" } ?? name
            }
            var location = "https://" + host
            if port != 443 { location += ":\(port)" }
            location += originPath(request.path)
            if let query = request.query { location += "?" + query }
            return Response(status: 308, headers: ["Location": location], body: [])
        }
    }

    /// The request's path with one leading slash: a run of slashes (or backslashes, which browsers read as slashes)
    /// would make `//evil.example` a network-path reference to anything that takes the path alone; `*` (OPTIONS)
    /// becomes `/`.
    static func originPath(_ path: String) -> String {
        guard path.hasPrefix("/") else { return "/" }
        return "/" + path.drop { $0 == "/" || $0 == "\\" }
    }

    /// A Host header value (or `BOUNCER_PUBLIC_HOST`) split into host and port digits (empty without a port), when
    /// the host is a plain DNS name, IPv4 address or bracketed IPv6 literal (RFC 9110 §7.2); else nil.
    static func authority(_ value: String) -> (host: String, port: Substring)? {
        var text = Substring(value)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let literal = text[text.index(after: text.startIndex)..<close]
            guard !literal.isEmpty, literal.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isASCIIDigit)) else { return nil }
            return ("[" + literal + "]", rest.dropFirst())
        }
        var port: Substring = ""
        if let colon = text.firstIndex(of: ":") {
            port = text[text.index(after: colon)...]
            guard port.allSatisfy(\.isASCIIDigit) else { return nil }
            text = text[..<colon]
        }
        // A leading dot would ask OpenSSL's name check for any subdomain of the rest.
        guard !text.isEmpty, !text.hasPrefix("."), text.utf8.count <= 253,
              text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }) else { return nil }
        return (String(text), port)
    }
}

/// `BOUNCER_PUBLIC_HOST`: the name clients reach the HTTPS listener by, and its port when that is not the
/// listener's own (a load balancer or port mapping in front).
struct PublicHost: Sendable, Equatable {
    /// Lowercase DNS name, IPv4 address or bracketed IPv6 literal.
    let host: String
    /// The public HTTPS port, when given.
    let port: Int?

    /// `host` or `host:port`; nil for anything else (a URL, a path, a port outside 1...65535).
    init?(_ text: String) {
        guard let parsed = HTTPSRedirect.authority(text) else { return nil }
        host = parsed.host.lowercased()
        if parsed.port.isEmpty {
            guard !text.hasSuffix(":") else { return nil }
            port = nil
        } else {
            guard parsed.port.count <= 5, let number = Int(parsed.port), (1...65535).contains(number) else { return nil }
            port = number
        }
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
