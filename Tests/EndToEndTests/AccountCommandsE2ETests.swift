import Foundation
import JSON
import TestSupport
import XCTest

/// `bouncer account|member|api-key` and `bouncer project create --account` (issue 24, item 7): the built binary on the
/// database of a running server with several accounts, printing what the admin API returns, its secrets usable once
/// shown, each change audited as the operator labelled `cli`.
extension AccountsE2ETests {
    /// What the command said on stderr, without the database's log lines (`{"event":…}`).
    static func said(_ run: CLIRun) -> String {
        run.stderr.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("{\"event\"") }.joined(separator: "\n")
    }

    func testCLIManagesAccountsMembersAndKeysWithTheAPIsJSONAndAuditsEachChange() throws {
        let client = try server.client
        let db = try db

        let create = try cli(["account", "create", "CLI Acme"])
        XCTAssertEqual(create.status, 0, create.stderr)
        let account = try JSONParser.parse(create.stdout)
        let accountId = try XCTUnwrap(account["id"]?.stringValue)
        XCTAssertEqual(account.objectValue?.keys, ["id", "name", "created_at", "updated_at"])
        XCTAssertEqual(account["name"], "CLI Acme")
        XCTAssertEqual(try client.get("/v1/admin/accounts/\(accountId)", headers: E2E.admin).json(), account)
        let list = try cli(["account", "list"])
        XCTAssertEqual(list.status, 0, list.stderr)
        XCTAssertEqual(try JSONParser.parse(list.stdout), try client.get("/v1/admin/accounts", headers: E2E.admin).json())

        // Several accounts: a project names its account, as POST /v1/admin/projects requires.
        let bundle = E2E.uniqueBundle()
        let ambiguous = try cli(["project", "create", "--name", "CLI app", "--bundle-id", bundle])
        XCTAssertEqual(ambiguous.status, 2, ambiguous.stdout)
        XCTAssertTrue(Self.said(ambiguous).hasPrefix("bouncer: Name the project's account.\n"
            + "  account_id: Required when more than one account exists\n"), ambiguous.stderr)
        let projectRun = try cli(["project", "create", "--name", "CLI app", "--bundle-id", bundle, "--account", accountId])
        XCTAssertEqual(projectRun.status, 0, projectRun.stderr)
        let project = try JSONParser.parse(projectRun.stdout)
        let projectId = try XCTUnwrap(project["id"]?.stringValue)
        XCTAssertEqual(project["account_id"]?.stringValue, accountId)
        XCTAssertEqual(try db.query("SELECT account_id::text AS a FROM projects WHERE bundle_id = \(bundle)")
            .map { try $0.decode("a", as: String.self) }, [accountId])

        // A member: the invite token is printed once and sets the password.
        let add = try cli(["member", "add", accountId, "Dev@Example.com", "developer"])
        XCTAssertEqual(add.status, 0, add.stderr)
        let invited = try JSONParser.parse(add.stdout)
        let memberId = try XCTUnwrap(invited["id"]?.stringValue)
        XCTAssertEqual(invited.objectValue?.keys, ["id", "account_id", "email", "role", "status", "totp_enabled",
                                                   "invite_token", "invite_expires_at", "created_at", "updated_at"])
        XCTAssertEqual(invited["email"], "dev@example.com")
        XCTAssertEqual(invited["role"], "developer")
        XCTAssertEqual(invited["status"], "invited")
        let token = try XCTUnwrap(invited["invite_token"]?.stringValue)
        XCTAssertTrue(token.hasPrefix("iv_"), token)
        let members = try cli(["member", "list", accountId])
        XCTAssertEqual(members.status, 0, members.stderr)
        let apiMembers = try client.get("/v1/admin/accounts/\(accountId)/members", headers: E2E.admin).json()
        XCTAssertEqual(try JSONParser.parse(members.stdout), apiMembers)
        XCTAssertFalse(members.stdout.contains(token))
        let accepted = try client.post("/v1/admin/invites/accept",
                                       json: ["invite_token": .string(token), "password": "correct horse battery"])
        XCTAssertEqual(accepted.status, 200, accepted.description)

        // A key limited to the project: its text is printed once and works as a bearer token until revoked.
        let keyRun = try cli(["api-key", "create", accountId, "cli key", "viewer", "--project", projectId,
                              "--expires-at", "2099-01-01T00:00:00Z"])
        XCTAssertEqual(keyRun.status, 0, keyRun.stderr)
        let key = try JSONParser.parse(keyRun.stdout)
        let keyId = try XCTUnwrap(key["id"]?.stringValue)
        let text = try XCTUnwrap(key["key"]?.stringValue)
        XCTAssertEqual(key.objectValue?.keys, ["id", "account_id", "name", "role", "project_ids", "last4", "key",
                                               "created_at", "expires_at", "last_used_at"])
        XCTAssertEqual(key["account_id"]?.stringValue, accountId)
        XCTAssertEqual(key["name"], "cli key")
        XCTAssertEqual(key["role"], "viewer")
        XCTAssertEqual(key["project_ids"], [.string(projectId)])
        XCTAssertEqual(key["last4"]?.stringValue, String(text.suffix(4)))
        XCTAssertEqual(key["expires_at"], "2099-01-01T00:00:00.000Z")
        XCTAssertEqual(key["last_used_at"], .null)
        XCTAssertEqual(try client.get("/v1/admin/projects/\(projectId)", headers: Self.bearer(text)).status, 200)
        let keys = try cli(["api-key", "list", accountId])
        XCTAssertEqual(keys.status, 0, keys.stderr)
        XCTAssertEqual(try JSONParser.parse(keys.stdout),
                       try client.get("/v1/admin/accounts/\(accountId)/api-keys", headers: E2E.admin).json())
        XCTAssertFalse(keys.stdout.contains(text))
        let revoke = try cli(["api-key", "revoke", accountId, keyId])
        XCTAssertEqual(revoke.status, 0, revoke.stderr)
        XCTAssertEqual(revoke.stdout, "")
        assertError(try client.get("/v1/admin/projects/\(projectId)", headers: Self.bearer(text)), 401,
                    "AUTH_INVALID_API_KEY")

        let remove = try cli(["member", "remove", accountId, memberId])
        XCTAssertEqual(remove.status, 0, remove.stderr)
        XCTAssertEqual(remove.stdout, "")
        XCTAssertEqual(try client.get("/v1/admin/accounts/\(accountId)/members", headers: E2E.admin).json(),
                       ["members": []])

        // One entry per change, in the API's words, by the operator labelled cli; reads wrote none.
        let entries = try db.query("""
            SELECT actor_type, actor_id::text AS actor_id, actor_label, action, account_id::text AS account_id,
                   project_id::text AS project_id, target, client_address, request_id
            FROM audit_log WHERE account_id = \(try XCTUnwrap(UUID(uuidString: accountId))) ORDER BY at, id
            """)
        XCTAssertEqual(try entries.map { try $0.decode("action", as: String.self) },
                       ["account.create", "project.create", "member.invite", "api_key.create", "api_key.revoke",
                        "member.remove"])
        XCTAssertEqual(try entries.map { try $0.decode("target", as: String.self) },
                       ["account:\(accountId)", "project:\(projectId)", "member:\(memberId)", "api_key:\(keyId)",
                        "api_key:\(keyId)", "member:\(memberId)"])
        XCTAssertEqual(try entries.map { try $0.decode("project_id", as: String?.self) },
                       [nil, projectId, nil, nil, nil, nil])
        for entry in entries {
            XCTAssertEqual(try entry.decode("actor_type", as: String.self), "operator")
            XCTAssertEqual(try entry.decode("actor_label", as: String.self), "cli")
            XCTAssertNil(try entry.decode("actor_id", as: String?.self))
            XCTAssertEqual(try entry.decode("client_address", as: String.self), "local")
            XCTAssertNotNil(UUID(uuidString: try entry.decode("request_id", as: String.self)))
        }
        XCTAssertEqual(Set(try entries.map { try $0.decode("request_id", as: String.self) }).count, 6)
        let all = try db.query("SELECT changes::text AS c FROM audit_log WHERE actor_label = 'cli'")
            .map { try $0.decode("c", as: String.self) }.joined()
        XCTAssertFalse(all.contains(text) || all.contains(token), all)
    }

    func testCLIAccountCommandsRefuseBadArgumentsAndUnknownAccountsChangingNothing() throws {
        let db = try db
        let before = try db.query("SELECT count(*)::int8 AS n FROM audit_log").first?.decode("n", as: Int64.self)
        let accountId = try XCTUnwrap(try JSONParser.parse(try cli(["account", "create", "CLI Refusals"]).stdout)["id"]?
            .stringValue)
        let unknown = "00000000-0000-4000-8000-0000000000aa"
        // Usage errors: exit 2, the usage printed, nothing written.
        for (args, usage, message) in [
            (["account", "create", ""], "usage: bouncer account", "bouncer: Invalid account.\n  name: "),
            (["account", "create"], "usage: bouncer account", "bouncer: create needs NAME\n"),
            (["member", "add", accountId, "not-an-email", "developer"], "usage: bouncer member", "bouncer: Invalid member.\n"),
            (["member", "add", accountId, "a@example.com", "root"], "usage: bouncer member",
             "bouncer: ROLE must be one of owner, admin, developer, viewer, support\n"),
            (["member", "list", "nope"], "usage: bouncer member", "bouncer: ACCOUNT_ID must be a UUID\n"),
            (["api-key", "create", accountId, "k", "viewer", "--expires-at", "tomorrow"], "usage: bouncer api-key",
             "bouncer: --expires-at must be an RFC 3339 instant like 2027-01-01T00:00:00Z\n"),
            (["api-key", "create", accountId, "k", "viewer", "--expires-at", "2001-01-01T00:00:00Z"],
             "usage: bouncer api-key", "bouncer: Invalid API key.\n  expires_at: Must be in the future\n"),
            (["api-key", "create", accountId, "k", "viewer", "--project", unknown], "usage: bouncer api-key",
             "bouncer: Invalid API key.\n  project_ids.0: No such project in this account\n"),
        ] {
            let run = try cli(args)
            XCTAssertEqual(run.status, 2, "\(args): \(run.stdout)")
            XCTAssertEqual(run.stdout, "", "\(args)")
            XCTAssertTrue(Self.said(run).hasPrefix(message), "\(args): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains(usage), "\(args): \(run.stderr)")
        }
        // Unknown resources: exit 1, the API's code and message.
        for (args, message) in [
            (["member", "list", unknown], "bouncer: ACCOUNT_NOT_FOUND: No account \(unknown).\n"),
            (["member", "add", unknown, "a@example.com", "viewer"], "bouncer: ACCOUNT_NOT_FOUND: No account \(unknown).\n"),
            (["api-key", "list", unknown], "bouncer: ACCOUNT_NOT_FOUND: No account \(unknown).\n"),
            (["api-key", "revoke", accountId, unknown], "bouncer: API_KEY_NOT_FOUND: No API key \(unknown) in this account.\n"),
            (["member", "remove", accountId, unknown], "bouncer: MEMBER_NOT_FOUND: No member \(unknown) in this account.\n"),
        ] {
            let run = try cli(args)
            XCTAssertEqual(run.status, 1, "\(args): \(run.stdout)")
            XCTAssertEqual(run.stdout, "", "\(args)")
            XCTAssertEqual(Self.said(run), message, "\(args)")
        }
        let id = try XCTUnwrap(UUID(uuidString: accountId))
        XCTAssertEqual(try db.query("SELECT 1 FROM members WHERE account_id = \(id)").count, 0)
        XCTAssertEqual(try db.query("SELECT 1 FROM api_keys WHERE account_id = \(id)").count, 0)
        // Only the account's creation was audited.
        let after = try db.query("SELECT count(*)::int8 AS n FROM audit_log").first?.decode("n", as: Int64.self)
        XCTAssertEqual(after, before.map { $0 + 1 })
    }
}
