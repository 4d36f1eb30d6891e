import XCTest
@testable import HTTPCore

/// CIDR parsing (BOUNCER_TRUSTED_PROXIES) and the X-Forwarded-For walk behind `Request.clientAddress`.
final class ClientAddressTests: XCTestCase {
    func networks(_ text: String) throws -> [IPNetwork] { try IPNetwork.parseList(text) }

    func error(_ text: String) -> String? {
        do { _ = try IPNetwork.parseList(text); return nil } catch { return error.description }
    }

    func testCIDRParsing() throws {
        let list = try networks(" 10.0.0.0/8, 192.168.1.7 ,fd00::/8,::1, 0.0.0.0/0 ,")
        XCTAssertEqual(list.map(\.description), ["10.0.0.0/8", "192.168.1.7/32", "fd00::/8", "::1/128", "0.0.0.0/0"])
        XCTAssertEqual(try networks("2001:DB8:0:0::/32").first?.description, "2001:db8::/32")
        XCTAssertEqual(try networks("::/0").first?.prefixLength, 0)
        XCTAssertEqual(try networks(""), [])
    }

    func testCIDRErrorsSayWhatIsWrong() {
        XCTAssertEqual(error("10.0.0.1/8"), #""10.0.0.1/8" has host bits set; did you mean 10.0.0.0/8?"#)
        XCTAssertEqual(error("fd00::1/8"), #""fd00::1/8" has host bits set; did you mean fd00::/8?"#)
        XCTAssertEqual(error("10.0.0.0/33"), #""10.0.0.0/33": the prefix length must be a number from 0 to 32"#)
        XCTAssertEqual(error("::/129"), #""::/129": the prefix length must be a number from 0 to 128"#)
        XCTAssertEqual(error("10.0.0.0/"), #""10.0.0.0/": the prefix length must be a number from 0 to 32"#)
        XCTAssertEqual(error("10.0.0.0/8/8"), #""10.0.0.0/8/8": the prefix length must be a number from 0 to 32"#)
        XCTAssertEqual(error("10.0.0.0/x"), #""10.0.0.0/x": the prefix length must be a number from 0 to 32"#)
        for bad in ["bogus", "10.0.0", "256.1.1.1", "1.2.3.4:80", "fe80::1%eth0", "/8"] {
            XCTAssertEqual(error(bad), "\(bad.debugDescription) is not an IPv4 or IPv6 address or CIDR block (e.g. 10.0.0.0/8, fd00::/8)", bad)
        }
        XCTAssertNotNil(error("10.0.0.0/8, nope"), "one bad item fails the list")
    }

    func testMembershipBoundariesAndFamilies() throws {
        let block = try IPNetwork(parsing: "10.1.0.0/16")
        XCTAssertTrue(block.contains(try XCTUnwrap(IPAddress("10.1.0.0"))))
        XCTAssertTrue(block.contains(try XCTUnwrap(IPAddress("10.1.255.255"))))
        XCTAssertFalse(block.contains(try XCTUnwrap(IPAddress("10.2.0.0"))))
        XCTAssertFalse(block.contains(try XCTUnwrap(IPAddress("10.0.255.255"))))
        // A dual-stack socket reports IPv4 peers IPv4-mapped: they match IPv4 blocks, never IPv6 ones.
        XCTAssertTrue(block.contains(try XCTUnwrap(IPAddress("::ffff:10.1.2.3"))))
        XCTAssertFalse(try IPNetwork(parsing: "::/0").contains(try XCTUnwrap(IPAddress("10.1.2.3"))))
        XCTAssertFalse(try IPNetwork(parsing: "0.0.0.0/0").contains(try XCTUnwrap(IPAddress("2001:db8::1"))))
        let v6 = try IPNetwork(parsing: "2001:db8:abcd::/48")
        XCTAssertTrue(v6.contains(try XCTUnwrap(IPAddress("2001:db8:abcd:ffff::1"))))
        XCTAssertFalse(v6.contains(try XCTUnwrap(IPAddress("2001:db8:abce::1"))))
        let odd = try IPNetwork(parsing: "192.168.0.128/25")
        XCTAssertTrue(odd.contains(try XCTUnwrap(IPAddress("192.168.0.200"))))
        XCTAssertFalse(odd.contains(try XCTUnwrap(IPAddress("192.168.0.127"))))
        XCTAssertEqual(IPAddress("::ffff:10.1.2.3")?.description, "10.1.2.3")
        XCTAssertEqual(ClientAddress.normalizedPeer("::ffff:127.0.0.1"), "127.0.0.1")
    }

    func testForwardedForIsBelievedOnlyFromTrustedPeersRightmostUntrustedWins() throws {
        let trusted = try networks("10.0.0.0/8, fd00::/8")
        func client(_ peer: String, _ xff: [String]) -> String {
            ClientAddress.resolve(peer: peer, forwardedFor: xff, trustedProxies: trusted)
        }
        XCTAssertEqual(client("203.0.113.9", ["1.2.3.4"]), "203.0.113.9", "spoofed header from an untrusted peer")
        XCTAssertEqual(client("10.0.0.2", []), "10.0.0.2", "a trusted peer without the header is the client")
        XCTAssertEqual(client("10.0.0.2", ["198.51.100.7"]), "198.51.100.7")
        // The client wrote "1.1.1.1"; our proxies appended the real client and a trusted hop.
        XCTAssertEqual(client("10.0.0.2", ["1.1.1.1, 198.51.100.7, 10.0.0.5"]), "198.51.100.7")
        XCTAssertEqual(client("10.0.0.2", ["1.1.1.1", "198.51.100.7,10.9.9.9"]), "198.51.100.7", "several header lines, in order")
        XCTAssertEqual(client("10.0.0.2", ["10.0.0.7, 10.0.0.5"]), "10.0.0.7", "only trusted hops: the leftmost")
        XCTAssertEqual(client("10.0.0.2", ["garbage, 10.0.0.5"]), "10.0.0.5", "a non-address ends the walk")
        XCTAssertEqual(client("10.0.0.2", ["198.51.100.7:5123"]), "198.51.100.7")
        XCTAssertEqual(client("10.0.0.2", ["[2001:db8::7]:443"]), "2001:db8::7")
        XCTAssertEqual(client("fd00::1", ["2001:DB8:0::7"]), "2001:db8::7", "canonical text")
        XCTAssertEqual(client("::ffff:10.0.0.2", ["::ffff:198.51.100.7"]), "198.51.100.7")
        XCTAssertEqual(ClientAddress.resolve(peer: "10.0.0.2", forwardedFor: ["1.2.3.4"], trustedProxies: []), "10.0.0.2",
                       "no trusted proxies: the header is never read")
    }

    func testConnectionsPerClientCountsAndReleases() {
        let counts = ConnectionsPerClient(limit: 2)
        let a = ClientKey(address: "10.0.0.1"), b = ClientKey(address: "10.0.0.2")
        XCTAssertTrue(counts.acquire(a))
        XCTAssertTrue(counts.acquire(a))
        XCTAssertFalse(counts.acquire(a))
        XCTAssertTrue(counts.acquire(b))
        counts.release(a)
        XCTAssertEqual(counts.count(a), 1)
        XCTAssertTrue(counts.acquire(a))
        XCTAssertFalse(ConnectionsPerClient(limit: 0).isEnabled)
        // Two addresses of one /64 share the count.
        XCTAssertTrue(counts.acquire(ClientKey(address: "2001:db8::1")))
        XCTAssertTrue(counts.acquire(ClientKey(address: "2001:db8::2")))
        XCTAssertFalse(counts.acquire(ClientKey(address: "2001:db8::ffff:3")))
        XCTAssertTrue(counts.acquire(ClientKey(address: "2001:db8:0:1::1")))
    }

    func testClientKeyIsTheIPv4AddressOrTheIPv6Slash64() {
        func key(_ address: String) -> String { ClientKey(address: address).description }
        // IPv6: one /64 is one client (SLAAC privacy addresses rotate inside it), any other /64 another.
        XCTAssertEqual(key("2001:db8:1:2::1"), "2001:db8:1:2::/64")
        XCTAssertEqual(key("2001:DB8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64")
        XCTAssertEqual(ClientKey(address: "2001:db8:1:2::1"), ClientKey(address: "2001:db8:1:2:aaaa::9"))
        XCTAssertNotEqual(ClientKey(address: "2001:db8:1:2::1"), ClientKey(address: "2001:db8:1:3::1"))
        XCTAssertNotEqual(ClientKey(address: "2001:db8:1:2::1"), ClientKey(address: "2001:db9:1:2::1"))
        XCTAssertEqual(key("::1"), "::/64")
        // IPv4 as before: the whole address, also when a dual-stack socket reports it IPv4-mapped.
        XCTAssertEqual(key("10.0.0.7"), "10.0.0.7")
        XCTAssertNotEqual(ClientKey(address: "10.0.0.7"), ClientKey(address: "10.0.0.8"))
        XCTAssertEqual(key("::ffff:10.0.0.7"), "10.0.0.7")
        XCTAssertEqual(ClientKey(address: "::ffff:10.0.0.7"), ClientKey(address: "10.0.0.7"))
        // Not an address (never from a socket): kept as it is, so it is still one key.
        XCTAssertEqual(key("unix"), "unix")
        // The key a request's limits use.
        XCTAssertEqual(Request(method: .get, path: "/", remoteAddress: "2001:db8:1:2::1").clientKey.description,
                       "2001:db8:1:2::/64")
    }
}
