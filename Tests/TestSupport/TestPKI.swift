import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The one test PKI: the committed chain in `Tests/Fixtures/pki` (root → intermediate → leaf, Apple's shape) plus
/// its defect variants in `Tests/AppStoreJWSTests/Fixtures/certs` (expired, not-yet-valid, wrong OID, untrusted
/// root…), all made by `Tests/AppStoreJWSTests/Fixtures/generate-pki.sh`; JWS are minted by `sign-jws`.
///
/// Committed files rather than an in-process generator: the `bouncer` process, `bouncer verify` and a shell
/// (the README's curl tour) trust the same `root.pem` the unit tests do, and no test target needs OpenSSL.
public enum TestPKI {
    public static var root: String { TestPaths.pki.appendingPathComponent("root.pem").path }
    public static var intermediate: String { TestPaths.pki.appendingPathComponent("intermediate.pem").path }
    public static var leaf: String { TestPaths.pki.appendingPathComponent("leaf.pem").path }
    /// `[leaf, intermediate, root]`: the chain `sign-jws` writes by default.
    public static var validChain: [String] { [leaf, intermediate, root] }
    /// A file of `Tests/Fixtures/pki` (e.g. `keys/other-root.key`).
    public static func file(_ name: String) -> String { TestPaths.pki.appendingPathComponent(name).path }
    /// A defect variant (e.g. `leaf-expired-2021.pem`).
    public static func variant(_ name: String) -> String { TestPaths.untrustedCerts.appendingPathComponent(name).path }

    /// A compact ES256 JWS over `payload` from `sign-jws`. With no option, the default chain's header is written once
    /// and reused (`--header`), which skips three certificate conversions per JWS. `header` is raw header JSON.
    public static func sign(_ payload: String, x5c: [String] = [], key: String? = nil, alg: String? = nil,
                            header: String? = nil) throws -> String {
        var arguments: [String] = []
        var headerPath: String?
        defer { if let headerPath { try? FileManager.default.removeItem(atPath: headerPath) } }
        if let header {
            headerPath = try writeTemporary(header, name: "header")
            arguments += ["--header", headerPath ?? ""]
        } else if key == nil, x5c.isEmpty, alg == nil, let cached = try defaultHeaderFile() {
            arguments += ["--header", cached]
        }
        if let key { arguments += ["--key", key] }
        for cert in x5c { arguments += ["--x5c", cert] }
        if let alg { arguments += ["--alg", alg] }
        arguments.append("-")
        return try run(arguments, payload: payload)
    }

    private static func run(_ arguments: [String], payload: String) throws -> String {
        let p = Process()
        p.executableURL = TestPaths.signJWS
        p.arguments = arguments
        let input = Pipe(), output = Pipe(), errors = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = errors
        try p.run()
        input.fileHandleForWriting.write(Data(payload.utf8))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw HarnessFailure(description: "sign-jws failed (\(p.terminationStatus)): \(String(decoding: err, as: UTF8.self))")
        }
        return String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func writeTemporary(_ text: String, name: String) throws -> String {
        let path = NSTemporaryDirectory() + "bouncer-pki-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    private static let headerFile = Mutex<String?>(nil)

    private static func defaultHeaderFile() throws -> String? {
        if let path = headerFile.withLock({ $0 }) { return path }
        let jws = try run(validChain.flatMap { ["--x5c", $0] } + ["-"], payload: #"{"probe":true}"#)
        guard let first = jws.split(separator: ".").first else { return nil }
        var b64 = first.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64) else { return nil }
        let path = try writeTemporary(String(decoding: data, as: UTF8.self), name: "default-header")
        headerFile.withLock { $0 = path }
        return path
    }
}
