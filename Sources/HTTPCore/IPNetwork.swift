import Glibc

/// An IPv4 or IPv6 address as 16 bytes (IPv4 as the IPv4-mapped `::ffff:a.b.c.d`), so one comparison
/// serves both families and a dual-stack listener's mapped peers match IPv4 networks.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The 128 bits, most significant first.
    var high: UInt64
    var low: UInt64

    /// Parses dotted IPv4 or RFC 4291 IPv6 text (inet_pton); nil for anything else (no ports, no zones).
    public init?(_ text: some StringProtocol) {
        let string = String(text)
        guard !string.isEmpty, string.utf8.count < 64, !string.utf8.contains(0) else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, string, &v4) == 1 {
            self.init(ipv4NetworkOrder: v4.s_addr)
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, string, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        self.init(high: Self.word(bytes, 0), low: Self.word(bytes, 8))
    }

    private init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    private init(ipv4NetworkOrder: UInt32) {
        self.init(high: 0, low: 0xFFFF_0000_0000 | UInt64(UInt32(bigEndian: ipv4NetworkOrder)))
    }

    private static func word(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in offset..<(offset + 8) { value = value << 8 | UInt64(bytes[index]) }
        return value
    }

    /// True for IPv4 (including IPv4-mapped IPv6, which is how a dual-stack socket reports IPv4 peers).
    public var isIPv4: Bool { high == 0 && low >> 32 == 0xFFFF }

    /// Canonical text: dotted quad for IPv4 (also when it arrived IPv4-mapped), RFC 5952 for IPv6.
    public var description: String {
        if isIPv4 {
            let v = UInt32(truncatingIfNeeded: low)
            return "\(v >> 24).\(v >> 16 & 0xFF).\(v >> 8 & 0xFF).\(v & 0xFF)"
        }
        var v6 = in6_addr()
        withUnsafeMutableBytes(of: &v6) { raw in
            for index in 0..<8 {
                raw[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(index)))
                raw[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(index)))
            }
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &v6, &text, socklen_t(text.count)) != nil else { return "::" }
        return text.withUnsafeBufferPointer { String(decoding: $0.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    }

    /// The address with all but the first `bits` of its 128 bits cleared.
    func masked(_ bits: Int) -> IPAddress {
        func mask(_ n: Int) -> UInt64 { n <= 0 ? 0 : n >= 64 ? .max : ~(UInt64.max >> UInt64(n)) }
        return IPAddress(high: high & mask(bits), low: low & mask(bits - 64))
    }
}

/// An address block in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`; a bare address is a single host).
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    /// The first address of the block.
    public let address: IPAddress
    /// Prefix length within the address's own family (0–32 for IPv4, 0–128 for IPv6).
    public let prefixLength: Int

    /// Parses one CIDR block; the error says what is wrong in words an operator can act on.
    public init(parsing text: some StringProtocol) throws(IPNetworkError) {
        let trimmed = String(text).trimmingOWS()
        let parts = trimmed.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, let address = IPAddress(first) else {
            throw IPNetworkError("\(trimmed.debugDescription) is not an IPv4 or IPv6 address or CIDR block (e.g. 10.0.0.0/8, fd00::/8)")
        }
        let maximum = address.isIPv4 ? 32 : 128
        var length = maximum
        if parts.count == 2 {
            guard let n = Int(parts[1]), parts[1].allSatisfy(\.isASCII), (0...maximum).contains(n) else {
                throw IPNetworkError("\(trimmed.debugDescription): the prefix length must be a number from 0 to \(maximum)")
            }
            length = n
        }
        let network = address.masked(Self.bits128(length, ipv4: address.isIPv4))
        guard network == address else {
            throw IPNetworkError("\(trimmed.debugDescription) has host bits set; did you mean \(network)/\(length)?")
        }
        self.address = address
        self.prefixLength = length
    }

    private static func bits128(_ length: Int, ipv4: Bool) -> Int { ipv4 ? 96 + length : length }

    /// Whether `candidate` lies in this block (IPv4 blocks match IPv4-mapped IPv6 addresses too).
    public func contains(_ candidate: IPAddress) -> Bool {
        if address.isIPv4 != candidate.isIPv4 { return false }
        return candidate.masked(Self.bits128(prefixLength, ipv4: address.isIPv4)) == address
    }

    /// `address/prefixLength` in canonical text.
    public var description: String { "\(address)/\(prefixLength)" }

    /// Parses a comma-separated list (`BOUNCER_TRUSTED_PROXIES`); empty items are skipped, the first
    /// bad one is the error.
    public static func parseList(_ text: String) throws(IPNetworkError) -> [IPNetwork] {
        var networks: [IPNetwork] = []
        for item in text.split(separator: ",") where !item.trimmingOWS().isEmpty {
            networks.append(try IPNetwork(parsing: item))
        }
        return networks
    }
}

/// A CIDR block that does not parse; `description` names the text and the problem.
public struct IPNetworkError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, e.g. `"10.0.0.1/8" has host bits set; did you mean 10.0.0.0/8?`.
    public let description: String

    init(_ description: String) { self.description = description }
}

extension String {
    /// Trims SP / HTAB at both ends.
    func trimmingOWS() -> String { String(self[...].trimmingOWS()) }
}
