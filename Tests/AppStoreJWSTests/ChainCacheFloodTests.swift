import Foundation
import XCTest
@testable import AppStoreJWS

/// The verified-chain cache under attack: keyed by the certificates (not the header text), filled
/// only by fully verified input, so a flood of distinct headers cannot evict what genuine traffic uses.
final class ChainCacheFloodTests: XCTestCase {
    let policy = VerificationPolicy(bundleId: "com.bouncer.test", environments: [.sandbox, .production], appAppleId: 42)
    let intermediate = Fixture.pkiCert("intermediate.pem"), root = Fixture.pkiCert("root.pem")

    /// The x5c string of a PEM file: its base64 body, which is the standard base64 of the DER.
    func x5c(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            .filter { !$0.hasPrefix("-----") }.joined()
    }

    /// Two genuine chains (the valid leaf, and the 2020 leaf at a 2020 date) and their transactions.
    func genuine() throws -> [String] {
        [try Fixture.sign(Fixture.transactionPayload()),
         try Fixture.sign(Fixture.transactionPayload(signedDate: 1_600_000_000_000),
                          x5c: [Fixture.variant("leaf-expired-2021.pem"), intermediate, root])]
    }

    func testSameCertificatesInAReencodedHeaderHitTheCache() throws {
        let verifier = SignedDataVerifier(roots: try Fixture.testRoots(), chainCacheCapacity: 4)
        let plain = try Fixture.sign(Fixture.transactionPayload())
        let chain = try [Fixture.pkiCert("leaf.pem"), intermediate, root].map(x5c).map { "\"\($0)\"" }.joined(separator: ", ")
        // Validly signed, but the header text differs: other key order, whitespace and an extra key.
        let reencoded = try Fixture.sign(Fixture.transactionPayload(transactionId: "2000000999"),
                                         header: "{ \"x5c\": [\(chain)], \"kid\": \"k\", \"alg\": \"ES256\" }")
        XCTAssertNotEqual(Fixture.segments(plain)[0], Fixture.segments(reencoded)[0])
        XCTAssertFalse(try verifier.verifyTransaction(plain, policy: policy).details.chainCacheHit)
        XCTAssertTrue(try verifier.verifyTransaction(reencoded, policy: policy).details.chainCacheHit)
        XCTAssertEqual(verifier.cachedChainCount, 1)
        XCTAssertEqual(verifier.cache.insertions, 1)
        XCTAssertEqual(verifier.cache.headerCount, 2, "both verified header texts now name the one chain")
    }

    func testAVerifiedHeaderTextHitsWithoutAnotherInsertion() throws {
        let verifier = SignedDataVerifier(roots: try Fixture.testRoots(), chainCacheCapacity: 4)
        let first = try Fixture.sign(Fixture.transactionPayload())
        let second = try Fixture.sign(Fixture.transactionPayload(transactionId: "2000000777"))
        XCTAssertEqual(Fixture.segments(first)[0], Fixture.segments(second)[0])
        XCTAssertFalse(try verifier.verifyTransaction(first, policy: policy).details.chainCacheHit)
        XCTAssertTrue(try verifier.verifyTransaction(second, policy: policy).details.chainCacheHit)
        XCTAssertEqual(verifier.cache.insertions, 1)
        XCTAssertEqual(verifier.cache.headerCount, 1)
        // A known header text with a forged payload: the memoized key still needs the signature.
        let parts = Fixture.segments(second)
        let forged = [parts[0], Fixture.b64url(Array(Fixture.transactionPayload(transactionId: "666").utf8)), parts[2]]
            .joined(separator: ".")
        XCTAssertVerification(try verifier.verifyTransaction(forged, policy: policy), code: .jwsVerificationFailed, step: .signature)
    }

    func testAKnownHeaderTextNeverExtendsItsCertificatesValidity() throws {
        let verifier = SignedDataVerifier(roots: try Fixture.testRoots(), chainCacheCapacity: 4)
        let chain = [Fixture.variant("leaf-expired-2021.pem"), intermediate, root]
        let in2020 = try Fixture.sign(Fixture.transactionPayload(signedDate: 1_600_000_000_000), x5c: chain)
        let in2025 = try Fixture.sign(Fixture.transactionPayload(signedDate: 1_760_000_000_000), x5c: chain)
        XCTAssertEqual(Fixture.segments(in2020)[0], Fixture.segments(in2025)[0])
        XCTAssertNoThrow(try verifier.verifyTransaction(in2020, policy: policy))
        XCTAssertEqual(verifier.cache.headerCount, 1)
        XCTAssertVerification(try verifier.verifyTransaction(in2025, policy: policy), code: .jwsVerificationFailed, step: .validity)
    }

    func testAnEvictedChainTakesItsHeaderTextsWithIt() throws {
        let verifier = SignedDataVerifier(roots: try Fixture.testRoots(), chainCacheCapacity: 1)
        let genuine = try genuine()
        XCTAssertNoThrow(try verifier.verifyTransaction(genuine[0], policy: policy))
        XCTAssertNoThrow(try verifier.verifyTransaction(genuine[1], policy: policy))
        XCTAssertEqual(verifier.cachedChainCount, 1)
        XCTAssertEqual(verifier.cache.headerCount, 1)
        XCTAssertFalse(try verifier.verifyTransaction(genuine[0], policy: policy).details.chainCacheHit)
    }

    func testFailuresInsertNothingEvenWithAGenuineChain() throws {
        let verifier = SignedDataVerifier(roots: try Fixture.testRoots(), chainCacheCapacity: 4)
        let parts = Fixture.segments(try Fixture.sign(Fixture.transactionPayload()))
        // Genuine chain, forged payload: the chain validates, the signature does not.
        let forged = [parts[0], Fixture.b64url(Array(Fixture.transactionPayload(transactionId: "666").utf8)), parts[2]]
            .joined(separator: ".")
        XCTAssertVerification(try verifier.verifyTransaction(forged, policy: policy), code: .jwsVerificationFailed, step: .signature)
        // Genuine chain and signature, wrong project: a claims failure inserts nothing either.
        let other = VerificationPolicy(bundleId: "com.other", environments: [.sandbox])
        XCTAssertVerification(try verifier.verifyTransaction(parts.joined(separator: "."), policy: other),
                              code: .bundleIdMismatch, step: .claims)
        XCTAssertEqual(verifier.cachedChainCount, 0)
        XCTAssertEqual(verifier.cache.insertions, 0)
    }

    func testDistinctHeaderFloodCannotEvictGenuineChains() throws {
        let verifier = SignedDataVerifier(roots: try Fixture.testRoots(), chainCacheCapacity: 4)
        let genuine = try genuine()
        let stats = Self.runFlood(verifier: verifier, genuine: genuine, policy: policy, rounds: 25, attacksPerRound: 8)
        // Each genuine chain misses once (its first use), then always hits: 48 of 50.
        XCTAssertEqual(stats.genuineHits, 48)
        XCTAssertEqual(stats.genuineRequests, 50)
        XCTAssertEqual(stats.attacksAccepted, 0)
        XCTAssertEqual(verifier.cache.insertions, 2, "one insertion per chain, none for the 200 failures")
        XCTAssertEqual(verifier.cachedChainCount, 2)
        XCTAssertEqual(verifier.cache.headerCount, 2, "no attacker header text is memoized")
        print("chain cache under a distinct-header flood: genuine hit rate \(stats.genuineHits)/\(stats.genuineRequests), "
              + "\(verifier.cache.insertions) insertions for \(stats.attacks) attacker inputs")
    }

    struct FloodStats {
        var genuineRequests = 0, genuineHits = 0, attacks = 0, attacksAccepted = 0
    }

    /// Interleaves genuine requests with attacker inputs: the genuine headers re-encoded (same
    /// certificates, new whitespace and key order, so new header text) and plain garbage.
    static func runFlood(verifier: SignedDataVerifier, genuine: [String], policy: VerificationPolicy,
                         rounds: Int, attacksPerRound: Int) -> FloodStats {
        var stats = FloodStats()
        var serial = 0
        for _ in 0..<rounds {
            for jws in genuine {
                stats.genuineRequests += 1
                if let result = try? verifier.verifyTransaction(jws, policy: policy), result.details.chainCacheHit {
                    stats.genuineHits += 1
                }
            }
            for index in 0..<attacksPerRound {
                serial += 1
                let source = Fixture.segments(genuine[index % genuine.count])
                let attack: String
                if index % 4 == 3 {
                    attack = Fixture.b64url(Array("{\"alg\":\"ES256\",\"x5c\":[\"garbage\(serial)\"]}".utf8)) + "." + source[1] + "." + source[2]
                } else {
                    var header = Fixture.b64urlDecode(source[0]) ?? []
                    // `{"alg":"ES256", ...}` → `{ "serial": n, "alg":...`: distinct text, same certificates.
                    header.removeFirst()
                    header = Array("{ \"n\": \(serial),".utf8) + header
                    attack = Fixture.b64url(header) + "." + source[1] + "." + source[2]
                }
                stats.attacks += 1
                if (try? verifier.verifyTransaction(attack, policy: policy)) != nil { stats.attacksAccepted += 1 }
            }
        }
        return stats
    }
}
