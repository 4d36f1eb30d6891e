-- The facts introductory-offer eligibility is decided on (IntroductoryOfferRules.decide, in Swift): the requested
-- product's subscription group (one row, matched_by 'product_group'), then the person's redeemed introductory
-- offers (offerType 1), each once, with the identity that linked it. The person: the purchases p_user_id holds or
-- held (subscriptions), the purchase of p_transaction_id, and every transaction sharing an appAccountToken
-- (those purchases' tokens, p_user_token: the user id when it is a UUID) or an appTransactionId (those purchases',
-- and p_transaction_id itself, which StoreKit accepts as an appTransactionId).
--
-- Bounded by the person's own facts: the subscriptions primary key, transactions_original_idx per purchase, the
-- transactions primary key for p_transaction_id (one probe per environment), and 0059's partial indexes for the
-- linked transactions; at most 100 redemptions are returned.
CREATE OR REPLACE FUNCTION bouncer_introductory_offer_facts(
    p_project_id uuid, p_user_id text, p_user_token uuid, p_transaction_id text, p_product_id text)
RETURNS TABLE (matched_by text, transaction_id text, product_id text, subscription_group text)
LANGUAGE sql STABLE AS $$
    WITH given AS (
        SELECT t.environment, t.original_transaction_id, t.app_account_token, t.app_transaction_id
        FROM transactions t
        WHERE p_transaction_id IS NOT NULL AND t.project_id = p_project_id
          AND t.environment IN ('Production', 'Sandbox', 'Xcode', 'LocalTesting')
          AND t.transaction_id = p_transaction_id
    ), held AS (
        SELECT s.environment, s.original_transaction_id, 'user_id'::text AS via
        FROM subscriptions s
        WHERE s.project_id = p_project_id AND s.user_id = p_user_id
        UNION
        SELECT g.environment, g.original_transaction_id, 'transaction_id' FROM given g
    ), own AS (
        SELECT h.via, t.transaction_id, t.product_id, t.app_account_token, t.app_transaction_id, t.payload
        FROM held h
        JOIN transactions t ON t.project_id = p_project_id AND t.environment = h.environment
                           AND t.original_transaction_id = h.original_transaction_id
    ), tokens AS (
        SELECT o.app_account_token AS token FROM own o WHERE o.app_account_token IS NOT NULL
        UNION SELECT g.app_account_token FROM given g WHERE g.app_account_token IS NOT NULL
        UNION SELECT p_user_token WHERE p_user_token IS NOT NULL
    ), app_ids AS (
        SELECT o.app_transaction_id AS id FROM own o WHERE o.app_transaction_id IS NOT NULL
        UNION SELECT g.app_transaction_id FROM given g WHERE g.app_transaction_id IS NOT NULL
        UNION SELECT p_transaction_id WHERE p_transaction_id IS NOT NULL
    ), uses AS (
        SELECT 1 AS rank, o.via, o.transaction_id, o.product_id, o.payload ->> 'subscriptionGroupIdentifier' AS grp
        FROM own o WHERE (o.payload ->> 'offerType') = '1'
        UNION ALL
        SELECT 2, 'app_account_token', t.transaction_id, t.product_id, t.payload ->> 'subscriptionGroupIdentifier'
        FROM transactions t
        WHERE t.project_id = p_project_id AND t.app_account_token IN (SELECT token FROM tokens)
          AND (t.payload ->> 'offerType') = '1' AND t.app_account_token IS NOT NULL
        UNION ALL
        SELECT 3, 'app_transaction_id', t.transaction_id, t.product_id, t.payload ->> 'subscriptionGroupIdentifier'
        FROM transactions t
        WHERE t.project_id = p_project_id AND t.app_transaction_id IN (SELECT id FROM app_ids)
          AND (t.payload ->> 'offerType') = '1' AND t.app_transaction_id IS NOT NULL
    )
    SELECT 'product_group', NULL, p_product_id, COALESCE(
        (SELECT o.payload ->> 'subscriptionGroupIdentifier' FROM own o
         WHERE o.product_id = p_product_id AND o.payload ->> 'subscriptionGroupIdentifier' IS NOT NULL LIMIT 1),
        (SELECT t.payload ->> 'subscriptionGroupIdentifier' FROM transactions t
         WHERE t.project_id = p_project_id AND t.product_id = p_product_id AND (t.payload ->> 'offerType') = '1'
           AND t.payload ->> 'subscriptionGroupIdentifier' IS NOT NULL LIMIT 1))
    UNION ALL
    (SELECT u.via, u.transaction_id, u.product_id, u.grp
     FROM (SELECT DISTINCT ON (uses.transaction_id) * FROM uses ORDER BY uses.transaction_id, uses.rank) u
     ORDER BY u.rank, u.transaction_id COLLATE "C"
     LIMIT 100)
$$;
