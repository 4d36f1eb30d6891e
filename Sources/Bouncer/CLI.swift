import Glibc

/// One subcommand: its name, a one-line summary for `bouncer help`, its usage text and its body.
/// New subcommands (`migrate`, `verify`, `project`, `product`) are new entries in `CLI.commands`.
struct Command: Sendable {
    let name: String
    let summary: String
    let usage: String
    /// Receives the arguments after the subcommand name; returns the exit status.
    let run: @Sendable ([String]) -> Int32
}

/// Our own small command-line front end: no argument-parser package, by design.
enum CLI {
    static let version = "0.1.0"

    static let commands: [Command] = [
        ServeCommand.command,
        MigrateCommand.command,
        AdminCommands.projectCommand,
        AdminCommands.productCommand,
        CredentialCommands.command,
        SigningKeyCommands.command,
        ReconcileCommand.command,
        UserCommands.command,
        Command(name: "verify", summary: "Verify and decode a StoreKit 2 JWS (transaction, renewal, notification) or a StoreKit 1 receipt",
                usage: VerifyCommand.usage, run: { VerifyCommand.run($0) }),
        Command(name: "version", summary: "Print the version", usage: "usage: bouncer version\n\nPrints the version.\n",
                run: { args in
                    if let status = CLI.handleHelpOrReject(args, usage: "usage: bouncer version\n\nPrints the version.\n") {
                        return status
                    }
                    CLI.out("bouncer \(CLI.version)\n")
                    return 0
                }),
        Command(name: "help", summary: "Show help for bouncer or one command", usage: "usage: bouncer help [COMMAND]\n",
                run: { args in
                    guard let name = args.first else {
                        CLI.out(CLI.usage)
                        return 0
                    }
                    guard args.count == 1, let command = CLI.commands.first(where: { $0.name == name }) else {
                        CLI.err("bouncer: unknown command '\(name)'\n\n" + CLI.usage)
                        return 2
                    }
                    CLI.out(command.usage)
                    return 0
                }),
    ]

    static var usage: String {
        var text = "usage: bouncer <command> [options]\n\ncommands:\n"
        let width = commands.map(\.name.count).max() ?? 0
        for command in commands {
            text += "  " + command.name + String(repeating: " ", count: width - command.name.count + 2) + command.summary + "\n"
        }
        text += "\nRun `bouncer <command> --help` for a command's options.\n"
        return text
    }

    /// Dispatches `arguments` (without the program name); unknown commands print usage to stderr, exit 2.
    static func run(_ arguments: [String]) -> Int32 {
        guard let first = arguments.first else {
            err(usage)
            return 2
        }
        if first == "--help" || first == "-h" {
            out(usage)
            return 0
        }
        if first == "--version" {
            out("bouncer \(version)\n")
            return 0
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            err("bouncer: unknown command '\(first)'\n\n" + usage)
            return 2
        }
        return command.run(Array(arguments.dropFirst()))
    }

    /// For commands without options: `--help` prints usage (exit 0), anything else is rejected (exit 2).
    /// Returns nil when there were no arguments.
    static func handleHelpOrReject(_ args: [String], usage: String) -> Int32? {
        guard let first = args.first else { return nil }
        if first == "--help" || first == "-h" {
            out(usage)
            return 0
        }
        err("bouncer: unknown option '\(first)'\n\n" + usage)
        return 2
    }

    /// Writes to stdout unbuffered (one write(2)), so lines are visible to a pipe immediately.
    static func out(_ text: String) { writeAll(1, text) }

    /// Writes to stderr (Swift 6 rejects Glibc's `stderr` global; write(2) is enough).
    static func err(_ text: String) { writeAll(2, text) }

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
