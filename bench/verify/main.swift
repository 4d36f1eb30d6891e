// Benchmark driver for bench/verify: verifications per second of distinct JWS through the public
// AppStoreJWS API, with the chain cache (capacity 64) and without it (capacity 0).
//   verify-bench --root FILE|apple --bundle-id ID --seconds S --label NAME [--only cached|uncached] JWS-FILE...
// Each JWS file holds one compact JWS; every JWS must verify (checked in a warm-up pass).
import AppStoreJWS
import Foundation
import Glibc

/// CPU seconds of this thread: `openssl speed` also counts user CPU time (not wall time) unless
/// given `-elapsed`, so on a shared machine CPU time is the like-for-like comparison.
func threadCPUSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

@main
struct VerifyBench {
    static func main() {
        var rootPath = "apple", bundleId = "", seconds = 3.0, label = "jws"
        var files: [String] = []
        var modes = [("cached", 64), ("uncached", 0)]
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            switch argument {
            case "--root": rootPath = arguments.popFirst() ?? rootPath
            case "--bundle-id": bundleId = arguments.popFirst() ?? ""
            case "--seconds": seconds = Double(arguments.popFirst() ?? "") ?? seconds
            case "--label": label = arguments.popFirst() ?? label
            case "--only": let only = arguments.popFirst() ?? ""; modes = modes.filter { $0.0 == only }
            default: files.append(argument)
            }
        }
        let roots: TrustedRoots
        do { roots = rootPath == "apple" ? .apple : try TrustedRoots(contentsOf: [rootPath]) } catch {
            print("bench: \(error)"); exit(2)
        }
        let inputs: [(String, SignedDataKind)] = files.compactMap { path in
            guard let data = FileManager.default.contents(atPath: path) else { return nil }
            let jws = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return (jws, SignedDataKind.guess(fromJWS: jws) ?? .transaction)
        }
        guard !inputs.isEmpty else { print("bench: no JWS"); exit(2) }
        let policy = VerificationPolicy(bundleId: bundleId, environments: [.sandbox, .production])
        let averageBytes = inputs.map { $0.0.utf8.count }.reduce(0, +) / inputs.count

        for (mode, capacity) in modes {
            let verifier = SignedDataVerifier(roots: roots, chainCacheCapacity: capacity)
            func once(_ input: (String, SignedDataKind)) throws(VerificationError) {
                switch input.1 {
                case .renewalInfo: _ = try verifier.verifyRenewalInfo(input.0, policy: policy)
                case .notification: _ = try verifier.verifyNotification(input.0, policy: policy)
                case .appTransaction: _ = try verifier.verifyAppTransaction(input.0, policy: policy)
                default: _ = try verifier.verifyTransaction(input.0, policy: policy)
                }
            }
            for input in inputs {
                do { try once(input) } catch { print("bench: warm-up failed: \(error)"); exit(1) }
            }
            var count = 0
            let cpuStart = threadCPUSeconds()
            let start = DispatchTime.now().uptimeNanoseconds
            let budget = UInt64(seconds * 1e9)
            var elapsed: UInt64 = 0
            repeat {
                for input in inputs { do { try once(input) } catch { print("bench: \(error)"); exit(1) } }
                count += inputs.count
                elapsed = DispatchTime.now().uptimeNanoseconds - start
            } while elapsed < budget
            let cpu = threadCPUSeconds() - cpuStart
            let rate = Double(count) / cpu
            let wall = Double(count) / (Double(elapsed) / 1e9)
            print("\(label) \(mode): \(Int(rate.rounded())) verifications/s of CPU time (\(String(format: "%.1f", 1e6 / rate)) µs each); "
                + "\(Int(wall.rounded()))/s wall; \(inputs.count) distinct JWS, ~\(averageBytes) B")
        }
    }
}
