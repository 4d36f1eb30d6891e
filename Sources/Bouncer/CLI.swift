import Commands

/// The command table and the dispatch; the output helpers and `Command` are in `Sources/Commands/Command.swift`.
extension CLI {
    static let commands: [Command] = [
        ServeCommand.command,
        MigrateCommand.command,
        AdminCommands.projectCommand,
        AdminCommands.productCommand,
        CredentialCommands.command,
        SigningKeyCommands.command,
        ReconcileCommand.command,
        UserCommands.command,
        AccountCommands.accountCommand,
        AccountCommands.memberCommand,
        AccountCommands.apiKeyCommand,
        FXCommands.command,
        ExportCommand.command,
        RetentionCommands.command,
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
}
