// The `bouncer` executable: parse the command line, run one subcommand, exit with its status.
import Commands
import Glibc

exit(CLI.run(Array(CommandLine.arguments.dropFirst())))
