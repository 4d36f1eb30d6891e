// libFuzzer entry for ES256 verification, compiled into the Crypto module (so it reaches the test seam
// `verifyDigest`) by bench/fuzz-es256. A differential target: every input is verified twice for the same key,
// through the fixed-base table (P256FixedBase.swift, with its Swift inverse) and through OpenSSL's EVP_PKEY_verify;
// any disagreement traps. Input: mode byte, 32 digest bytes, 64 signature bytes (r‖s), the rest a message.
//   mode % 4 == 0  r, s and the digest exactly as given (out-of-range and degenerate values included)
//   mode % 4 == 1  a valid signature over SHA-256(message), then XORed with the given 64 bytes
//   mode % 4 == 2  a valid signature with r or s replaced by an edge value (0, 1, n−1, n, n+1, 2²⁵⁶−1, n−s)
//   mode % 4 == 3  a valid signature over SHA-256(message), unchanged: both paths must accept it
import Primitives
private let signer: P256.PrivateKey? = try? P256.PrivateKey()
private let key: P256.PublicKey? = {
    guard let signer, let key = try? P256.PublicKey(derSubjectPublicKeyInfo: signer.publicKey.derRepresentation),
          key.prepareFixedBase() else { return nil }
    return key
}()
private let order: [UInt8] = [
    0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
]

/// `value + delta` over 32 big-endian bytes, wrapping.
private func add(_ value: [UInt8], _ delta: Int) -> [UInt8] {
    var out = value
    var carry = delta
    var index = 31
    while index >= 0 && carry != 0 {
        let sum = Int(out[index]) + carry
        out[index] = UInt8(truncatingIfNeeded: sum)
        carry = sum >> 8   // arithmetic shift: a borrow propagates as −1
        index -= 1
    }
    return out
}

/// n − value over 32 big-endian bytes (value < n).
private func negate(_ value: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    var borrow = 0
    for index in stride(from: 31, through: 0, by: -1) {
        var d = Int(order[index]) - Int(value[index]) - borrow
        borrow = d < 0 ? 1 : 0
        if d < 0 { d += 256 }
        out[index] = UInt8(d)
    }
    return out
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzES256(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0, let signer, let key else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let mode = input[0]
    var given = Array(input.dropFirst().prefix(96))
    given += [UInt8](repeating: 0, count: 96 - given.count)
    let message = Array(input.dropFirst(97))
    var digest = Array(given[0..<32])
    var signature = Array(given[32..<96])
    if mode % 4 != 0 {
        guard let valid = try? signer.signES256(message), valid.count == 64 else { return 0 }
        digest = Digest.sha256(message)
        switch mode % 4 {
        case 1:
            signature = zip(valid, signature).map { $0 ^ $1 }
        case 2:
            let r = Array(valid[0..<32]), s = Array(valid[32..<64])
            let edges: [[UInt8]] = [
                [UInt8](repeating: 0, count: 32), add([UInt8](repeating: 0, count: 32), 1), add(order, -1), order,
                add(order, 1), [UInt8](repeating: 0xFF, count: 32), negate(s), negate(r),
            ]
            let edge = edges[Int(mode >> 2) % edges.count]
            signature = mode & 0x80 == 0 ? edge + s : r + edge
        default:
            signature = valid
        }
    }
    let table = key.verifyDigest(rawSignature: signature, digest: digest, fixedBase: true)
    let openSSL = key.verifyDigest(rawSignature: signature, digest: digest, fixedBase: false)
    guard let table, let openSSL else { fatalError("the fixed-base table is missing") }
    if table != openSSL {
        fatalError("ES256 disagreement: table \(table), EVP_PKEY_verify \(openSSL), mode \(mode), "
            + "r‖s \(Hex.encode(signature)), digest \(Hex.encode(digest))")
    }
    if mode % 4 == 3 && !table { fatalError("a valid signature was refused") }
    return 0
}
