import Domain
import Foundation
import XCTest

/// The pure parts of lookups by transaction id: which ids are accepted and which environments are asked, in order.
final class TransactionLookupRulesTests: XCTestCase {
    func testTransactionIdRules() {
        let digits = "Must be an App Store transaction id (digits only)"
        let cases: [(String, [String])] = [
            ("2000001024998954", []),
            ("0", []),
            (String(repeating: "9", count: 32), []),
            (String(repeating: "9", count: 33), ["String must contain at most 32 character(s)"]),
            ("", [digits]),
            ("12ab", [digits]),
            ("-1", [digits]),
            ("1 2", [digits]),
            ("１２", [digits]),   // full-width digits are not ASCII digits
            ("1/../2", [digits]),
        ]
        for (id, messages) in cases {
            XCTAssertEqual(TransactionLookup.problems(transactionId: id),
                           messages.map { FieldProblem(path: ["transaction_id"], message: $0) }, id)
        }
    }

    func testEnvironmentsAskedProductionFirstOnlyWhenAllowed() {
        func project(_ environments: [StoreEnvironment]) -> Project {
            Project(id: UUID(), name: "p", bundleId: "com.example", environments: environments, publicKey: "pk_x",
                    createdAt: Date(), updatedAt: Date())
        }
        XCTAssertEqual(TransactionLookup.environments(for: project([.production, .sandbox])), [.production, .sandbox])
        XCTAssertEqual(TransactionLookup.environments(for: project([.sandbox, .production])), [.production, .sandbox])
        XCTAssertEqual(TransactionLookup.environments(for: project([.sandbox])), [.sandbox])
        XCTAssertEqual(TransactionLookup.environments(for: project([.production])), [.production])
        XCTAssertEqual(TransactionLookup.environments(for: project([])), [])
    }
}
