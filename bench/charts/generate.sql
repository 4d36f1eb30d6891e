-- bench/charts' data: :n transactions of project :'project', generated in SQL (psql -v project=… -v n=…).
-- Purchases (originals) start uniformly over the last 730 days; each picks, by hashes of its number:
--   product  weekly 15 % (7 days), monthly 45 %, quarterly 5 %, yearly 20 %, lifetime 5 % (Non-Consumable),
--            coins 10 % (Consumable); prices in USD terms × the storefront's factor
--   market   USA/USD 40 %, GBR/GBP 8 %, DEU/EUR 10 %, FRA/EUR 7 %, JPN/JPY 8 %, CAN/CAD 5 %, AUS/AUD 5 %,
--            CHE/CHF 3 %, BRA/BRL 5 %, IND/INR 5 % (INR has no rate: reported apart), ESP/EUR 4 %
--   trial    20 % of subscriptions start with a 7-day free trial, of which 35 % never pay
--   periods  geometric: each renewal continues with 88 % (weekly 92 %, quarterly 80 %, yearly 60 %), until now
-- ~3 % of paid transactions are refunded 3 days after purchase: 2 in 3 in full (access ends), 1 in 3 prorated
-- (50 %, access kept). Users: purchase o is held by user o % (0.8 × purchases), so some hold two.
\set ON_ERROR_STOP on
SET jit = off;
CREATE TEMP TABLE g AS
SELECT o, (o + 1000000000)::text AS otid,
       CASE WHEN h1 < 150 THEN 'weekly' WHEN h1 < 600 THEN 'monthly' WHEN h1 < 650 THEN 'quarterly'
            WHEN h1 < 850 THEN 'yearly' WHEN h1 < 900 THEN 'lifetime' ELSE 'coins' END AS product,
       CASE WHEN h2 < 400 THEN 0 WHEN h2 < 480 THEN 1 WHEN h2 < 580 THEN 2 WHEN h2 < 650 THEN 3 WHEN h2 < 730 THEN 4
            WHEN h2 < 780 THEN 5 WHEN h2 < 830 THEN 6 WHEN h2 < 860 THEN 7 WHEN h2 < 910 THEN 8 WHEN h2 < 960 THEN 9
            ELSE 10 END AS market,
       h3, h4, s
FROM (SELECT o, abs(hashint4(o)) % 1000 AS h1, abs(hashint4(o + 1)) % 1000 AS h2, abs(hashint4(o + 2)) % 1000 AS h3,
             (abs(hashint4(o + 3)) % 100000 + 1) / 100001.0 AS h4,
             date_trunc('second', now()) - (abs(hashint4(o + 4)) % (730 * 86400)) * interval '1 second' AS s
      FROM generate_series(1, (:n / 4.6)::int) AS o) h;

CREATE TEMP TABLE m (market int, storefront text, currency text, factor numeric);
INSERT INTO m VALUES (0, 'USA', 'USD', 1), (1, 'GBR', 'GBP', 0.8), (2, 'DEU', 'EUR', 1), (3, 'FRA', 'EUR', 1),
    (4, 'JPN', 'JPY', 150), (5, 'CAN', 'CAD', 1.4), (6, 'AUS', 'AUD', 1.5), (7, 'CHE', 'CHF', 1),
    (8, 'BRA', 'BRL', 5), (9, 'IND', 'INR', 80), (10, 'ESP', 'EUR', 1);

CREATE TEMP TABLE pr (product text, product_id text, type text, period interval, price numeric, keep numeric);
INSERT INTO pr VALUES
    ('weekly', 'com.bench.pro.weekly', 'Auto-Renewable Subscription', '7 days', 4990, 0.92),
    ('monthly', 'com.bench.pro.monthly', 'Auto-Renewable Subscription', '1 month', 9990, 0.88),
    ('quarterly', 'com.bench.pro.quarterly', 'Auto-Renewable Subscription', '3 months', 24990, 0.80),
    ('yearly', 'com.bench.pro.yearly', 'Auto-Renewable Subscription', '1 year', 59990, 0.60),
    ('lifetime', 'com.bench.lifetime', 'Non-Consumable', NULL, 99990, 0),
    ('coins', 'com.bench.coins', 'Consumable', NULL, 1990, 0);

-- Each purchase's transactions: k = 0 (a trial when it has one), 1, … while the geometric draw keeps it and the
-- period began by now.
INSERT INTO transactions (project_id, transaction_id, original_transaction_id, product_id, type, environment,
    purchase_date, original_purchase_date, expires_date, revocation_date, signed_date, payload, bundle_id, source,
    price_milli, currency, offer_discount_type, revocation_type, revocation_percentage, is_renewal, ends_at)
SELECT :'project', CASE WHEN x.k = 0 THEN x.otid ELSE x.otid || '.' || x.k END, x.otid, x.product_id, x.type,
       'Production', x.p, x.s, x.e,
       CASE WHEN x.refund = 1 THEN x.p + interval '3 days' END, x.p,
       jsonb_strip_nulls(jsonb_build_object(
           'price', x.price_milli,
           'currency', x.currency, 'storefront', x.storefront,
           'offerDiscountType', CASE WHEN x.trial_k THEN 'FREE_TRIAL' END,
           'revocationType', CASE x.refund WHEN 1 THEN 'REFUND_FULL' WHEN 2 THEN 'REFUND_PRORATED' END,
           'revocationPercentage', CASE WHEN x.refund = 2 THEN 50000 END,
           'revocationDate', CASE WHEN x.refund > 0
               THEN (extract(epoch FROM x.p + interval '3 days') * 1000)::bigint END)),
       'com.bench.app', 'receipt',
       -- The plain columns bouncer_record_transaction writes from the payload (schema/0040).
       x.price_milli, x.currency, CASE WHEN x.trial_k THEN 'FREE_TRIAL' END,
       CASE x.refund WHEN 1 THEN 'REFUND_FULL' WHEN 2 THEN 'REFUND_PRORATED' END,
       CASE WHEN x.refund = 2 THEN 50000 END, x.k > 0,
       LEAST(x.e, CASE WHEN x.refund = 1 THEN x.p + interval '3 days' END)
FROM (SELECT g.otid, g.s, pr.product_id, pr.type, m.currency, m.storefront, k.k,
             CASE WHEN trial AND k.k = 0 THEN 0 ELSE (round(pr.price * m.factor / 10) * 10)::bigint END AS price_milli,
             trial AND k.k = 0 AS trial_k,
             CASE WHEN trial AND k.k = 0 THEN g.s
                  WHEN trial THEN g.s + interval '7 days' + (k.k - 1) * pr.period
                  ELSE g.s + k.k * COALESCE(pr.period, interval '0') END AS p,
             CASE WHEN pr.period IS NULL THEN NULL
                  WHEN trial AND k.k = 0 THEN g.s + interval '7 days'
                  WHEN trial THEN g.s + interval '7 days' + k.k * pr.period
                  ELSE g.s + (k.k + 1) * pr.period END AS e,
             CASE WHEN trial AND k.k = 0 THEN 0
                  WHEN abs(hashint4(g.o * 131 + k.k)) % 100 < 2 THEN 1
                  WHEN abs(hashint4(g.o * 131 + k.k)) % 100 = 2 THEN 2 ELSE 0 END AS refund
      FROM g JOIN pr USING (product) JOIN m USING (market)
      CROSS JOIN LATERAL (SELECT pr.period IS NOT NULL AND g.h3 < 200 AS trial) t
      CROSS JOIN LATERAL (SELECT CASE
              WHEN pr.period IS NULL THEN 1
              WHEN trial AND g.h3 < 70 THEN 1
              ELSE (CASE WHEN trial THEN 1 ELSE 0 END) + 1 + floor(ln(g.h4) / ln(pr.keep))::int END AS periods) c
      CROSS JOIN LATERAL generate_series(0, LEAST(c.periods, 200) - 1) AS k (k)) x
WHERE x.p <= now()
LIMIT :n;

INSERT INTO purchases (project_id, original_transaction_id, latest_transaction_id, product_id, type, environment,
    purchase_date, expires_date, revocation_date, latest_signed_date)
SELECT DISTINCT ON (original_transaction_id) project_id, original_transaction_id, transaction_id, product_id, type,
       environment, purchase_date, expires_date, revocation_date, signed_date
FROM transactions WHERE project_id = :'project' ORDER BY original_transaction_id, purchase_date DESC;

INSERT INTO subscriptions (project_id, user_id, environment, original_transaction_id, bound_at)
SELECT p.project_id, 'user-' || ((p.original_transaction_id::bigint - 1000000000) % greatest((SELECT count(*) FROM g) * 8 / 10, 1)),
       p.environment, p.original_transaction_id, p.purchase_date
FROM purchases p WHERE p.project_id = :'project';

-- Daily rates, EUR-based as the ECB publishes them, over the data's days; INR has none.
INSERT INTO exchange_rates (day, base, currency, rate)
SELECT d::date, 'EUR', c.currency, round((c.rate * (1 + 0.03 * sin(extract(epoch FROM d)::float8 / 86400 / 37)))::numeric, 4)
FROM generate_series(now() - interval '800 days', now(), interval '1 day') AS d,
     (VALUES ('USD', 1.08), ('GBP', 0.85), ('JPY', 160.0), ('CAD', 1.47), ('AUD', 1.62), ('CHF', 0.95),
             ('BRL', 5.6)) AS c (currency, rate)
ON CONFLICT DO NOTHING;
