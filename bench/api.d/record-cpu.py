#!/usr/bin/env python3
"""Writes the record statements for bench/api.d/record-cpu: STATEMENTS group commits of BATCH receipts each, every
receipt a new transaction of KIND, in one of two FORMs (no JWS evidence in either):

    record-cpu.py OUT.sql PROJECT_ID TAG STATEMENTS BATCH KIND [FORM]

FORM `set` (the default): the statement PostgresPurchaseStore runs, the batch passed to bouncer_record_transactions
(set-based for a batch of first posts, session 14). FORM `calls`: the statement before it, one
bouncer_record_transaction call per receipt (unnest … CROSS JOIN LATERAL), what bouncer_record_transactions runs for
any other batch.

KIND `new`: a new purchase bound to a new user (bench/api's POST with BENCH_RENEWALS=1); `renewal`: the next renewal
of a purchase the `new` file of the same TAG created, posted by its holder (bench/api with BENCH_RENEWALS > 1).
"""
import json
import sys

out, project, tag, statements, batch, kind = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
form = sys.argv[7] if len(sys.argv) > 7 else "set"
MS = 1_700_000_000_000


def lit(v):
    return "NULL" if v is None else "'" + str(v).replace("'", "''") + "'"


def arr(values, typ):
    return "ARRAY[" + ", ".join(lit(v) for v in values) + "]::" + typ + "[]"


# Prepared once, executed per group commit, as the store's connection does (its statements are named and reused).
PREPARE = """PREPARE record(text[], text[], text[], text[], text[], text[], text[], int8[], int8[], int8[], int8[], int8[],
    text[], text[], int8[], text[], text[], text[], text[], int8[], text[]) AS
WITH r AS MATERIALIZED (
SELECT f.ord, (r.purchase).*, r.entitlements, r.ownership, r.previous_owners,
    r.stored_expires_date, r.stored_revocation_date, r.stored_signed_date
FROM unnest($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)
    WITH ORDINALITY AS f(project, id, original, product, type, environment, bundle, purchased, original_purchased,
        expires, revoked, reason, token, ownership_type, signed, payload, user_id, device_id, policy, now, source, ord)
CROSS JOIN LATERAL bouncer_record_transaction(f.project::uuid, f.id, f.original, f.product, f.type, f.environment,
    f.bundle, timestamptz 'epoch' + f.purchased * interval '1 microsecond',
    timestamptz 'epoch' + f.original_purchased * interval '1 microsecond',
    timestamptz 'epoch' + f.expires * interval '1 microsecond', timestamptz 'epoch' + f.revoked * interval '1 microsecond',
    f.reason::int, f.token::uuid, f.ownership_type, timestamptz 'epoch' + f.signed * interval '1 microsecond',
    f.payload::jsonb, f.user_id, f.device_id, f.policy, timestamptz 'epoch' + f.now * interval '1 microsecond', f.source) r)
SELECT * FROM r ORDER BY ord;
"""
SET_BASED = """PREPARE record(text[], text[], text[], text[], text[], text[], text[], int8[], int8[], int8[], int8[], int8[],
    text[], text[], int8[], text[], text[], text[], text[], int8[], text[]) AS
WITH f AS MATERIALIZED (
SELECT * FROM unnest((SELECT $1), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
    $21) WITH ORDINALITY AS f(project, id, original, product, type, environment, bundle, purchased, original_purchased,
        expires, revoked, reason, token, ownership_type, signed, payload, user_id, device_id, policy, now, source, ord)
), c AS MATERIALIZED (
SELECT * FROM bouncer_record_transactions(ARRAY(
    SELECT ROW(f.ord, f.project::uuid, f.id, f.original, f.product, f.type, f.environment, f.bundle,
        timestamptz 'epoch' + f.purchased * interval '1 microsecond',
        timestamptz 'epoch' + f.original_purchased * interval '1 microsecond',
        timestamptz 'epoch' + f.expires * interval '1 microsecond', timestamptz 'epoch' + f.revoked * interval '1 microsecond',
        f.reason::int, f.token::uuid, f.ownership_type, timestamptz 'epoch' + f.signed * interval '1 microsecond',
        f.payload::jsonb, f.user_id, f.device_id, f.policy, timestamptz 'epoch' + f.now * interval '1 microsecond',
        f.source)::bouncer_recording
    FROM f ORDER BY f.ord))
), r AS MATERIALIZED (
SELECT f.ord, (c.purchase).*, c.entitlements, c.ownership, c.previous_owners, c.stored_expires_date,
    c.stored_revocation_date, c.stored_signed_date
FROM f JOIN c ON c.ord = f.ord)
SELECT * FROM r ORDER BY ord;
"""

with open(out, "w") as f:
    f.write(SET_BASED if form == "set" else PREPARE)
    for s in range(statements):
        rows = []
        for b in range(batch):
            n = s * batch + b
            original = f"{tag}-{n}"
            renewal = kind == "renewal"
            tid = f"{original}-r" if renewal else original
            purchased = MS + (30 * 86_400_000 if renewal else 0)
            payload = {"transactionId": tid, "originalTransactionId": original, "bundleId": "com.bouncer.bench",
                       "productId": f"bench.tier{n % 10}", "purchaseDate": purchased, "expiresDate": purchased + 30 * 86_400_000,
                       "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "signedDate": purchased,
                       "environment": "Production", "price": 4990, "currency": "USD", "storefront": "USA",
                       "transactionReason": "RENEWAL" if renewal else "PURCHASE"}
            rows.append(dict(id=tid, original=original, product=payload["productId"], purchased=purchased * 1000,
                             expires=(purchased + 30 * 86_400_000) * 1000, signed=purchased * 1000,
                             payload=json.dumps(payload), user=f"{tag}-user-{n}", now=purchased * 1000))
        col = lambda k: [r[k] for r in rows]
        f.write(f"""EXECUTE record({arr([project] * batch, 'text')}, {arr(col('id'), 'text')}, {arr(col('original'), 'text')},
    {arr(col('product'), 'text')}, {arr(['Auto-Renewable Subscription'] * batch, 'text')},
    {arr(['Production'] * batch, 'text')}, {arr(['com.bouncer.bench'] * batch, 'text')}, {arr(col('purchased'), 'int8')},
    {arr(col('purchased'), 'int8')}, {arr(col('expires'), 'int8')}, {arr([None] * batch, 'int8')},
    {arr([None] * batch, 'int8')}, {arr([None] * batch, 'text')}, {arr(['PURCHASED'] * batch, 'text')},
    {arr(col('signed'), 'int8')}, {arr(col('payload'), 'text')}, {arr(col('user'), 'text')}, {arr([None] * batch, 'text')},
    {arr(['transfer'] * batch, 'text')}, {arr(col('now'), 'int8')}, {arr(['receipt'] * batch, 'text')});
""")
