// Receipts per second for the StoreKit 1 verifier (release build, one core): the real 2025 receipt (SHA-256, 2
// records, 5.6 KB) and 2020 receipt (SHA-1, 187 records, 79 KB), each at its creation date; then the payload decoder
// alone on the 2020 payload. Built by bench/verify-receipt/run.
import AppStoreJWS
internal import Crypto
import Foundation

@main
struct ReceiptBench {
    static func main() throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, let seconds = Double(arguments[2]) else { fatalError("usage: receipt-bench VECTORS SECONDS") }
        let vectors = URL(fileURLWithPath: arguments[1])
        for (file, bundle) in [("legacy-receipt-sandbox-2025-sha256-g5.b64", "dev.bonzer.weeka.app"),
                               ("legacy-receipt-sandbox-2020-sha1.b64", "com.nutcall.alert")] {
            let text = try String(contentsOf: vectors.appendingPathComponent(file), encoding: .utf8)
            let der = try ReceiptVerifier.der(fromFileBytes: Array(text.utf8))
            let policy = VerificationPolicy(bundleId: bundle, environments: [.sandbox])
            let records = try ReceiptVerifier.apple.verify(der: der, policy: policy).payload.inAppPurchases.count
            let full = rate(seconds) { _ = try? ReceiptVerifier.apple.verify(der: der, policy: policy) }
            let base64 = rate(seconds) { _ = try? ReceiptVerifier.apple.verify(base64: text, policy: policy) }
            let message = try PKCS7SignedData(der: der)
            let decode = rate(seconds) { _ = try? ReceiptPayloadDecoder.decode(message.content) }
            print("\(file): \(der.count) B DER, \(records) records: verify(der) \(Int(full))/s (\(us(full)) µs), "
                + "verify(base64) \(Int(base64))/s, payload decode alone \(Int(decode))/s (\(us(decode)) µs)")
        }
    }

    static func rate(_ seconds: Double, _ body: () -> Void) -> Double {
        let start = Date()
        var count = 0
        while Date().timeIntervalSince(start) < seconds {
            for _ in 0..<10 { body() }
            count += 10
        }
        return Double(count) / Date().timeIntervalSince(start)
    }

    static func us(_ rate: Double) -> String { String(format: "%.0f", 1_000_000 / rate) }
}
