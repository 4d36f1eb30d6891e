import API
import Domain
import Foundation

/// The audit entries of the admin subcommands: each change is recorded as the admin route it mirrors would record it
/// (`AuditActions.context`: the same action and target), with the actor `operator` labelled `cli`. The store making
/// the change writes the entry in its transaction (`AuditRows.write`); a change whose store writes none gets it
/// appended afterwards, like the API gate's fallback.
enum CLIAudit {
    /// Who the CLI is in the audit log: the operator (it holds the database), told apart from the admin token.
    static let actor = AuditActor(type: "operator", id: nil, label: "cli")
    /// What the CLI's entries name as `client_address`.
    static let clientAddress = "local"

    /// Where the fallback entries go; set by the subcommands' frame (`AdminCommands.run`) around the work.
    @TaskLocal static var log: (any AuditLogStore)?

    /// `work`, recorded as the change of the admin route `method pattern` (its path parameters in `parameters`).
    /// Each run is one request: its `request_id` is a fresh UUID.
    static func recorded<Administration>(
        _ method: String, _ pattern: String, parameters: [String: String] = [:], accountId: UUID? = nil,
        projectId: UUID? = nil, _ work: @escaping (Administration) throws -> [[UInt8]]
    ) -> (Administration) throws -> [[UInt8]] {
        { administration in
            let context = AuditActions.context(
                method, pattern, parameters: parameters, actor: actor, accountId: accountId, projectId: projectId,
                requestId: UUID().lowercasedText, clientAddress: clientAddress, now: { Date() })
            let lines = try AuditContext.$current.withValue(context) { try work(administration) }
            if !context.isClaimed, let log { try log.append(context.entry()) }
            return lines
        }
    }
}
