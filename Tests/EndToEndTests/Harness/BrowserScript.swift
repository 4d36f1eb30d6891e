import Foundation
import TestSupport
import XCTest

/// Runs one of `Tests/EndToEndTests/console/*.py` (Selenium, headless Chromium through `console/headless.py`) with
/// `environment` on top of the process's, and answers its stdout. Its exit status 3 (Chromium or Selenium missing) is
/// a skip, or a failure when `CI=true` (CI installs them); any other non-zero status fails with its output.
enum BrowserScript {
    /// The browser is missing where it must not be (CI).
    struct Missing: Error, CustomStringConvertible { let description: String }

    static let screenshots = TestPaths.repoRoot.appendingPathComponent(".build/console-screenshots")

    static func run(_ name: String, _ environment: [String: String], context: String = "",
                    file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"
        var all = ProcessInfo.processInfo.environment
        all["SCREENSHOT_DIR"] = screenshots.path
        // Debian's Selenium: a `pip install --user selenium` (another version, other dependencies) must not shadow it.
        all["PYTHONNOUSERSITE"] = "1"
        for (key, value) in environment { all[key] = value }
        let script = TestPaths.repoRoot.appendingPathComponent("Tests/EndToEndTests/console/\(name)")
        let run = try ProcessRun.run(URL(fileURLWithPath: "/usr/bin/env"), [python, script.path], environment: all)
        let output = String(decoding: run.stdout, as: UTF8.self)
        if run.status == 3 {
            let message = "headless Chromium or Selenium is not installed (apt-get install chromium chromium-driver "
                + "python3-selenium): \(output)"
            if ProcessInfo.processInfo.environment["CI"] == "true" { throw Missing(description: message) }
            throw XCTSkip(message)
        }
        XCTAssertEqual(run.status, 0, "\(name) failed:\n\(output)\n\(run.stderr)\n\(context)", file: file, line: line)
        return output
    }
}
