-- The money facts of the given purchases' transactions (revenue_transactions' rows, schema/0062), from the stored
-- transactions: those with a price, and free trials; not family-shared ones (the organizer paid). paid_days_before:
-- the days of paid service the subscription had accumulated when the transaction began. Apple counts paid service
-- per subscription group (an upgrade, downgrade or crossgrade keeps the original transaction id, so the purchase is
-- the group), without free trials, and starts over when the subscriber comes back more than 60 days after the last
-- paid day; a fully refunded period accrues nothing, a prorated one (access kept) all of it. Set-based: islands of paid
-- periods (a new one when a period starts more than 60 days after every earlier one ended), days summed within.
CREATE OR REPLACE FUNCTION bouncer_revenue_rows(p_project_id uuid, p_environment text, p_original_ids text[])
RETURNS SETOF revenue_transactions
LANGUAGE sql STABLE AS $$
    WITH base AS (
        SELECT t.*, COALESCE(t.offer_discount_type = 'FREE_TRIAL', false) AS is_trial,
            COALESCE(t.revocation_date, CASE WHEN jsonb_typeof(t.payload -> 'revocationDate') = 'number'
                AND t.revocation_type IS NOT NULL
                THEN to_timestamp((t.payload ->> 'revocationDate')::numeric / 1000) END) AS refunded_at,
            bouncer_money_refund_share(COALESCE(t.revocation_date, CASE WHEN t.revocation_type IS NOT NULL
                THEN t.purchase_date END), t.revocation_type, t.revocation_percentage) AS refunded
        FROM transactions t
        WHERE t.project_id = p_project_id AND t.environment = p_environment
          AND t.original_transaction_id = ANY (p_original_ids)
          AND (t.price_milli IS NOT NULL OR t.offer_discount_type = 'FREE_TRIAL')
          AND t.ownership_type IS DISTINCT FROM 'FAMILY_SHARED'
    ), paid AS (
        SELECT b.*,
            CASE WHEN b.type = 'Auto-Renewable Subscription' AND NOT b.is_trial AND COALESCE(b.price_milli, 0) > 0
                      AND b.expires_date IS NOT NULL AND b.refunded < 100000
                 THEN GREATEST(LEAST(b.expires_date, COALESCE(b.revocation_date, b.expires_date)), b.purchase_date)
            END AS paid_end
        FROM base b
    ), marked AS (
        SELECT p.*,
            CASE WHEN p.paid_end IS NULL THEN 0
                 ELSE extract(epoch FROM p.paid_end - p.purchase_date) / 86400 END AS paid_days,
            max(p.paid_end) OVER w AS ended_before
        FROM paid p
        WINDOW w AS (PARTITION BY p.original_transaction_id ORDER BY p.purchase_date, p.transaction_id
                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
    ), islands AS (
        SELECT m.*, sum(CASE WHEN m.paid_end IS NOT NULL
                             AND (m.ended_before IS NULL OR m.purchase_date > m.ended_before + interval '60 days')
                        THEN 1 ELSE 0 END)
                OVER (PARTITION BY m.original_transaction_id ORDER BY m.purchase_date, m.transaction_id) AS island
        FROM marked m
    )
    SELECT i.project_id, i.environment, i.transaction_id, i.original_transaction_id, i.product_id, i.type,
        i.payload ->> 'storefront', COALESCE(i.currency, ''), COALESCE(i.price_milli, 0), i.is_trial, i.is_renewal,
        i.purchase_date, i.expires_date, i.revocation_date, CASE WHEN i.refunded > 0 THEN i.refunded_at END,
        i.refunded,
        floor(COALESCE(sum(i.paid_days) OVER (PARTITION BY i.original_transaction_id, i.island
            ORDER BY i.purchase_date, i.transaction_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0))::int
    FROM islands i
$$;
