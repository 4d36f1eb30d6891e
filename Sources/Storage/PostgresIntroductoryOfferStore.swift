public import Domain
public import Foundation
import Postgres

/// The person's redeemed introductory offers, in one statement (`bouncer_introductory_offer_facts`).
public final class PostgresIntroductoryOfferStore: PostgresStore, @unchecked Sendable, IntroductoryOfferFactsStore {
    public func introductoryOfferFacts(projectId: UUID, userId: String, transactionId: String?, productId: String)
        throws -> IntroductoryOfferFacts
    {
        try StorageErrors.mapping("introductory offer facts") {
            try pool.withConnection { connection in
                // A user id that is a UUID is also an appAccountToken the app may have set (checked here, so SQL
                // never casts text that is not one).
                let token = userId.utf8.count == 36 ? UUID(uuidString: userId) : nil
                let rows = try connection.query("""
                    SELECT f.matched_by, f.transaction_id, f.product_id, f.subscription_group
                    FROM bouncer_introductory_offer_facts(\(projectId), \(userId), \(Bind.uuid(token))::uuid,
                        \(Bind.text(transactionId))::text, \(productId)) f
                    """)
                var facts = IntroductoryOfferFacts(productGroup: nil, uses: [])
                for row in rows {
                    let matchedBy = try row.decode("matched_by", as: String.self)
                    let group = try row.decode("subscription_group", as: String?.self)
                    guard let identity = IntroductoryOfferIdentity(rawValue: matchedBy) else {
                        facts.productGroup = group   // 'product_group'
                        continue
                    }
                    facts.uses.append(IntroductoryOfferUse(
                        transactionId: try row.decode("transaction_id", as: String.self),
                        productId: try row.decode("product_id", as: String.self),
                        subscriptionGroup: group, matchedBy: identity))
                }
                return facts
            }
        }
    }
}
