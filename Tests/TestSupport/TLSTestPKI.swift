public import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway TLS PKI (for HTTPS servers and clients in tests; JWS signing uses `TestPKI`, Apple-shaped and
/// committed) made by the openssl CLI in a temporary directory: a test CA (EC P-256) and a server
/// certificate for `localhost` / 127.0.0.1 signed by it, plus an unrelated CA that signed nothing we serve.
///
/// ```swift
/// let pki = try TLSTestPKI.make()
/// let server = try LocalHTTPSServer(tls: pki.serverConfiguration) { _ in .respond(status: 200, body: "ok") }
/// ```
public struct TLSTestPKI: Sendable {
    /// The directory holding every file (removed by `remove()`).
    public let directory: String
    /// PEM of the CA that signed the server certificate.
    public let caFile: String
    /// PEM of a CA that trusts nothing we serve.
    public let otherCAFile: String
    /// PEM chain (leaf) for localhost, DNS:localhost and IP:127.0.0.1.
    public let serverCertificateFile: String
    /// PEM PKCS#8 key of the server certificate.
    public let serverKeyFile: String
    /// A certificate from the same CA for `elsewhere.test` only (a host-name mismatch on 127.0.0.1).
    public let wrongNameCertificateFile: String
    /// Its key.
    public let wrongNameKeyFile: String

    /// The server identity for localhost / 127.0.0.1.
    public var serverConfiguration: TLSServerConfiguration {
        TLSServerConfiguration(certificateChainFile: serverCertificateFile, privateKeyFile: serverKeyFile)
    }

    /// A valid certificate for another name.
    public var wrongNameConfiguration: TLSServerConfiguration {
        TLSServerConfiguration(certificateChainFile: wrongNameCertificateFile, privateKeyFile: wrongNameKeyFile)
    }

    /// Generates the files (about 50 ms of openssl calls).
    public static func make() throws -> TLSTestPKI {
        let directory = NSTemporaryDirectory() + "bouncer-pki-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func openssl(_ arguments: [String]) throws { try Subprocess.run(["openssl"] + arguments, in: directory) }
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        for ca in ["ca", "other-ca"] {
            try openssl(["req", "-x509"] + curve + ["-keyout", "\(ca).key", "-out", "\(ca).pem", "-days", "2",
                         "-subj", "/CN=Bouncer Test \(ca)", "-addext", "basicConstraints=critical,CA:TRUE",
                         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        }
        for (name, san) in [("server", "DNS:localhost,IP:127.0.0.1"), ("wrong-name", "DNS:elsewhere.test")] {
            try openssl(["req"] + curve + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name)"])
            try "subjectAltName=\(san)\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
                .write(toFile: directory + "/\(name).ext", atomically: true, encoding: .utf8)
            try openssl(["x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                         "-days", "2", "-extfile", "\(name).ext", "-out", "\(name).pem"])
        }
        return TLSTestPKI(directory: directory, caFile: directory + "/ca.pem", otherCAFile: directory + "/other-ca.pem",
                       serverCertificateFile: directory + "/server.pem", serverKeyFile: directory + "/server.key",
                       wrongNameCertificateFile: directory + "/wrong-name.pem", wrongNameKeyFile: directory + "/wrong-name.key")
    }

    /// Deletes the directory.
    public func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// The certificate chain file a server under test is configured with (a copy that reload tests replace).
    public var servingCertificateFile: String { directory + "/serving.pem" }
    /// The private key file a server under test is configured with.
    public var servingKeyFile: String { directory + "/serving.key" }

    /// Fresh files with the server pair already installed as the serving files.
    public static func makeServing() throws -> TLSTestPKI {
        let pki = try make()
        try pki.installServing(certificate: pki.serverCertificateFile, key: pki.serverKeyFile)
        return pki
    }

    /// Replaces the serving files with copies of `certificate` and `key`, each written beside and renamed over, as
    /// certbot and cert-manager do: a reader never sees half a file.
    public func installServing(certificate: String, key: String) throws {
        for (from, to) in [(certificate, servingCertificateFile), (key, servingKeyFile)] {
            try Data(contentsOf: URL(fileURLWithPath: from)).write(to: URL(fileURLWithPath: to + ".new"))
            guard rename(to + ".new", to) == 0 else {
                throw TLSTestPKIError(message: "rename \(to).new over \(to) failed: errno \(errno)")
            }
        }
    }
}

/// The openssl CLI failed.
public struct TLSTestPKIError: Error, CustomStringConvertible {
    /// Command and output.
    public var message: String
    /// The message.
    public var description: String { message }
}
