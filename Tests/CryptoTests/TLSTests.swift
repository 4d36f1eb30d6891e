import Foundation
import XCTest
import Crypto
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// TLS client and server contexts against each other on 127.0.0.1 with a PKI made by the test.
final class TLSTests: XCTestCase {
    private var pki: TLSTestPKI!

    override func setUpWithError() throws { pki = try TLSTestPKI.make() }
    override func tearDown() { pki.remove() }

    private var serverConfiguration: TLSServerConfiguration {
        TLSServerConfiguration(certificateChainFile: pki.serverCertificateFile, privateKeyFile: pki.serverKeyFile)
    }

    private func connect(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(result, 0)
        return fd
    }

    private func handshake(_ port: Int, name: String, configuration: TLSClientConfiguration) throws -> (TLSConnection, Int32) {
        let fd = try connect(port)
        do {
            return (try TLSConnection(context: try TLSContext(client: configuration), connectedSocket: fd, serverName: name, deadline: .now + .seconds(5)), fd)
        } catch {
            close(fd)
            throw error
        }
    }

    func testRoundTripWithTrustedCAByNameAndAddress() throws {
        let server = try LocalHTTPSServer(tls: serverConfiguration) { request in .respond(status: 200, body: "hello \(request.path)") }
        defer { server.stop() }
        for name in ["localhost", "127.0.0.1"] {
            let (tls, fd) = try handshake(server.port, name: name, configuration: TLSClientConfiguration(additionalCAFile: pki.caFile))
            defer { close(fd) }
            XCTAssertTrue(["TLSv1.2", "TLSv1.3"].contains(tls.protocolVersion))
            XCTAssertEqual(tls.negotiatedApplicationProtocol, "http/1.1")
            try Array("GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8).withUnsafeBytes { try tls.write($0, deadline: .now + .seconds(5)) }
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = try chunk.withUnsafeMutableBytes { try tls.read(into: $0, deadline: .now + .seconds(5)) }
                if count == 0 { break }
                received += chunk.prefix(count)
            }
            XCTAssertEqual(String(decoding: received, as: UTF8.self), "HTTP/1.1 200 Test\r\nContent-Length: 8\r\n\r\nhello /x")
            tls.shutdown(deadline: .now + .seconds(1))
        }
        XCTAssertEqual(server.connectionCount, 2)
    }

    func testWithoutALPNOfferTheServerProceedsWithout() throws {
        let server = try LocalHTTPSServer(tls: serverConfiguration) { _ in .respond(status: 200) }
        defer { server.stop() }
        let (tls, fd) = try handshake(server.port, name: "localhost", configuration: TLSClientConfiguration(additionalCAFile: pki.caFile, applicationProtocols: []))
        defer { close(fd) }
        XCTAssertNil(tls.negotiatedApplicationProtocol)
        let (other, otherFD) = try handshake(server.port, name: "localhost", configuration: TLSClientConfiguration(additionalCAFile: pki.caFile, applicationProtocols: ["h2"]))
        defer { close(otherFD) }
        XCTAssertNil(other.negotiatedApplicationProtocol)
    }

    func testRefusesWrongHostNameAndUntrustedCA() throws {
        let server = try LocalHTTPSServer(tls: serverConfiguration) { _ in .respond(status: 200) }
        defer { server.stop() }
        let cases: [(String, TLSClientConfiguration, String)] = [
            ("example.com", TLSClientConfiguration(additionalCAFile: pki.caFile), "hostname mismatch"),
            ("127.0.0.2", TLSClientConfiguration(additionalCAFile: pki.caFile), "IP address mismatch"),
            ("localhost", TLSClientConfiguration(additionalCAFile: pki.otherCAFile), "unable to get local issuer certificate"),
            ("localhost", TLSClientConfiguration(), "unable to get local issuer certificate"),
        ]
        for (name, configuration, reason) in cases {
            XCTAssertThrowsError(try handshake(server.port, name: name, configuration: configuration)) { error in
                guard let error = error as? CryptoError else { return XCTFail("\(error)") }
                XCTAssertEqual(error.code, .certificateRejected, "\(name): \(error.debugDescription)")
                XCTAssertEqual(error.reason, "server certificate rejected: \(reason)")
            }
        }
    }

    func testReadDeadlineAndBadConfiguration() throws {
        let server = try LocalHTTPSServer(tls: serverConfiguration) { _ in .stall(seconds: 2) }
        defer { server.stop() }
        let (tls, fd) = try handshake(server.port, name: "localhost", configuration: TLSClientConfiguration(additionalCAFile: pki.caFile))
        defer { close(fd) }
        try Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8).withUnsafeBytes { try tls.write($0, deadline: .now + .seconds(5)) }
        let started = ContinuousClock.now
        var chunk = [UInt8](repeating: 0, count: 64)
        XCTAssertThrowsError(try chunk.withUnsafeMutableBytes { try tls.read(into: $0, deadline: .now + .milliseconds(300)) }) { error in
            XCTAssertEqual((error as? CryptoError)?.code, .timeout)
        }
        let waited = ContinuousClock.now - started
        XCTAssertGreaterThanOrEqual(waited, .milliseconds(300))
        XCTAssertLessThan(waited, .milliseconds(1500))

        XCTAssertThrowsError(try TLSContext(client: TLSClientConfiguration(additionalCAFile: pki.directory + "/missing.pem"))) { error in
            XCTAssertEqual((error as? CryptoError)?.code, .configuration)
        }
        XCTAssertThrowsError(try TLSContext(server: TLSServerConfiguration(certificateChainFile: pki.serverCertificateFile, privateKeyFile: pki.directory + "/ca.key"))) { error in
            XCTAssertEqual((error as? CryptoError)?.code, .configuration)
        }
    }
}
