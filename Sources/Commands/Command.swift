import Glibc

/// One subcommand: its name, a one-line summary for `bouncer help`, its usage text and its body.
/// New subcommands (`migrate`, `verify`, `project`, `product`) are new entries in `CLI.commands` (the executable).
public struct Command: Sendable {
    /// The word after `bouncer`.
    public let name: String
    /// One line for `bouncer help`.
    public let summary: String
    /// The text `--help` prints.
    public let usage: String
    /// Receives the arguments after the subcommand name; returns the exit status.
    public let run: @Sendable ([String]) -> Int32

    /// A subcommand from its parts.
    public init(name: String, summary: String, usage: String, run: @escaping @Sendable ([String]) -> Int32) {
        self.name = name
        self.summary = summary
        self.usage = usage
        self.run = run
    }
}

/// Our own small command-line front end: no argument-parser package, by design. The subcommands' shared output
/// and option helpers live here; the executable adds the command table and the dispatch (`Sources/Bouncer/CLI.swift`).
public enum CLI {
    /// The version `bouncer version` prints.
    public static let version = "0.1.0"

    /// For commands without options: `--help` prints usage (exit 0), anything else is rejected (exit 2).
    /// Returns nil when there were no arguments.
    public static func handleHelpOrReject(_ args: [String], usage: String) -> Int32? {
        guard let first = args.first else { return nil }
        if first == "--help" || first == "-h" {
            out(usage)
            return 0
        }
        err("bouncer: unknown option '\(first)'\n\n" + usage)
        return 2
    }

    /// Writes to stdout unbuffered (one write(2)), so lines are visible to a pipe immediately.
    public static func out(_ text: String) { writeAll(1, text) }

    /// Writes to stderr (Swift 6 rejects Glibc's `stderr` global; write(2) is enough).
    public static func err(_ text: String) { writeAll(2, text) }

    /// Writes all of `text` to `fd`, retrying on EINTR; stops quietly on any other error.
    static func writeAll(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            bytes = bytes.dropFirst(n)
        }
    }
}
