-- Time passing: 0012's sweep over the copy. A state whose access ended before the project's oldest log row not yet
-- derived waits for the deriver (that row, e.g. a renewal, may precede the expiry).
CREATE OR REPLACE FUNCTION bouncer_webhook_sweep(p_limit int) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    v_count int := 0;
BEGIN
    FOR r IN
        SELECT DISTINCT d.project_id, d.user_id FROM (
            SELECT st.project_id, st.user_id FROM webhook_purchase_states st
            WHERE st.status = 'active' AND st.access_ends_at IS NOT NULL AND st.access_ends_at <= now()
              AND NOT EXISTS (SELECT 1 FROM (SELECT c.created_at FROM purchase_changes c
                                             WHERE c.project_id = st.project_id ORDER BY c.seq LIMIT 1) oldest
                              WHERE oldest.created_at <= st.access_ends_at)
            ORDER BY st.access_ends_at LIMIT p_limit) d
    LOOP
        IF bouncer_webhook_refresh_copy(r.project_id, r.user_id, now(), '[]', false) THEN
            v_count := v_count + 1;
        END IF;
    END LOOP;
    RETURN v_count;
END;
$$;
