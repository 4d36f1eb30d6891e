// libFuzzer entry for the App Store credential input path (admin API / CLI → rules → OpenSSL's PEM and PKCS#8
// parsers → fingerprint; and stored sealed boxes → AES-GCM open), compiled by bench/fuzz-credentials with Domain's
// AppStoreCredentials.swift + DomainError.swift and the Crypto module. Any trap or ASan report is a bug.
// The first input byte selects the target:
//   mode % 3 == 0  the PEM as `private_key`: the rules, then (when they pass) P256.PrivateKey(pem:) + fingerprint
//   mode % 3 == 1  the PEM straight into P256.PrivateKey(pem:) (OpenSSL's parsers without our framing check)
//   mode % 3 == 2  the bytes as a stored sealed box: AESGCM.open under a fixed key (must fail closed)
import Foundation
internal import Crypto

private let key = [UInt8](repeating: 0x42, count: 32)
private let context = Array("bouncer:app-store-credentials:v1:00000000-0000-0000-0000-000000000001".utf8)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCredentials(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let mode = data[0]
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch mode % 3 {
    case 0:
        let pem = String(decoding: rest, as: UTF8.self)
        let problems = AppStoreCredentialRules.problems(
            issuerId: "57246542-96fe-1a63-e053-0824d011072a", keyId: "2X9R4HXF34", privateKeyPEM: pem)
        // Problems name only private_key, and their fixed messages never echo the input (it may be a real key).
        for problem in problems where problem.path != ["private_key"] || (pem.utf8.count > 40 && problem.message.contains(pem)) {
            fatalError("a problem outside private_key, or one echoing the input: \(problem)")
        }
        if problems.isEmpty { inspect(pem) }
    case 1:
        inspect(String(decoding: rest, as: UTF8.self))
    default:
        do {
            _ = try AESGCM.open(rest, key: key, authenticating: context)
            // A forgery under a fixed key and context without the key: practically impossible.
            fatalError("an arbitrary sealed box authenticated")
        } catch {
            guard !error.reason.isEmpty else { fatalError("error without a reason") }
        }
    }
    return 0
}

private func inspect(_ pem: String) {
    do {
        let privateKey = try P256.PrivateKey(pem: pem)
        let fingerprint = privateKey.fingerprint
        guard fingerprint.utf8.count == 64, fingerprint.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) })
        else { fatalError("fingerprint is not 64 lowercase hex digits: \(fingerprint)") }
    } catch {
        guard !error.reason.isEmpty else { fatalError("error without a reason") }
    }
}
