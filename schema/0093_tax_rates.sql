-- 0093_tax_rates (issue 26, item 1): the operator's per-storefront tax rates (PUT /v1/admin/tax-rates). Operator-wide
-- like exchange_rates (0062), not a tenant's: tax depends on the storefront and the day. One row per storefront
-- (Apple's ISO 3166-1 alpha-3 `storefront`) and day from which its rate is in force, in milli-percent (19 % is 19000):
-- a transaction uses its storefront's latest rate dated on or before its purchase day (bouncer_money_tax_rate), none
-- 0 %. Exact integers, never a float.
CREATE TABLE tax_rates (
    storefront     text NOT NULL,
    day            date NOT NULL,
    milli_percent  int  NOT NULL CHECK (milli_percent >= 0 AND milli_percent < 100000),
    PRIMARY KEY (storefront, day)
);
