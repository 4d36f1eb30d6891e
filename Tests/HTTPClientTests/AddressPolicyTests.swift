import HTTPClient
import TestSupport
import XCTest

/// The SSRF address policy as a table, and its use on connect (`Configuration.allowAddress`) against a live server.
final class AddressPolicyTests: XCTestCase {
    func v6(_ text: String) -> [UInt8] {
        var address = in6_addr()
        XCTAssertEqual(inet_pton(AF_INET6, text, &address), 1, text)
        return withUnsafeBytes(of: address) { Array($0) }
    }

    func testPublicAndNonPublicAddresses() {
        let refusedV4: [[UInt8]] = [
            [127, 0, 0, 1], [127, 255, 255, 254], [10, 0, 0, 1], [10, 255, 1, 2], [172, 16, 0, 1], [172, 31, 255, 255],
            [192, 168, 0, 1], [169, 254, 169, 254], [100, 64, 0, 1], [100, 127, 255, 255], [0, 0, 0, 0],
            [0, 1, 2, 3], [224, 0, 0, 1], [239, 255, 255, 250], [255, 255, 255, 255], [240, 0, 0, 1],
            [192, 0, 2, 1], [198, 51, 100, 7], [203, 0, 113, 9], [198, 18, 0, 1], [192, 0, 0, 8],
        ]
        for address in refusedV4 { XCTAssertFalse(AddressPolicy.isPublic(address), "\(address)") }
        let publicV4: [[UInt8]] = [[8, 8, 8, 8], [1, 1, 1, 1], [172, 15, 255, 255], [172, 32, 0, 1],
                                   [100, 63, 255, 255], [100, 128, 0, 1], [169, 253, 0, 1], [192, 169, 0, 1],
                                   [17, 253, 144, 10], [223, 255, 255, 255]]
        for address in publicV4 { XCTAssertTrue(AddressPolicy.isPublic(address), "\(address)") }

        for text in ["::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1",
                     "fe80::1", "febf::1", "fec0::1", "fc00::1", "fd12:3456::1", "ff02::1", "2001:db8::1",
                     "2001::1", "2002:7f00:1::1", "2002:0a00:0001::1", "64:ff9b::7f00:1", "64:ff9b::a00:1",
                     "64:ff9b:1::1", "100::1", "2001:10::1", "::2"] {
            XCTAssertFalse(AddressPolicy.isPublic(v6(text)), text)
        }
        for text in ["2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8", "64:ff9b::808:808",
                     "2002:0808:0808::1", "2001:4860::8888"] {
            XCTAssertTrue(AddressPolicy.isPublic(v6(text)), text)
        }
        XCTAssertFalse(AddressPolicy.isPublic([]))
        XCTAssertFalse(AddressPolicy.isPublic([1, 2, 3]))
        XCTAssertFalse(AddressPolicy.isPublic([UInt8](repeating: 0x20, count: 15)))
    }

    func testResolveAndText() throws {
        XCTAssertEqual(try AddressPolicy.resolve(host: "127.0.0.1"), [[127, 0, 0, 1]])
        XCTAssertEqual(try AddressPolicy.resolve(host: "[::1]"), [v6("::1")])
        XCTAssertTrue(try AddressPolicy.resolve(host: "localhost").allSatisfy { !AddressPolicy.isPublic($0) })
        XCTAssertEqual(AddressPolicy.text([10, 1, 2, 3]), "10.1.2.3")
        XCTAssertEqual(AddressPolicy.text(v6("::ffff:127.0.0.1")), "::ffff:127.0.0.1")
        XCTAssertThrowsError(try AddressPolicy.resolve(host: "no-such-host.invalid"))
    }

    /// The check runs on the address being connected to: a loopback server is never reached.
    func testConnectRefusesDisallowedAddressesWithoutConnecting() throws {
        let server = try LocalHTTPSServer { _ in .respond(status: 200, body: "reached") }
        defer { server.stop() }
        let strict = try HTTPClient(configuration: HTTPClient.Configuration(
            retry: .never, allowAddress: { AddressPolicy.isPublic($0) }))
        for host in ["127.0.0.1", "localhost"] {
            XCTAssertThrowsError(try strict.execute(HTTPClientRequest(url: "http://\(host):\(server.port)/"))) { error in
                XCTAssertEqual((error as? HTTPClientError)?.code, .addressNotAllowed, "\(error)")
            }
        }
        XCTAssertEqual(server.connectionCount, 0)
        let open = try HTTPClient(configuration: HTTPClient.Configuration(retry: .never, allowAddress: { _ in true }))
        XCTAssertEqual(try open.execute(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")).status, 200)
    }
}
