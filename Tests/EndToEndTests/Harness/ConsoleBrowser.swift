import Foundation
import XCTest

/// The console's headless Chromium scripts (`Tests/EndToEndTests/console/`), run against a live server.
enum ConsoleBrowser {
    /// Where the scripts save their screenshots.
    static var screenshots: URL { TestPaths.repoRoot.appendingPathComponent(".build/console-screenshots") }

    /// Runs `script` against `server` with `extra` variables (plus `BOUNCER_URL`, `ADMIN_TOKEN`, `SCREENSHOT_DIR`);
    /// its exit status, stdout and stderr. Without Chromium or Selenium (exit 3) the test is skipped, and fails in CI.
    static func run(_ script: String, server: BouncerProcess, _ extra: [String: String]) throws
        -> (status: Int32, output: String, stderr: String)
    {
        let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"
        var environment = ProcessInfo.processInfo.environment
        environment["BOUNCER_URL"] = "http://127.0.0.1:\(server.port)"
        environment["ADMIN_TOKEN"] = E2E.adminToken
        environment["SCREENSHOT_DIR"] = screenshots.path
        // Debian's Selenium (.ci/setup), not one a user installed with pip (~/.local may hold one missing its deps).
        environment["PYTHONNOUSERSITE"] = "1"
        environment.merge(extra) { $1 }
        let path = TestPaths.repoRoot.appendingPathComponent("Tests/EndToEndTests/console/\(script)")
        let run = try ProcessRun.run(URL(fileURLWithPath: "/usr/bin/env"), [python, path.path], environment: environment)
        let output = String(decoding: run.stdout, as: UTF8.self)
        if run.status == 3 {
            let message = "headless Chromium or Selenium is not installed (apt-get install chromium chromium-driver "
                + "python3-selenium): \(output)"
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail(message) } else { throw XCTSkip(message) }
        }
        return (run.status, output, run.stderr)
    }
}
