@testable import API
import Domain
import Foundation
import HTTPCore
import XCTest

/// The audit log's rules that need no server: every changing admin route has an action, CSV cells, redaction.
final class AuditLogTests: XCTestCase {
    /// A new admin route that changes something cannot forget its audit action, and the table names no route that
    /// does not exist.
    func testEveryChangingAdminRouteHasAnAction() {
        let projects = FakeProjectStore()
        let deps = APIDependencies(projects: projects, purchases: FakePurchaseStore(projects: projects),
                                   verifier: FakeVerifier(), hasher: FakeHasher(), adminToken: "admin", log: { _ in })
        let changing = Routes.declarations(deps).filter {
            $0.permission != nil && AuditActions.changes($0.method)
                && !AuditActions.readOnlyPosts.contains(AuditActions.key($0.method, $0.pattern))
        }
        XCTAssertEqual(changing.count, 44)
        for route in changing {
            XCTAssertNotNil(AuditActions.table[AuditActions.key(route.method, route.pattern)],
                            "\(route.method.rawValue) \(route.pattern): add its action to AuditActions.table")
        }
        XCTAssertEqual(Set(AuditActions.table.keys), Set(changing.map { AuditActions.key($0.method, $0.pattern) }))
        XCTAssertEqual(Set(AuditActions.table.values.map(\.action)).count, AuditActions.table.count)
    }

    func testCSVCellsAreQuotedAndInjectionSafe() {
        XCTAssertEqual(AuditLogController.csvCell("plain"), "plain")
        XCTAssertEqual(AuditLogController.csvCell("a,b"), "\"a,b\"")
        XCTAssertEqual(AuditLogController.csvCell("say \"hi\""), "\"say \"\"hi\"\"\"")
        XCTAssertEqual(AuditLogController.csvCell("two\r\nlines"), "\"two\r\nlines\"")
        for start in ["=", "+", "-", "@"] {
            XCTAssertEqual(AuditLogController.csvCell(start + "1+1"), "'" + start + "1+1")
        }
        XCTAssertEqual(AuditLogController.csvCell("=HYPERLINK(\"x\",\"y\")"), "\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\"")
    }

    func testSecretsAreRedactedInEveryEntry() {
        let entry = AuditEntry(
            at: Date(), actor: AuditActor(.operator), action: "webhook.put", accountId: nil, projectId: nil,
            target: "webhook", changes: [AuditChange("url", .null, .string("https://x")),
                                         AuditChange("secret", .null, .string("whsec_1")),
                                         AuditChange("private_key", .string("-----BEGIN"), .null),
                                         AuditChange("password", .null, .string("hunter2hunter2"))],
            requestId: "r", clientAddress: "127.0.0.1")
        XCTAssertEqual(entry.changes, [AuditChange("url", .null, .string("https://x")),
                                       AuditChange("secret", .null, AuditRedaction.placeholder),
                                       AuditChange("private_key", AuditRedaction.placeholder, .null),
                                       AuditChange("password", .null, AuditRedaction.placeholder)])
    }

    func testCursorRoundTrips() throws {
        let entry = AuditEntry(at: AuditEntry.instant(Date(timeIntervalSince1970: 1_780_000_000.1234)),
                               actor: AuditActor(.operator), action: "a", accountId: nil, projectId: nil, target: "t",
                               changes: [], requestId: "r", clientAddress: "c")
        let decoded = try XCTUnwrap(AuditLogController.decodeCursor(AuditLogController.cursor(entry)))
        XCTAssertEqual(decoded.at, entry.at)
        XCTAssertEqual(decoded.id, entry.id)
        XCTAssertNil(AuditLogController.decodeCursor("nope"))
    }
}
