-- 0066_transaction_jws: the evidence behind each stored transaction (issue 26, exports anyone can re-verify).
--
-- transaction_jws: the compact JWS whose payload the transactions row now holds (the newest signed one: written in
--   the record statement only when the call left this signedDate stored, replaced only by a later one). An export
--   carries its SHA-256 (or the JWS itself) so anyone can check the row against Apple's root offline. No row for a
--   transaction known only from a StoreKit 1 receipt (no per-transaction signature) or recorded before 0066.
CREATE TABLE transaction_jws (
    project_id      uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    environment     text        NOT NULL,
    transaction_id  text        NOT NULL,
    signed_date     timestamptz NOT NULL,
    jws             text        NOT NULL,
    PRIMARY KEY (project_id, environment, transaction_id)
);
