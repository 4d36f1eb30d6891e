import Foundation

/// A throwaway TLS PKI made by the openssl CLI in a temporary directory: a test CA (EC P-256) and a server
/// certificate for `localhost` / 127.0.0.1 signed by it, plus an unrelated CA that signed nothing we serve.
///
/// ```swift
/// let pki = try TestPKI.make()
/// let server = try LocalHTTPSServer(tls: pki.serverConfiguration) { _ in .respond(status: 200, body: "ok") }
/// ```
public struct TestPKI: Sendable {
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

    /// Generates the files (about 50 ms of openssl calls).
    public static func make() throws -> TestPKI {
        let directory = NSTemporaryDirectory() + "bouncer-pki-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["openssl"] + arguments
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw TestPKIError(message: "openssl \(arguments.joined(separator: " ")): \(String(decoding: output, as: UTF8.self))")
            }
        }
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        for ca in ["ca", "other-ca"] {
            try openssl(["req", "-x509"] + curve + ["-keyout", "\(ca).key", "-out", "\(ca).pem", "-days", "2",
                         "-subj", "/CN=Bouncer Test \(ca)", "-addext", "basicConstraints=critical,CA:TRUE",
                         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        }
        try openssl(["req"] + curve + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
            .write(toFile: directory + "/server.ext", atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                     "-days", "2", "-extfile", "server.ext", "-out", "server.pem"])
        return TestPKI(directory: directory, caFile: directory + "/ca.pem", otherCAFile: directory + "/other-ca.pem",
                       serverCertificateFile: directory + "/server.pem", serverKeyFile: directory + "/server.key")
    }

    /// Deletes the directory.
    public func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// The openssl CLI failed.
public struct TestPKIError: Error, CustomStringConvertible {
    /// Command and output.
    public var message: String
    /// The message.
    public var description: String { message }
}
