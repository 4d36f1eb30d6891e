-- Keeps revenue_days (schema/0072) equal to what revenue_transactions holds: each row written or removed moves its
-- sale (by purchase day) and, when refunded, its refund (by refund day) by one, the old row's out and the new row's
-- in; a count back to zero removes its row. The commission tier is bouncer_money_commission's outside the Small
-- Business Program (the charts apply the program's 15 % when the project is in it). Only the deriver writes
-- revenue_transactions (bouncer_revenue_roll_up), never the receipt's transaction, so neither does this.
CREATE OR REPLACE FUNCTION bouncer_revenue_days_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r revenue_transactions;
    v_sign int;
    v_day date;
    v_pct int;
    v_tier int;
BEGIN
    FOR v_step IN 1..2 LOOP
        IF v_step = 1 THEN
            CONTINUE WHEN TG_OP = 'INSERT';
            r := OLD;
            v_sign := -1;
        ELSE
            CONTINUE WHEN TG_OP = 'DELETE';
            r := NEW;
            v_sign := 1;
        END IF;
        CONTINUE WHEN r.price_milli <= 0;
        v_tier := bouncer_money_commission(false, r.type = 'Auto-Renewable Subscription', r.paid_days_before);
        FOR v_kind IN 0..1 LOOP
            CONTINUE WHEN v_kind = 1 AND NOT (r.refund_milli_percent > 0 AND r.refund_date IS NOT NULL);
            v_day := CASE WHEN v_kind = 0 THEN (r.purchase_date AT TIME ZONE 'UTC')::date
                ELSE (r.refund_date AT TIME ZONE 'UTC')::date END;
            v_pct := CASE WHEN v_kind = 0 THEN 0 ELSE r.refund_milli_percent END;
            INSERT INTO revenue_days AS d (project_id, day, environment, product_id, storefront, currency, kind,
                price_milli, tier, refund_milli_percent, n, refunded)
            VALUES (r.project_id, v_day, r.environment, r.product_id, COALESCE(r.storefront, ''), r.currency, v_kind,
                r.price_milli, v_tier, v_pct, v_sign,
                CASE WHEN v_kind = 0 AND r.refund_milli_percent > 0 THEN v_sign ELSE 0 END)
            ON CONFLICT (project_id, day, environment, product_id, storefront, currency, kind, price_milli, tier,
                refund_milli_percent)
            DO UPDATE SET n = d.n + EXCLUDED.n, refunded = d.refunded + EXCLUDED.refunded;
            IF v_sign < 0 THEN
                DELETE FROM revenue_days d WHERE d.project_id = r.project_id AND d.day = v_day
                  AND d.environment = r.environment AND d.product_id = r.product_id
                  AND d.storefront = COALESCE(r.storefront, '') AND d.currency = r.currency AND d.kind = v_kind
                  AND d.price_milli = r.price_milli AND d.tier = v_tier AND d.refund_milli_percent = v_pct
                  AND d.n = 0 AND d.refunded = 0;
            END IF;
        END LOOP;
    END LOOP;
    RETURN NULL;
END;
$$;
