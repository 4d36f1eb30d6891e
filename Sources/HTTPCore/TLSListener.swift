import Crypto
import Primitives

/// The server's current certificate and key as a ready `TLSContext`, swapped whole on reload: connections
/// keep the context they started with (each `SSL` holds a reference to its `SSL_CTX`).
final class TLSIdentity: Sendable {
    let configuration: TLSServerConfiguration
    private let context = Locked<TLSContext?>(nil)

    init(configuration: TLSServerConfiguration) { self.configuration = configuration }

    /// The context new connections use (nil before `load()` succeeded).
    var current: TLSContext? { context.withLock { $0 } }

    /// Builds a context from the files and makes it current; on failure the previous one stays current.
    @discardableResult
    func load() throws(CryptoError) -> TLSContext {
        let fresh = try TLSContext(server: configuration)
        context.withLock { $0 = fresh }
        return fresh
    }
}

/// The outcome of `HTTPServer.reloadTLS()`: the serial of the certificate now served.
public struct TLSReload: Sendable, Equatable {
    /// Uppercase hex serial of the leaf certificate new connections now get.
    public var certificateSerial: String
}

extension HTTPServer {
    /// Re-reads `configuration.tls`'s certificate chain and key and serves them to new connections; open
    /// connections keep the old pair until they close. A pair that does not load (unreadable, not PEM, key not
    /// matching the certificate) throws and changes nothing: the old pair keeps serving.
    public func reloadTLS() throws -> TLSReload {
        guard let identity = core.tls else { throw HTTPServerError("TLS is not configured") }
        let context = try identity.load()
        return TLSReload(certificateSerial: context.certificateSerial ?? "")
    }

    /// The serial of the certificate new connections get, nil without TLS.
    public var tlsCertificateSerial: String? { core.tls?.current?.certificateSerial }

    /// The name of the served certificate that is exactly `host` (a DNS or IP subject alternative name, wildcards
    /// not expanded), as the certificate spells it; nil when it names no such host, or without TLS.
    public func tlsCertificateName(matching host: String) -> String? {
        core.tls?.current?.certificateName(matching: host)
    }
}
