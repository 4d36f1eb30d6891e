import Synchronization

/// Who the client is: the socket peer, or, when the peer is a trusted proxy, the address that proxy
/// chain reports in `X-Forwarded-For`.
enum ClientAddress {
    /// The client address for a request from `peer` carrying these `X-Forwarded-For` values (in order).
    ///
    /// Only a peer inside `trustedProxies` is believed. Its list is read right to left (each proxy
    /// appends the address it received the request from), skipping trusted hops; the first untrusted
    /// hop is the client. Anything a client wrote itself sits further left and is never reached, so a
    /// spoofed header cannot choose the result. A hop that is not an address ends the walk at the last
    /// trusted one; a list of only trusted hops yields its leftmost.
    static func resolve(peer: String, forwardedFor: [String], trustedProxies: [IPNetwork]) -> String {
        guard !trustedProxies.isEmpty, let peerAddress = IPAddress(peer),
              trustedProxies.contains(where: { $0.contains(peerAddress) }) else { return peer }
        var client = peer
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }
        for hop in hops.reversed().prefix(64) {
            guard let address = parseHop(hop) else { break }
            client = address.description
            if !trustedProxies.contains(where: { $0.contains(address) }) { break }
        }
        return client
    }

    /// An `X-Forwarded-For` element: an address, tolerating `1.2.3.4:port` and `[v6]:port` forms.
    static func parseHop(_ raw: Substring) -> IPAddress? {
        let hop = raw.trimmingOWS()
        if let address = IPAddress(hop) { return address }
        if hop.hasPrefix("["), let close = hop.firstIndex(of: "]") {
            return IPAddress(hop[hop.index(after: hop.startIndex)..<close])
        }
        if let colon = hop.firstIndex(of: ":"), hop[hop.index(after: colon)...].allSatisfy(\.isNumber),
           let address = IPAddress(hop[..<colon]), address.isIPv4 {
            return address
        }
        return nil
    }

    /// The socket peer as the server names it: IPv4-mapped IPv6 (dual-stack listeners) as plain IPv4.
    static func normalizedPeer(_ peer: String) -> String {
        guard let address = IPAddress(peer) else { return peer }
        return address.description
    }
}

/// Who a per-client limit counts: every such limit (connections per client, rate limits) keys by this and nothing
/// else, so they agree on who one client is.
///
/// An IPv4 client is its address. An IPv6 client is its /64: that is one subscriber's link (RFC 4291 §2.5.4,
/// RFC 6177), and a host changes addresses inside it at will (SLAAC privacy addresses, RFC 8981), so keying by the
/// whole address would give one host 2^64 budgets. IPv4-mapped IPv6 (a dual-stack socket's IPv4 peer) is IPv4.
public struct ClientKey: Hashable, Sendable, CustomStringConvertible {
    /// `a.b.c.d` for IPv4, `prefix::/64` (RFC 5952) for IPv6, or the text itself when it is not an address.
    public let description: String

    /// The key of `address` in text form (`Request.clientAddress`).
    public init(address: String) {
        description = IPAddress(address).map(Self.key) ?? address
    }

    /// The key of a parsed address.
    public init(_ address: IPAddress) { description = Self.key(address) }

    private static func key(_ address: IPAddress) -> String {
        address.isIPv4 ? address.description : address.masked(64).description + "/64"
    }
}

extension Request {
    /// The key every per-client limit uses for this request's client (`clientAddress`, IPv6 by its /64).
    public var clientKey: ClientKey { ClientKey(address: clientAddress) }
}

/// Open connections per client (`ClientKey`), shared by every event loop, for
/// `Configuration.maxConnectionsPerClient`. One short lock per accept and per close.
final class ConnectionsPerClient: Sendable {
    let limit: Int
    private let counts = Mutex<[ClientKey: Int]>([:])

    /// `limit` 0 disables the cap (nothing is counted).
    init(limit: Int) { self.limit = max(0, limit) }

    var isEnabled: Bool { limit > 0 }

    /// Takes a slot for `client`; false (and nothing taken) when it already holds `limit`.
    func acquire(_ client: ClientKey) -> Bool {
        counts.withLock { counts in
            let current = counts[client, default: 0]
            guard current < limit else { return false }
            counts[client] = current + 1
            return true
        }
    }

    /// Gives back a slot taken by `acquire`.
    func release(_ client: ClientKey) {
        counts.withLock { counts in
            let remaining = counts[client, default: 0] - 1
            counts[client] = remaining > 0 ? remaining : nil
        }
    }

    /// Slots held by `client` (tests, diagnostics).
    func count(_ client: ClientKey) -> Int { counts.withLock { $0[client, default: 0] } }
}
