-- 0011_receipt_sources: StoreKit 1 app receipts arrive on POST /v1/receipts (receipt_data), so transactions.source
-- takes the issue's words:
--   receipt       a StoreKit 1 app receipt (PKCS#7) posted to /v1/receipts: one row per in-app record
--   transaction   a StoreKit 2 signed transaction (JWS) posted to /v1/receipts
--   lookup        Apple's answer to a lookup by transaction id (POST /v1/receipts with transaction_id)
--   notification  nested in an App Store Server Notification delivered to the webhook
--   reconcile     recovered by reconciliation (or a notification recovered from Notification History)
-- Until now 'receipt' meant "posted to /v1/receipts", and every such row holds a JWS (posted or, before lookups
-- recorded their own source, looked up): they become 'transaction'.
-- bouncer_record_transaction keeps 0008's p_source default ('receipt'), but no caller relies on it any more: every
-- call from Swift passes the source explicitly.

ALTER TABLE transactions DROP CONSTRAINT transactions_source_check;
ALTER TABLE transactions ADD CONSTRAINT transactions_source_check
    CHECK (source IN ('receipt', 'transaction', 'lookup', 'notification', 'reconcile'));
UPDATE transactions SET source = 'transaction' WHERE source = 'receipt';
