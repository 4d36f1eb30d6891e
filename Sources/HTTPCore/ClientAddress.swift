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

/// Open connections per client address, shared by every event loop, for
/// `Configuration.maxConnectionsPerClient`. One short lock per accept and per close.
final class ConnectionsPerClient: Sendable {
    let limit: Int
    private let counts = Mutex<[String: Int]>([:])

    /// `limit` 0 disables the cap (nothing is counted).
    init(limit: Int) { self.limit = max(0, limit) }

    var isEnabled: Bool { limit > 0 }

    /// Takes a slot for `client`; false (and nothing taken) when it already holds `limit`.
    func acquire(_ client: String) -> Bool {
        counts.withLock { counts in
            let current = counts[client, default: 0]
            guard current < limit else { return false }
            counts[client] = current + 1
            return true
        }
    }

    /// Gives back a slot taken by `acquire`.
    func release(_ client: String) {
        counts.withLock { counts in
            let remaining = counts[client, default: 0] - 1
            counts[client] = remaining > 0 ? remaining : nil
        }
    }

    /// Slots held by `client` (tests, diagnostics).
    func count(_ client: String) -> Int { counts.withLock { $0[client, default: 0] } }
}
