public import Domain
public import Foundation
import Postgres

/// Mass renewal extensions (`mass_renewal_extensions`, schema 0056), recorded like single ones.
extension PostgresAppStoreActionStore {
    /// Inserts the record before Apple is asked.
    public func startMassRenewalExtension(_ r: MassRenewalExtensionRecord) throws {
        try StorageErrors.mapping("start mass renewal extension") {
            try pool.autocommit { connection in
                _ = try connection.execute("""
                    INSERT INTO mass_renewal_extensions (project_id, request_identifier, environment, product_id,
                        extend_by_days, reason_code, storefronts, created_at)
                    VALUES (\(r.projectId), \(r.requestIdentifier), \(r.environment.rawValue), \(r.productId),
                        \(r.extendByDays), \(r.reasonCode), \(r.storefronts)::text[], \(r.createdAt))
                    """)
            }
        }
    }

    /// Apple's acceptance (the admin's change, audited in this transaction) or the failure.
    public func completeMassRenewalExtension(_ r: MassRenewalExtensionRecord) throws {
        try StorageErrors.mapping("complete mass renewal extension") {
            try pool.transaction { connection in
                let updated = try connection.execute("""
                    UPDATE mass_renewal_extensions SET accepted = \(Bind.bool(r.accepted)),
                        apple_error_code = \(Bind.int(r.appleErrorCode))::int,
                        error = \(Bind.text(r.error.map { String($0.prefix(1000)) }))::text
                    WHERE project_id = \(r.projectId) AND request_identifier = \(r.requestIdentifier)
                    """)
                if updated > 0, r.accepted == true {
                    try AuditRows.write(connection, changes: [
                        AuditChange("request_identifier", .null, .string(r.requestIdentifier.lowercasedText)),
                        AuditChange("environment", .null, .string(r.environment.rawValue)),
                        AuditChange("extend_by_days", .null, .int(r.extendByDays)),
                        AuditChange("reason_code", .null, .int(r.reasonCode)),
                        AuditChange("storefronts", .null, r.storefronts.map { .list($0.map { .string($0) }) } ?? .null),
                    ])
                }
            }
        }
    }

    /// Apple's latest status of the request.
    public func updateMassRenewalExtensionStatus(_ r: MassRenewalExtensionRecord) throws {
        try StorageErrors.mapping("update mass renewal extension") {
            try pool.autocommit { connection in
                _ = try connection.execute("""
                    UPDATE mass_renewal_extensions SET complete = \(r.status.complete),
                        complete_date = \(Bind.date(r.status.completeDate)),
                        succeeded_count = \(r.status.succeededCount.map(Int64.init))::int8,
                        failed_count = \(r.status.failedCount.map(Int64.init))::int8,
                        checked_at = \(Bind.date(r.checkedAt))
                    WHERE project_id = \(r.projectId) AND request_identifier = \(r.requestIdentifier)
                    """)
            }
        }
    }

    /// The project's record of the request, or nil.
    public func massRenewalExtension(projectId: UUID, requestIdentifier: UUID) throws -> MassRenewalExtensionRecord? {
        try StorageErrors.mapping("mass renewal extension") {
            try pool.withConnection { connection in
                guard let row = try connection.query("""
                    SELECT environment, product_id, extend_by_days, reason_code, storefronts, accepted, apple_error_code,
                        error, complete, complete_date, succeeded_count, failed_count, created_at, checked_at
                    FROM mass_renewal_extensions
                    WHERE project_id = \(projectId) AND request_identifier = \(requestIdentifier)
                    """).first else { return nil }
                var record = MassRenewalExtensionRecord(
                    projectId: projectId, requestIdentifier: requestIdentifier,
                    environment: StoreEnvironment(rawValue: try row.decode("environment", as: String.self)),
                    productId: try row.decode("product_id", as: String.self),
                    extendByDays: try row.decode("extend_by_days", as: Int.self),
                    reasonCode: try row.decode("reason_code", as: Int.self),
                    storefronts: try row.decode("storefronts", as: [String]?.self),
                    createdAt: try row.decode("created_at", as: Date.self))
                record.accepted = try row.decode("accepted", as: Bool?.self)
                record.appleErrorCode = try row.decode("apple_error_code", as: Int?.self)
                record.error = try row.decode("error", as: String?.self)
                record.status = MassRenewalExtensionStatus(
                    complete: try row.decode("complete", as: Bool.self),
                    completeDate: try row.decode("complete_date", as: Date?.self),
                    succeededCount: try row.decode("succeeded_count", as: Int?.self),
                    failedCount: try row.decode("failed_count", as: Int?.self))
                record.checkedAt = try row.decode("checked_at", as: Date?.self)
                return record
            }
        }
    }
}
