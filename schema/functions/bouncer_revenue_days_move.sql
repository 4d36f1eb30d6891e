-- Moves revenue_days (schema/0072) by one revenue_transactions row, p_sign = +1 for a row written, −1 for the row it
-- replaced or a row removed: its sale (by purchase day) and, when refunded, its refund (by refund day); a count back
-- to zero removes its row. The commission tier is bouncer_money_commission's outside the Small Business Program (the
-- charts apply the program's 15 % when the project is in it). Called by bouncer_revenue_roll_up for each row it
-- writes or removes (schema/0078: an explicit step, no trigger), so revenue_days equals what revenue_transactions
-- holds; never in the receipt's transaction.
CREATE OR REPLACE FUNCTION bouncer_revenue_days_move(r revenue_transactions, p_sign int) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_day date;
    v_pct int;
    v_tier int;
BEGIN
    IF r.price_milli <= 0 THEN
        RETURN;
    END IF;
    v_tier := bouncer_money_commission(false, r.type = 'Auto-Renewable Subscription', r.paid_days_before);
    FOR v_kind IN 0..1 LOOP
        CONTINUE WHEN v_kind = 1 AND NOT (r.refund_milli_percent > 0 AND r.refund_date IS NOT NULL);
        v_day := CASE WHEN v_kind = 0 THEN (r.purchase_date AT TIME ZONE 'UTC')::date
            ELSE (r.refund_date AT TIME ZONE 'UTC')::date END;
        v_pct := CASE WHEN v_kind = 0 THEN 0 ELSE r.refund_milli_percent END;
        INSERT INTO revenue_days AS d (project_id, day, environment, product_id, storefront, currency, kind,
            price_milli, tier, refund_milli_percent, n, refunded)
        VALUES (r.project_id, v_day, r.environment, r.product_id, COALESCE(r.storefront, ''), r.currency, v_kind,
            r.price_milli, v_tier, v_pct, p_sign,
            CASE WHEN v_kind = 0 AND r.refund_milli_percent > 0 THEN p_sign ELSE 0 END)
        ON CONFLICT (project_id, day, environment, product_id, storefront, currency, kind, price_milli, tier,
            refund_milli_percent)
        DO UPDATE SET n = d.n + EXCLUDED.n, refunded = d.refunded + EXCLUDED.refunded;
        IF p_sign < 0 THEN
            DELETE FROM revenue_days d WHERE d.project_id = r.project_id AND d.day = v_day
              AND d.environment = r.environment AND d.product_id = r.product_id
              AND d.storefront = COALESCE(r.storefront, '') AND d.currency = r.currency AND d.kind = v_kind
              AND d.price_milli = r.price_milli AND d.tier = v_tier AND d.refund_milli_percent = v_pct
              AND d.n = 0 AND d.refunded = 0;
        END IF;
    END LOOP;
END;
$$;
