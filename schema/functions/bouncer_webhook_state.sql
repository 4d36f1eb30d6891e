-- The copy's row for a user holding a purchase with these facts (bouncer_change_snapshot's fields as jsonb, plus
-- environment and original_transaction_id), with its status at p_at (bouncer_purchase_status).
CREATE OR REPLACE FUNCTION bouncer_webhook_state(p_project_id uuid, p_user_id text, p_facts jsonb, p_at timestamptz)
RETURNS webhook_purchase_states
LANGUAGE sql STABLE AS $$
    SELECT jsonb_populate_record(NULL::webhook_purchase_states, p_facts || jsonb_build_object(
        'project_id', p_project_id, 'user_id', p_user_id, 'status', bouncer_purchase_status(f, p_at),
        'access_ends_at', bouncer_purchase_access_end(f)))
    FROM jsonb_populate_record(NULL::purchases, p_facts || jsonb_build_object('project_id', p_project_id)) f
$$;
