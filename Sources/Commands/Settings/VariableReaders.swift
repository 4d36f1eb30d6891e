import Foundation

extension ServeSettings {
    /// An integer in `range` (at most `maxLength` characters, so no run of leading zeros slips in), given to `set`.
    static func int(
        _ name: String, _ help: String, _ range: ClosedRange<Int>, maxLength: Int = .max,
        _ set: @escaping @Sendable (inout ServeSettings, Int) -> Void
    ) -> Variable {
        Variable(name: name, help: help) { s, v in
            guard v.utf8.count <= maxLength, let n = Int(v), range.contains(n) else {
                return "must be an integer in \(range.lowerBound)...\(range.upperBound)"
            }
            set(&s, n)
            return nil
        }
    }

    /// A positive number of seconds up to `maxSeconds`, given to `set` in whole milliseconds (rounded up).
    static func seconds(
        _ name: String, _ help: String, upTo maxSeconds: Int = 86_400,
        _ set: @escaping @Sendable (inout ServeSettings, Duration) -> Void
    ) -> Variable {
        Variable(name: name, help: help) { s, v in
            guard let x = Double(v), x.isFinite, x > 0, x <= Double(maxSeconds) else {
                return "must be a number of seconds in (0, \(maxSeconds)]"
            }
            set(&s, .milliseconds(Int64((x * 1000).rounded(.up))))
            return nil
        }
    }
}

extension ServeSettings {
    /// This process's settings, or nil once each problem is printed to stderr under `"\(command): invalid
    /// configuration:"` (the caller then exits 2).
    public static func fromProcessEnvironment(command: String) -> ServeSettings? {
        switch fromEnvironment(ProcessInfo.processInfo.environment) {
        case .failure(let problems):
            CLI.err(command + ": invalid configuration:\n" + problems.messages.map { "  " + $0 + "\n" }.joined())
            return nil
        case .success(let settings):
            return settings
        }
    }
}
