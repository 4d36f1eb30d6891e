-- Introductory-offer eligibility (issue 25, item 4): the person's redeemed introductory offers, found by the
-- identities that link Apple accounts. Partial: only transactions that redeemed an introductory offer
-- (offerType 1, the first transaction of a free trial or an introductory price) have entries, so a renewal or an
-- ordinary purchase writes none of them. Read by bouncer_introductory_offer_facts only.
CREATE INDEX transactions_intro_token_idx ON transactions (project_id, app_account_token)
    WHERE (payload ->> 'offerType') = '1' AND app_account_token IS NOT NULL;
CREATE INDEX transactions_intro_app_idx ON transactions (project_id, app_transaction_id)
    WHERE (payload ->> 'offerType') = '1' AND app_transaction_id IS NOT NULL;
CREATE INDEX transactions_intro_product_idx ON transactions (project_id, product_id)
    WHERE (payload ->> 'offerType') = '1';
