import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a command with posix_spawn and waits for it, output captured through a file.
///
/// Why not Foundation's `Process` + `Pipe`: tests that open sockets right after spawning saw a socket
/// descriptor fail with EBADF, consistent with descriptor cleanup racing the next `socket(2)`. Here every
/// descriptor is opened and closed by us, synchronously.
public enum Subprocess {
    /// Runs `arguments` (looked up on PATH) in `directory`; returns combined stdout+stderr, throws on a non-zero exit.
    @discardableResult
    public static func run(_ arguments: [String], in directory: String) throws -> String {
        let log = directory + "/.subprocess-\(UUID().uuidString).log"
        defer { unlink(log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // posix_spawn_file_actions_addchdir_np is not imported; sh changes directory, then execs the command
        // (directory and arguments travel as positional parameters: no quoting, no interpolation).
        let argv = (["/bin/sh", "-c", #"cd "$0" && exec "$@""#, directory] + arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = (argv + [nil]).withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return EINVAL }
            return posix_spawn(&pid, "/bin/sh", &actions, nil, UnsafeMutablePointer(mutating: base), environ)
        }
        guard spawned == 0 else { throw TLSTestPKIError(message: "posix_spawn \(arguments.first ?? ""): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        // WIFEXITED && WEXITSTATUS == 0, spelled out (the macros are not imported).
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw TLSTestPKIError(message: "\(arguments.joined(separator: " ")) exited with status \(status): \(output)")
        }
        return output
    }
}
