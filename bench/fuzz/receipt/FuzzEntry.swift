// libFuzzer entry for AppReceipt, compiled into the AppReceipt module (so it reaches internals) by
// bench/fuzz-receipt. Any trap, or any AddressSanitizer report (OpenSSL CMS ownership bugs included), is a bug.
// The first input byte selects the target:
//   mode % 3 == 0  the DER reader + receipt payload decoder alone (our ASN.1 code, no OpenSSL)
//   mode % 3 == 1  the whole verifier on DER: PKCS#7 parse, signature, payload, chain (Apple Inc. Root + test root),
//                  marker OIDs, claims; then the unverified decode used by `bouncer verify`
//   mode % 3 == 2  the base64 front door (verify(base64:)) and the strict receipt-date parser
import AppStoreJWS
import Foundation
internal import Crypto

private let fuzzVerifier: ReceiptVerifier = {
    let testRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../Tests/Fixtures/pki/root.der")
    let extra = (try? Data(contentsOf: testRoot)).map { [UInt8]($0) }
    return ReceiptVerifier(rootDERs: [AppleRootCertificates.appleIncRoot] + (extra.map { [$0] } ?? [])) ?? .apple
}()
private let policy = VerificationPolicy(bundleId: "dev.bonzer.weeka.app", environments: [.sandbox, .production], allowXcode: true)

private func check(_ error: VerificationError) {
    guard !error.reason.isEmpty, !error.code.rawValue.isEmpty else { fatalError("malformed error \(error)") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReceipt(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let mode = data[0]
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch mode % 3 {
    case 0:
        if let payload = try? ReceiptPayloadDecoder.decode(rest) {
            guard payload.inAppPurchases.allSatisfy({ !$0.productId.isEmpty && !$0.transactionId.isEmpty }) else {
                fatalError("record without product or transaction id")
            }
            guard ReceiptDate(payload.creationDate.text) == payload.creationDate else { fatalError("date round trip differs") }
        }
    case 1:
        do { _ = try fuzzVerifier.verify(der: rest, policy: policy) } catch { check(error) }
        do { _ = try fuzzVerifier.verify(der: rest, policy: policy, at: Date(timeIntervalSince1970: 1_800_000_000)) } catch { check(error) }
        _ = ReceiptVerifier.decodeUnverified(der: rest)
    default:
        let text = String(decoding: rest, as: UTF8.self)
        do { _ = try fuzzVerifier.verify(base64: text, policy: policy) } catch { check(error) }
        _ = ReceiptDate(text)
    }
    return 0
}
