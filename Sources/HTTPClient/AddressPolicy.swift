import Glibc

/// Which IP addresses a server-side request may reach when the URL comes from a customer (webhooks): public unicast
/// only. Used twice: when the URL is configured (`resolve` + `isPublic`) and on every connect
/// (`HTTPClient.Configuration.allowAddress`), so a host that later resolves elsewhere (DNS rebinding) is refused.
public enum AddressPolicy {
    /// True for a public unicast address (4 or 16 bytes); false for loopback, private (RFC 1918), carrier-grade NAT,
    /// link-local, unique-local, site-local, unspecified, multicast, broadcast, reserved and documentation ranges,
    /// and for IPv6 forms that embed an IPv4 address (v4-mapped, v4-compatible, NAT64, 6to4) whose IPv4 address is
    /// not public. Teredo is refused outright (its embedded server and client addresses are not a destination).
    public static func isPublic(_ address: [UInt8]) -> Bool {
        if address.count == 4 { return isPublicV4(address[0], address[1], address[2], address[3]) }
        guard address.count == 16 else { return false }
        let a = address
        let first10Zero = a[0..<10].allSatisfy { $0 == 0 }
        // ::ffff:a.b.c.d (v4-mapped): the kernel connects to the IPv4 address.
        if first10Zero, a[10] == 0xFF, a[11] == 0xFF { return isPublicV4(a[12], a[13], a[14], a[15]) }
        // :: (unspecified), ::1 (loopback) and the deprecated v4-compatible ::a.b.c.d.
        if first10Zero, a[10] == 0, a[11] == 0 { return false }
        // 64:ff9b::/96 (NAT64 well-known prefix): reaches the embedded IPv4 address.
        if a[0] == 0x00, a[1] == 0x64, a[2] == 0xFF, a[3] == 0x9B, a[4..<12].allSatisfy({ $0 == 0 }) {
            return isPublicV4(a[12], a[13], a[14], a[15])
        }
        // 64:ff9b:1::/48 (local-use NAT64), 100::/64 (discard).
        if a[0] == 0x00, a[1] == 0x64, a[2] == 0xFF, a[3] == 0x9B { return false }
        if a[0] == 0x01, a[1] == 0x00, a[2..<8].allSatisfy({ $0 == 0 }) { return false }
        // 2002::/16 (6to4): reaches the embedded IPv4 address.
        if a[0] == 0x20, a[1] == 0x02 { return isPublicV4(a[2], a[3], a[4], a[5]) }
        // 2001::/32 (Teredo), 2001:db8::/32 (documentation), 2001:10::/28 and 2001:20::/28 (ORCHID).
        if a[0] == 0x20, a[1] == 0x01 {
            if a[2] == 0x00, a[3] == 0x00 { return false }
            if a[2] == 0x0D, a[3] == 0xB8 { return false }
            if a[2] == 0x00, (0x10...0x2F).contains(a[3]) { return false }
        }
        // fc00::/7 (unique local), fe80::/10 (link-local), fec0::/10 (site-local), ff00::/8 (multicast).
        if a[0] & 0xFE == 0xFC { return false }
        if a[0] == 0xFE, a[1] & 0xC0 == 0x80 || a[1] & 0xC0 == 0xC0 { return false }
        if a[0] == 0xFF { return false }
        // Only 2000::/3 is allocated global unicast.
        return a[0] & 0xE0 == 0x20
    }

    private static func isPublicV4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Bool {
        switch a {
        case 0, 10, 127: return false                       // "this network", private, loopback
        case 100 where b & 0xC0 == 64: return false         // 100.64.0.0/10 carrier-grade NAT
        case 169 where b == 254: return false               // link-local (cloud metadata: 169.254.169.254)
        case 172 where b & 0xF0 == 16: return false         // 172.16.0.0/12
        case 192 where b == 168: return false               // 192.168.0.0/16
        case 192 where b == 0 && (c == 0 || c == 2): return false  // IETF protocol assignments, TEST-NET-1
        case 198 where b & 0xFE == 18: return false         // 198.18.0.0/15 benchmarking
        case 198 where b == 51 && c == 100: return false    // TEST-NET-2
        case 203 where b == 0 && c == 113: return false     // TEST-NET-3
        case 224...255: return false                        // multicast, reserved, broadcast
        default: return true
        }
    }

    /// The raw address of a resolved `addrinfo` entry (4 bytes for AF_INET, 16 for AF_INET6), nil for others.
    static func bytes(_ info: addrinfo) -> [UInt8]? {
        guard let sockaddr = info.ai_addr else { return nil }
        switch info.ai_family {
        case AF_INET where Int(info.ai_addrlen) >= MemoryLayout<sockaddr_in>.size:
            return sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin_addr) { Array($0) }
            }
        case AF_INET6 where Int(info.ai_addrlen) >= MemoryLayout<sockaddr_in6>.size:
            return sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
            }
        default:
            return nil
        }
    }

    /// Every address `host` resolves to (an IP literal resolves to itself). Blocking (getaddrinfo).
    /// - Throws: `.connect` when the name does not resolve.
    public static func resolve(host: String) throws(HTTPClientError) -> [[UInt8]] {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(bare, nil, &hints, &list)
        guard status == 0, let list else {
            throw HTTPClientError(.connect, "cannot resolve \(bare)", debugDetail: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }   // ours; every entry is copied out before this returns
        var out: [[UInt8]] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let info = cursor {
            cursor = info.pointee.ai_next
            if let address = bytes(info.pointee), !out.contains(address) { out.append(address) }
        }
        return out
    }

    /// `a.b.c.d` or the RFC 5952 text of an IPv6 address, for messages.
    public static func text(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        let ok = address.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
