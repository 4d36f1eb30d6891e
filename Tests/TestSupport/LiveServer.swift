public import HTTPCore
import Synchronization
public import XCTest

/// Collects access-log lines from the server's threads.
public final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    public init() {}
    public func append(_ line: String) { lines.withLock { $0.append(line) } }
    public var all: [String] { lines.withLock { $0 } }
}

extension XCTestCase {
    /// Starts an in-process `HTTPServer` for `router` on 127.0.0.1, port 0 (the rest of `configuration` as given),
    /// shut down (2 s grace) when the current test ends; returns it and its port.
    public func startLiveServer(
        _ configuration: HTTPServer.Configuration, router: Router, accessLog: LogLines? = nil,
        admission: (@Sendable (Request) -> HTTPError?)? = nil, observer: (@Sendable (RequestRecord) -> Void)? = nil
    ) throws -> (server: HTTPServer, port: Int) {
        var c = configuration
        c.host = "127.0.0.1"
        c.port = 0
        var log: (@Sendable (String) -> Void)?
        if let accessLog { log = { accessLog.append($0) } }
        let server = HTTPServer(configuration: c, router: router, accessLog: log, admission: admission, observer: observer)
        let port = try server.start()
        addTeardownBlock { server.shutdown(gracePeriod: .seconds(2)) }
        return (server, port)
    }
}
