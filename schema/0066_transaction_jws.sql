-- 0066_transaction_jws: the evidence behind each stored transaction (issue 26, exports anyone can re-verify).
--
-- transaction_jws: the compact JWS whose payload the transactions row now holds (the newest signed one: written in
--   the record statement only when the call left this signedDate stored, replaced only by a later one), as its
--   header's SHA-256 and its `payload.signature` segments: the JWS is header_text || '.' || body. An export carries
--   its SHA-256 (or the JWS itself) so anyone can check the row against Apple's root offline. No row for a
--   transaction known only from a StoreKit 1 receipt (no per-transaction signature) or recorded before 0066.
-- jws_headers: each distinct protected header once (its x5c chain is most of a JWS's bytes and the same for every
--   transaction Apple signs with one key): a row small enough to stay in its page, and an insert per receipt that
--   only probes the primary key. Apple's public certificates, no tenant's data: the operator's, like exchange_rates.
CREATE TABLE jws_headers (
    sha256  bytea NOT NULL,
    header  text  NOT NULL,
    PRIMARY KEY (sha256)
);
CREATE TABLE transaction_jws (
    project_id      uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    environment     text        NOT NULL,
    transaction_id  text        NOT NULL,
    signed_date     timestamptz NOT NULL,
    header_sha256   bytea       NOT NULL,
    body            text        NOT NULL,
    PRIMARY KEY (project_id, environment, transaction_id)
);
