import API
import Domain
import Foundation
import TestSupport
import XCTest

/// Every admin route declares the permission it needs, the contract names the same one, and the README prints the
/// role table the code enforces (`Role.permissions`).
final class AccessControlTests: XCTestCase {
    /// Admin routes that take no admin principal: the console's own sign-in, sign-out and session check.
    static let signInRoutes: Set<String> = ["POST /v1/admin/session", "GET /v1/admin/session", "DELETE /v1/admin/session",
                                            "POST /v1/admin/invites/accept"]

    static var declarations: [(operation: String, permission: Permission?)] {
        let projects = FakeProjectStore()
        let deps = APIDependencies(projects: projects, purchases: FakePurchaseStore(projects: projects),
                                   verifier: FakeVerifier(), hasher: FakeHasher(), adminToken: "admin", log: { _ in })
        return Routes.declarations(deps).map {
            (OpenAPIRoutesTests.operation($0.method.rawValue, $0.pattern), $0.permission)
        }
    }

    func testEveryAdminRouteDeclaresAPermission() {
        let admin = Self.declarations.filter { $0.operation.split(separator: " ").last?.hasPrefix("/v1/admin/") == true }
        XCTAssertEqual(admin.count, 80)
        for (operation, permission) in admin where !Self.signInRoutes.contains(operation) {
            XCTAssertNotNil(permission, "\(operation) declares no permission: give its APIRoute access: .admin(…)")
        }
        for (operation, permission) in Self.declarations where !operation.contains(" /v1/admin/") {
            XCTAssertNil(permission, "\(operation) is not an admin route")
        }
    }

    /// `x-permission` of each operation in `openapi.yaml` is the route's declared permission, both ways.
    func testTheContractNamesEachRoutesPermission() throws {
        let text = try String(contentsOf: ContractTests.openAPIURL, encoding: .utf8)
        let documented = OpenAPIPermissions.permissions(inOpenAPI: text)
        var declared: [String: String] = [:]
        for (operation, permission) in Self.declarations {
            if let permission { declared[operation] = permission.rawValue }
        }
        let missing = declared.filter { documented[$0.key] != $0.value }.map { "\($0.key) x-permission: \($0.value)" }
        XCTAssertEqual(missing.sorted(), [], "openapi.yaml lacks or misstates these operations' x-permission")
        XCTAssertEqual(Set(documented.keys).subtracting(declared.keys).sorted(), [],
                       "x-permission on operations that declare none")
    }

    /// The README's role table is `Role.permissions`, cell by cell.
    func testTheREADMEPrintsTheRoleTable() throws {
        let readme = try String(contentsOf: ContractTests.openAPIURL.deletingLastPathComponent()
            .appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n").map(String.init)
        guard let header = lines.firstIndex(where: { $0.hasPrefix("| Permission | owner | admin | developer |") }) else {
            return XCTFail("README.md has no role table (| Permission | owner | admin | developer | viewer | support |)")
        }
        let roles = Self.cells(lines[header]).dropFirst().compactMap(Role.init(rawValue:))
        XCTAssertEqual(roles, Role.allCases)
        var seen: [Permission] = []
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cells = Self.cells(line)
            guard let first = cells.first, let permission = Permission(rawValue: first.trimmingCharacters(in: ["`"]))
            else { return XCTFail("not a permission: \(line)") }
            seen.append(permission)
            for (role, cell) in zip(roles, cells.dropFirst()) {
                XCTAssertEqual(cell == "✓", role.permissions.contains(permission), "\(permission.rawValue) × \(role)")
                XCTAssertTrue(cell == "✓" || cell == "—", "\(permission.rawValue) × \(role): \(cell)")
            }
        }
        XCTAssertEqual(seen, Permission.allCases, "one row per permission, in the enum's order")
    }

    func testRolesAreNestedAsTheIssueDescribes() {
        XCTAssertEqual(Role.owner.permissions, Set(Permission.allCases).subtracting(Permission.operatorOnly))
        XCTAssertEqual(Role.admin.permissions, Role.owner.permissions)
        XCTAssertFalse(Role.developer.permissions.contains(.revenueRead))
        XCTAssertFalse(Role.developer.permissions.contains(.membersManage))
        XCTAssertTrue(Role.viewer.permissions.allSatisfy { $0.rawValue.hasSuffix(".read") })
        XCTAssertEqual(Role.support.permissions, [.projectsRead, .customersRead, .customersWrite, .customersExport])
        for role in Role.allCases {
            XCTAssertTrue(role.permissions.isDisjoint(with: Permission.operatorOnly), "\(role)")
            XCTAssertTrue(Role.owner.includes(role))
        }
        XCTAssertFalse(Role.support.includes(.viewer), "support sees no revenue")
        XCTAssertEqual(Principal.operator.label, "operator")
        let key = UUID(uuidString: "00000000-0000-0000-0000-0000000000aa") ?? UUID()
        XCTAssertEqual(Principal.apiKey(id: key, accountId: Account.defaultId, role: .viewer, projectIds: nil).label,
                       "api_key:00000000-0000-0000-0000-0000000000aa")
    }

    static func cells(_ line: String) -> [String] {
        line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
            .map { $0.trimmingCharacters(in: .whitespaces) }
    }
}
