// libFuzzer entry for AppStoreJWS, compiled into the AppStoreJWS module (so it reaches internals) by
// bench/fuzz-jws. Any trap, or any AddressSanitizer report (OpenSSL ownership bugs included), is a bug.
// The first input byte selects the target:
//   mode % 4 == 0  the whole verifier: kind = (mode >> 2) % 4, cache off when mode & 0x10
//   mode % 4 == 1  base64url / standard base64 decoders (re-encode round trip checked)
//   mode % 4 == 2  DER certificate parsing and every accessor, then chain validation as a leaf
//   mode % 4 == 3  PEM reader and the unverified kind/bundleId peeks
import Foundation
import JSON
import Primitives
internal import Crypto

private let fuzzRoots: TrustedRoots = {
    let testRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../Tests/Fixtures/pki/root.der")
    let extra = (try? Data(contentsOf: testRoot)).map { [UInt8]($0) }
    return (try? TrustedRoots(derCertificates: [AppleRootCertificates.g3] + (extra.map { [$0] } ?? []))) ?? .apple
}()
private let cached = SignedDataVerifier(roots: fuzzRoots, chainCacheCapacity: 8)
private let uncached = SignedDataVerifier(roots: fuzzRoots, chainCacheCapacity: 0)
private let policy = VerificationPolicy(bundleId: "com.loki-project.loki-messenger", environments: [.sandbox, .production], appAppleId: 1_470_168_868, allowXcode: true)
private let intermediateDER: [UInt8] = {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../Tests/Fixtures/pki/intermediate.pem")
    return (try? Data(contentsOf: path)).flatMap { PEM.certificates(in: [UInt8]($0))?.first } ?? []
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWS(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let mode = data[0]
    let rest = UnsafeBufferPointer(start: data + 1, count: size - 1)
    switch mode % 4 {
    case 0:
        let jws = String(decoding: rest, as: UTF8.self)
        let verifier = mode & 0x10 == 0 ? cached : uncached
        do {
            switch (mode >> 2) % 4 {
            case 0: _ = try verifier.verifyTransaction(jws, policy: policy)
            case 1: _ = try verifier.verifyRenewalInfo(jws, policy: policy)
            case 2: _ = try verifier.verifyNotification(jws, policy: policy)
            default: _ = try verifier.verifyAppTransaction(jws, policy: policy)
            }
        } catch {
            guard !error.reason.isEmpty, !error.isRetryable else { fatalError("malformed error \(error)") }
        }
    case 1:
        if let decoded = Base64.decodeURL(rest) {
            let again = Base64.encodeURL(decoded)
            // Canonical: re-encoding reproduces the input minus padding.
            let stripped = Array(rest).filter { $0 != UInt8(ascii: "=") }
            guard Array(again.utf8) == stripped else { fatalError("base64url round trip differs") }
        }
        _ = Base64.decodeStandard(rest)
    case 2:
        guard let certificate = Certificate(der: Array(rest)) else { return 0 }
        _ = certificate.notBefore
        _ = certificate.notAfter
        _ = certificate.isCA
        _ = certificate.allowsDigitalSignature
        _ = certificate.subjectDescription
        _ = certificate.hasNonCriticalExtension(oidContent: AppleSigningChain.leafMarkerOID)
        _ = certificate.p256PublicKey()?.verifyES256(rawSignature: [UInt8](repeating: 1, count: 64), message: UnsafeRawBufferPointer(rest))
        if let intermediate = Certificate(der: intermediateDER) {
            _ = fuzzRoots.store.validate(leaf: certificate, intermediate: intermediate, at: 1_760_000_000, strict: true)
            _ = fuzzRoots.store.validate(leaf: intermediate, intermediate: certificate, at: 1_760_000_000, strict: mode & 0x10 == 0)
        }
    default:
        _ = PEM.certificates(in: Array(rest))
        let text = String(decoding: rest, as: UTF8.self)
        _ = SignedDataKind.guess(fromJWS: text)
        _ = SignedDataKind.claimedBundleId(fromJWS: text)
    }
    OpenSSLErrors.clear()
    return 0
}
