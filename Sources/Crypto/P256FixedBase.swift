import COpenSSL

extension P256 {
    /// ECDSA P-256 verification with a precomputed table for one public key: the steady-state path of a key that
    /// verifies many signatures (the chain cache's leaf key signs every StoreKit 2 JWS of its months of service).
    ///
    /// Why: OpenSSL's ECDSA verification computes u1·G + u2·Q. G, the curve's generator, has a built-in table
    /// (nistz256: 37 additions, no doubling), but Q, the public key, is a variable point (256 doublings and ~52
    /// additions): ~75 % of the 832k instructions of `EVP_PKEY_verify` (callgrind). Here Q is made the generator
    /// of a second copy of the P-256 group and OpenSSL precomputes that group's table (`EC_GROUP_precompute_mult`,
    /// ~280 M instructions and ~150 KB, once per key), so u2·Q is a fixed-base multiplication too: ~435k in all.
    ///
    /// The arithmetic is OpenSSL's `ossl_ecdsa_simple_verify_sig` step for step (SEC 1 §4.1.4), with the same
    /// checks: 0 < r, s < n; w = s⁻¹ mod n; u1 = e·w, u2 = r·w mod n (e = the 32-byte digest: no truncation for
    /// a 256-bit order); R = u1·G + u2·Q, refused when it is the point at infinity; valid iff x(R) mod n = r.
    /// `P256Tests` checks it against `EVP_PKEY_verify` on valid, tampered and out-of-range signatures.
    ///
    /// `@unchecked Sendable`: immutable after `init`; `EC_POINT_mul` and friends only read a `const EC_GROUP`
    /// (its precomputed table included), and every call has its own `BN_CTX` and points.
    final class FixedBaseVerifier: @unchecked Sendable {
        /// P-256 with Q as its generator and the precomputed multiples of Q; owned, freed in `deinit`.
        private let keyGroup: OpaquePointer

        /// Builds the table for `pkey` (EC P-256); `nil` when OpenSSL cannot (the caller keeps `EVP_PKEY_verify`).
        init?(pkey: OpaquePointer) {
            guard let standard = Curve.shared.group, let order = Curve.shared.order else { return nil }
            // The uncompressed point 04‖X‖Y (SEC 1 §2.3.3), as `coordinates` reads it.
            var encoded = [UInt8](repeating: 0, count: 65)
            var length = 0
            let read = encoded.withUnsafeMutableBufferPointer { buffer in
                EVP_PKEY_get_octet_string_param(pkey, "encoded-pub-key", buffer.baseAddress, buffer.count, &length)
            }
            guard read == 1, length == 65 else { return nil }
            guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else { return nil }
            guard let context = BN_CTX_new() else { EC_GROUP_free(group); return nil }
            defer { BN_CTX_free(context) }
            // Owned here, freed right after: EC_GROUP_set_generator copies the point into the group.
            guard let point = EC_POINT_new(standard) else { EC_GROUP_free(group); return nil }
            defer { EC_POINT_free(point) }
            let ok = encoded.withUnsafeBufferPointer { buffer in
                EC_POINT_oct2point(standard, point, buffer.baseAddress, buffer.count, context) == 1
            }
            // Cofactor 1 (P-256's); set_generator drops the group's table for G, precompute builds Q's.
            guard ok, EC_GROUP_set_generator(group, point, order, BN_value_one()) == 1,
                  bouncer_EC_GROUP_precompute_mult(group, context) == 1 else {
                EC_GROUP_free(group)
                return nil
            }
            keyGroup = group
        }

        deinit { EC_GROUP_free(keyGroup) }

        /// Verifies raw r‖s (64 bytes, big-endian) over a 32-byte `digest`.
        func verify(rawSignature: UnsafeBufferPointer<UInt8>, digest: UnsafeBufferPointer<UInt8>) -> Bool {
            guard rawSignature.count == 64, digest.count == 32,
                  let signature = rawSignature.baseAddress, let digestBytes = digest.baseAddress,
                  let standard = Curve.shared.group, let order = Curve.shared.order,
                  let context = BN_CTX_new() else { return false }
            defer { BN_CTX_free(context) }
            // Every BIGNUM below belongs to `context` (BN_CTX_get) and is freed with it.
            BN_CTX_start(context)
            defer { BN_CTX_end(context) }
            guard let r = BN_CTX_get(context), let s = BN_CTX_get(context), let e = BN_CTX_get(context),
                  let w = BN_CTX_get(context), let u1 = BN_CTX_get(context), let u2 = BN_CTX_get(context),
                  let x = BN_CTX_get(context),
                  BN_bin2bn(signature, 32, r) != nil, BN_bin2bn(signature + 32, 32, s) != nil,
                  BN_bin2bn(digestBytes, 32, e) != nil else { return false }
            // 0 < r < n and 0 < s < n (BN_bin2bn never yields a negative number).
            guard BN_is_zero(r) == 0, BN_is_zero(s) == 0, BN_ucmp(r, order) < 0, BN_ucmp(s, order) < 0 else { return false }
            // w = s⁻¹ mod n: the binary inverse below (~35k instructions; BN_mod_inverse ~157k), proved by w·s ≡ 1
            // before use, with BN_mod_inverse whenever that proof fails (so a wrong inverse can never be used).
            guard let check = BN_CTX_get(context),
                  Self.inverseModOrder(signature + 32).withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, 32, w) }) != nil,
                  BN_mod_mul(check, w, s, order, context) == 1 else { return false }
            if BN_is_one(check) != 1 {
                guard BN_mod_inverse(w, s, order, context) != nil else { return false }
            }
            guard BN_mod_mul(u1, e, w, order, context) == 1,
                  BN_mod_mul(u2, r, w, order, context) == 1 else { return false }
            // Owned here, freed on return. The key group's points are compatible with the standard group's (same
            // curve, same method), which is what EC_POINT_add checks.
            guard let sum = EC_POINT_new(standard) else { return false }
            defer { EC_POINT_free(sum) }
            guard let keyPart = EC_POINT_new(keyGroup) else { return false }
            defer { EC_POINT_free(keyPart) }
            guard EC_POINT_mul(standard, sum, u1, nil, nil, context) == 1,
                  EC_POINT_mul(keyGroup, keyPart, u2, nil, nil, context) == 1,
                  EC_POINT_add(standard, sum, sum, keyPart, context) == 1,
                  // Fails for the point at infinity: such a signature is refused, as by OpenSSL's verify.
                  EC_POINT_get_affine_coordinates(standard, sum, x, nil, context) == 1,
                  BN_nnmod(x, x, order, context) == 1 else { return false }
            return BN_ucmp(x, r) == 0
        }

        /// s⁻¹ mod n (big-endian, 32 bytes) for the 32 big-endian bytes at `bytes`, 0 < s < n (checked by the caller):
        /// the binary extended Euclidean algorithm (variable time: s is public). Keeps x1·s ≡ u and x2·s ≡ v (mod n)
        /// with u, v halved when even and the smaller subtracted from the larger, until one of them is 1. Any other
        /// input yields some value, never a trap; the caller proves the result before using it.
        static func inverseModOrder(_ bytes: UnsafePointer<UInt8>) -> [UInt8] {
            var u = Scalar(bigEndian: bytes), v = Scalar.order
            var x1 = Scalar(w0: 1, w1: 0, w2: 0, w3: 0), x2 = Scalar(w0: 0, w1: 0, w2: 0, w3: 0)
            // Each round removes at least one bit from u or v (513 bits in all): bounded even for a bad input.
            for _ in 0..<1_100 {
                if u.isOne || v.isOne || u.isZero || v.isZero { break }
                while u.isEven, !u.isZero { u.halve(carry: false); x1.halveModOrder() }
                while v.isEven, !v.isZero { v.halve(carry: false); x2.halveModOrder() }
                if u >= v {
                    u.subtract(v); x1.subtractModOrder(x2)
                } else {
                    v.subtract(u); x2.subtractModOrder(x1)
                }
            }
            return (u.isOne ? x1 : x2).bigEndianBytes
        }

        /// Test seam: whether a·b ≡ 1 (mod n) for 32-byte big-endian a and b, by OpenSSL's BN_mod_mul.
        static func productModOrderIsOne(_ a: [UInt8], _ b: [UInt8]) -> Bool {
            guard a.count == 32, b.count == 32, let order = Curve.shared.order, let context = BN_CTX_new() else { return false }
            defer { BN_CTX_free(context) }
            BN_CTX_start(context)
            defer { BN_CTX_end(context) }
            // Owned by `context`.
            guard let x = BN_CTX_get(context), let y = BN_CTX_get(context), let product = BN_CTX_get(context),
                  BN_bin2bn(a, 32, x) != nil, BN_bin2bn(b, 32, y) != nil,
                  BN_mod_mul(product, x, y, order, context) == 1 else { return false }
            return BN_is_one(product) == 1
        }

        /// A 256-bit unsigned integer, four little-endian 64-bit words; every operation reports its overflow.
        struct Scalar: Comparable {
            var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64

            /// n, the order of P-256's group.
            static let order = Scalar(w0: 0xF3B9_CAC2_FC63_2551, w1: 0xBCE6_FAAD_A717_9E84, w2: 0xFFFF_FFFF_FFFF_FFFF, w3: 0xFFFF_FFFF_0000_0000)

            init(w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64) { self.w0 = w0; self.w1 = w1; self.w2 = w2; self.w3 = w3 }

            init(bigEndian bytes: UnsafePointer<UInt8>) {
                func word(_ offset: Int) -> UInt64 {
                    var value: UInt64 = 0
                    for index in offset..<(offset + 8) { value = value << 8 | UInt64(bytes[index]) }
                    return value
                }
                self.init(w0: word(24), w1: word(16), w2: word(8), w3: word(0))
            }

            var bigEndianBytes: [UInt8] {
                var bytes: [UInt8] = []
                bytes.reserveCapacity(32)
                for word in [w3, w2, w1, w0] {
                    for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
                }
                return bytes
            }

            var isEven: Bool { w0 & 1 == 0 }
            var isZero: Bool { w0 | w1 | w2 | w3 == 0 }
            var isOne: Bool { w0 == 1 && w1 | w2 | w3 == 0 }

            static func < (lhs: Scalar, rhs: Scalar) -> Bool {
                if lhs.w3 != rhs.w3 { return lhs.w3 < rhs.w3 }
                if lhs.w2 != rhs.w2 { return lhs.w2 < rhs.w2 }
                if lhs.w1 != rhs.w1 { return lhs.w1 < rhs.w1 }
                return lhs.w0 < rhs.w0
            }

            /// self >>= 1, with `carry` as the new top bit (bit 256 of a 257-bit sum).
            mutating func halve(carry: Bool) {
                w0 = w0 >> 1 | w1 << 63
                w1 = w1 >> 1 | w2 << 63
                w2 = w2 >> 1 | w3 << 63
                w3 = w3 >> 1 | (carry ? 1 << 63 : 0)
            }

            /// self = self + other mod 2²⁵⁶; returns the carry out.
            @discardableResult
            mutating func add(_ other: Scalar) -> Bool { ripple(other) { $0.addingReportingOverflow($1) } }

            /// self = self − other mod 2²⁵⁶; returns the borrow out.
            @discardableResult
            mutating func subtract(_ other: Scalar) -> Bool { ripple(other) { $0.subtractingReportingOverflow($1) } }

            /// Word by word from the least significant, with `operation`'s overflow carried (or borrowed) into the next.
            private mutating func ripple(_ other: Scalar, _ operation: (UInt64, UInt64) -> (partialValue: UInt64, overflow: Bool)) -> Bool {
                var carry = false
                func step(_ a: inout UInt64, _ b: UInt64) {
                    let (first, overflow1) = operation(a, b)
                    let (second, overflow2) = operation(first, carry ? 1 : 0)
                    a = second
                    carry = overflow1 || overflow2
                }
                step(&w0, other.w0); step(&w1, other.w1); step(&w2, other.w2); step(&w3, other.w3)
                return carry
            }

            /// self = self / 2 mod n, for self < n: (self + n) / 2 when odd (a 257-bit sum, its carry shifted in).
            mutating func halveModOrder() {
                let carry = isEven ? false : add(Scalar.order)
                halve(carry: carry)
            }

            /// self = self − other mod n, for self, other < n.
            mutating func subtractModOrder(_ other: Scalar) {
                if subtract(other) { add(Scalar.order) }
            }
        }

        /// The standard P-256 group (its generator's table is built into OpenSSL) and its order, for the process.
        private final class Curve: @unchecked Sendable {
            static let shared = Curve()
            /// Never freed: a process-lifetime singleton, only read after `init`.
            let group: OpaquePointer?
            /// Borrowed from `group` (get0): lives as long as it.
            let order: OpaquePointer?

            private init() {
                group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)
                order = group.flatMap { EC_GROUP_get0_order($0) }
            }
        }
    }
}
