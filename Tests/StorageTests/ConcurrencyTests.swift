import Domain
import Postgres
import Storage
import TestSupport
import XCTest

/// Concurrent posts of one purchase: row locks make them queue, never duplicate, never deadlock.
final class ConcurrencyTests: XCTestCase {
    func testSixteenThreadsRecordingTheSameTransactionForTheSameUser() throws {
        let s = try TestStores.make(label: "concsame", poolSize: 16)
        defer { s.close() }
        let p = try s.makeProject()
        let t = Fixtures.monthly("2000", start: 0)
        let purchases = s.purchases
        let outcomes = onThreads(16) { _ -> Result<OwnershipDecision?, DomainError> in
            do {
                return .success(try purchases.recordTransaction(t, userId: "alice", deviceId: "d", project: p, now: Fixtures.t0).ownership)
            } catch let error as DomainError {
                return .failure(error)
            } catch {
                return .failure(DomainError(.conflict, "unexpected", underlying: String(reflecting: error)))
            }
        }
        let decisions: [OwnershipDecision?] = try outcomes.map { try XCTUnwrap($0).get() }
        XCTAssertEqual(decisions.filter { $0 == .bind }.count, 1)
        XCTAssertEqual(decisions.filter { $0 == .alreadyOwned }.count, 15)
        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM purchases"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM ownership_events"), 0)
    }

    func testSixteenUsersRacingUnderTransferLeaveExactlyOneOwner() throws {
        let s = try TestStores.make(label: "concusers", poolSize: 16)
        defer { s.close() }
        let p = try s.makeProject(policy: .transfer)
        let t = Fixtures.monthly("2000", start: 0)
        let purchases = s.purchases
        let outcomes = onThreads(16) { i -> String? in
            do {
                _ = try purchases.recordTransaction(t, userId: "user\(i)", deviceId: nil, project: p, now: Fixtures.t0)
                return nil
            } catch {
                return String(reflecting: error)
            }
        }
        XCTAssertEqual(outcomes.compactMap { $0 ?? nil }, [])
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions"), 16)
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions WHERE revoked_at IS NULL"), 1)
        // Every post after the first moved it once: 15 moves, each from the previous holder.
        XCTAssertEqual(try s.count("SELECT count(*) FROM ownership_events"), 15)
        XCTAssertEqual(try s.count("""
            SELECT count(*) FROM ownership_events e
            WHERE NOT EXISTS (SELECT 1 FROM ownership_events n WHERE n.from_user_id = e.to_user_id)
            """), 1, "the moves form one chain ending at the current owner")
    }

    func testRenewalRacingTheFirstTransactionIsNeverLost() throws {
        let s = try TestStores.make(label: "conchandover", poolSize: 16)
        defer { s.close() }
        let p = try s.makeProject()
        let purchases = s.purchases
        // 8 purchases at a time, each with its renewal and its first transaction posted at the same instant.
        for round in 0..<4 {
            let errors = onThreads(16) { i -> String? in
                let original = "r\(round)-\(i / 2)"
                do {
                    if i % 2 == 0 {
                        try purchases.recordRenewal(Fixtures.renewal(original: original, signed: 1), project: p, now: Fixtures.t0)
                    } else {
                        _ = try purchases.recordTransaction(
                            Fixtures.monthly("t-\(original)", original: original, start: 0), userId: nil, deviceId: nil,
                            project: p, now: Fixtures.t0)
                    }
                    return nil
                } catch {
                    return String(reflecting: error)
                }
            }
            XCTAssertEqual(errors.compactMap { $0 ?? nil }, [])
        }
        XCTAssertEqual(try s.count("SELECT count(*) FROM purchases"), 32)
        XCTAssertEqual(try s.count("SELECT count(*) FROM purchases WHERE renewal_signed_date = \(Fixtures.at(1))"), 32)
        XCTAssertEqual(try s.count("SELECT count(*) FROM pending_renewals"), 0)
    }
}
