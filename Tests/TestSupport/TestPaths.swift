public import Foundation

/// A failure of the test harness itself (binary missing, server never listened, malformed response), with what it saw.
public struct HarnessFailure: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// Repository-relative paths for every test target (repo root = two levels up from this file's folder).
public enum TestPaths {
    public static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The committed test PKI (see its README): root, intermediate, leaf, keys and `sign-jws`.
    public static let pki = repoRoot.appendingPathComponent("Tests/Fixtures/pki")
    public static let signJWS = pki.appendingPathComponent("sign-jws")
    public static let testRoot = pki.appendingPathComponent("root.pem")
    /// Certificates with one defect each (expired, wrong OID, untrusted chain…), made by the same generator.
    public static let untrustedCerts = repoRoot.appendingPathComponent("Tests/AppStoreJWSTests/Fixtures/certs")
    /// Real Apple-signed vectors, public data copied into the repository (see its README): a clone with nothing
    /// beside it runs every test. Apple's root certificates are in `../apple-certs` next to this folder.
    public static let vectors = repoRoot.appendingPathComponent("Tests/Fixtures/apple/test-vectors")

    /// `.build/<config>/bouncer`, next to the test bundle (or `.build/debug`).
    public static func bouncerBinary() throws -> URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        if dir.lastPathComponent.hasSuffix(".xctest") { dir = dir.deletingLastPathComponent() }
        let candidates = [dir, Bundle.main.bundleURL.deletingLastPathComponent(), repoRoot.appendingPathComponent(".build/debug")]
        for candidate in candidates {
            let url = candidate.appendingPathComponent("bouncer")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw HarnessFailure(description: "bouncer binary not found next to the test bundle (\(dir.path)) or in "
            + ".build/debug: run `swift build --build-tests` first")
    }
}

/// Open file descriptors of this process.
public func openFDCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// SplitMix64: a reproducible random sequence, so a failing order or input can be replayed from its seed.
public struct SeededGenerator: RandomNumberGenerator {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
