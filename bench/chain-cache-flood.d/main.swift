// Compiled into module AppStoreJWS by bench/chain-cache-flood (public API only, so it builds against
// any revision). args: ROOT.pem CAPACITY ROUNDS ATTACKS_PER_ROUND GENUINE.jws...
import Foundation

let args = CommandLine.arguments
guard args.count >= 6, let capacity = Int(args[2]), let rounds = Int(args[3]), let attacksPerRound = Int(args[4]) else {
    print("usage: flood ROOT.pem CAPACITY ROUNDS ATTACKS_PER_ROUND GENUINE.jws...")
    exit(2)
}
let roots = try TrustedRoots(contentsOf: [args[1]])
let genuine = try args[5...].map { try String(contentsOfFile: $0, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) }
let policy = VerificationPolicy(bundleId: "com.bouncer.test", environments: [.sandbox, .production], appAppleId: 42)

func b64url(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}
func unb64url(_ text: Substring) -> [UInt8] {
    var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while s.count % 4 != 0 { s += "=" }
    return [UInt8](Data(base64Encoded: s) ?? Data())
}

let verifier = SignedDataVerifier(roots: roots, chainCacheCapacity: capacity)
var genuineRequests = 0, genuineHits = 0, attacks = 0, attacksAccepted = 0, serial = 0
let started = Date()
for _ in 0..<rounds {
    for jws in genuine {
        genuineRequests += 1
        if let result = try? verifier.verifyTransaction(jws, policy: policy), result.details.chainCacheHit { genuineHits += 1 }
    }
    for index in 0..<attacksPerRound {
        serial += 1
        let parts = genuine[index % genuine.count].split(separator: ".", omittingEmptySubsequences: false)
        // The genuine header with one extra member: new header text, the same certificates, a signature that fails.
        var header = unb64url(parts[0])
        header.removeFirst()
        header = Array("{ \"n\": \(serial),".utf8) + header
        attacks += 1
        if (try? verifier.verifyTransaction(b64url(header) + "." + parts[1] + "." + parts[2], policy: policy)) != nil {
            attacksAccepted += 1
        }
    }
}
let seconds = Date().timeIntervalSince(started)
let rate = Double(genuineHits) / Double(max(1, genuineRequests)) * 100
print(String(format: "genuine hit rate %.1f%% (%d/%d) | attacker inputs %d, accepted %d | cached chains %d/%d | %.0f verifications/s",
             rate, genuineHits, genuineRequests, attacks, attacksAccepted, verifier.cachedChainCount, capacity,
             Double(genuineRequests + attacks) / seconds))
