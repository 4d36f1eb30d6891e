-- Distributes Bouncer's schema on Citus by tenant (project). See deploy/citus.md for the procedure and the choices.
--
-- Run on the coordinator after `CREATE EXTENSION citus` on every node, the workers added, and `bouncer migrate`
-- against the coordinator; in ONE transaction, and again after every `bouncer migrate` that created a table (a
-- second run distributes only what is still local: it is idempotent, and it drops nothing):
--
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 --single-transaction -f deploy/citus.sql
--
-- Tests/EndToEndTests/Citus*.swift run it (twice) on a real Citus 13 cluster, then the end-to-end suites on it;
-- deploy/check runs it on plain PostgreSQL with stand-ins for the Citus functions (deploy/citus_stubs.sql).

-- Triggers on distributed tables run on the shards, on the worker that holds the row. Bouncer's (a notification's
-- consumption request, the webhook queue's heads) only touch rows of the same tenant in co-located tables, which
-- is what Citus requires of them; without this setting Citus refuses to distribute a table that has triggers.
SET LOCAL citus.enable_unsafe_triggers TO on;
-- Distributing tables that reference each other in one transaction: create their shards one connection per node.
SET LOCAL citus.multi_shard_modify_mode TO 'sequential';

DO $citus$
DECLARE
    -- Not tenant data, or data every request reads by something else than a project id: one copy on every node.
    -- A referenced table comes before the tables that reference it (accounts before projects and members).
    reference_tables text[] := ARRAY[
        'accounts',          -- projects, members, api keys, usage and quotas point at it
        'projects',          -- found by id from every table, and by public key before the id is known
        'project_keys',      -- found by public key (UNIQUE) before the project is known
        'members',           -- console logins by email; invitations by invite hash (UNIQUE)
        'console_sessions',  -- found by token hash; points at members
        'api_keys',          -- found by key hash (UNIQUE) before the account is known
        'account_quotas',    -- read with accounts by the admin and usage routes
        'account_usage',     -- written in batches by the usage flusher, read per account
        'audit_log',         -- one row per admin action, account- or project-wide, listed across projects
        'signing_keys',      -- the instance's webhook signing keys (no tenant)
        'exchange_rates',    -- daily rates (no tenant)
        'tax_rates',         -- per-storefront tax rates by day (no tenant)
        'jws_headers'        -- a JWS header (the x5c chain) shared by every tenant's transactions, by its SHA-256
    ];
    -- Every other table with a project_id: distributed by it, in one co-location group with purchases, so a tenant's
    -- rows of every table live on one worker and each request's statements and transaction run there. A referenced
    -- table comes before the tables that reference it.
    tenant_tables text[] := ARRAY[
        'purchases', 'products', 'transactions', 'subscriptions', 'ownership_events', 'notifications',
        'pending_renewals', 'app_store_credentials', 'reconcile_runs', 'reconcile_changes', 'reconcile_checks',
        'reconcile_cursors', 'reconcile_refund_revisions', 'app_transactions', 'consumption_requests',
        'renewal_extensions', 'mass_renewal_extensions', 'webhook_endpoints', 'webhook_events', 'webhook_attempts',
        'webhook_queue', 'webhook_purchase_states', 'webhook_entitlement_states', 'grants', 'purchase_changes',
        'overview_days', 'overview_instants', 'overview_trials', 'transaction_finishes', 'transaction_jws',
        'retention_rules', 'retention_decisions', 'revenue_settings', 'revenue_transactions', 'revenue_days',
        'revenue_runs', 'revenue_run_days', 'revenue_values', 'revenue_value_days', 'revenue_cohorts',
        'revenue_ltv_purchases', 'revenue_ltv_customers', 'revenue_ltv_days', 'revenue_movement_days'
    ];
    -- Only the migrator reads these, through the coordinator, under its advisory lock there.
    local_tables text[] := ARRAY['schema_migrations', 'schema_functions'];
    unplaced text[];
    fk record;
    fks text[] := '{}';
    t text;
    missing text;
BEGIN
    -- A table this file does not know (a newer migration's) must be placed here first, not left local by accident.
    SELECT string_agg(c.relname, ', ' ORDER BY c.relname) INTO missing
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
      AND c.relname <> ALL (reference_tables || tenant_tables || local_tables);
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'deploy/citus.sql does not place these tables: %', missing
            USING HINT = 'add each to reference_tables or tenant_tables in deploy/citus.sql';
    END IF;

    SELECT array_agg(u) INTO unplaced FROM unnest(reference_tables || tenant_tables) u
    WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = u::regclass
                      AND (p.partmethod = 'h' OR p.repmodel = 't'));
    IF unplaced IS NULL THEN
        RAISE NOTICE 'deploy/citus.sql: every table is already placed';
        RETURN;
    END IF;

    -- The foreign keys of the tables still to place come off first and go back, identical, at the end. With them
    -- in place, making `accounts` or `projects` a reference table would turn every table that references them
    -- into a "Citus local table", and distributing such a table afterwards recreates it, dropping (by cascade) the
    -- functions that use its row type.
    FOR fk IN SELECT c.conrelid::regclass::text AS rel, c.conname, pg_get_constraintdef(c.oid) AS def
              FROM pg_constraint c
              WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
                AND (c.conrelid::regclass::text = ANY (unplaced) OR c.confrelid::regclass::text = ANY (unplaced))
              ORDER BY 1, 2 LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.rel, fk.conname);
        fks := fks || ARRAY[ARRAY[fk.rel, fk.conname, fk.def]];
    END LOOP;

    FOREACH t IN ARRAY reference_tables LOOP
        IF t = ANY (unplaced) THEN
            PERFORM create_reference_table(t::regclass);
        END IF;
    END LOOP;
    FOREACH t IN ARRAY tenant_tables LOOP
        IF t = ANY (unplaced) THEN
            PERFORM create_distributed_table(t::regclass, 'project_id',
                colocate_with => CASE WHEN t = 'purchases' THEN 'default' ELSE 'purchases' END);
        END IF;
    END LOOP;

    FOR i IN 1 .. coalesce(array_length(fks, 1), 0) LOOP
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', fks[i][1], fks[i][2], fks[i][3]);
    END LOOP;
    RAISE NOTICE 'deploy/citus.sql: placed %', array_to_string(unplaced, ', ');
END
$citus$;

-- Bouncer's functions on every node. A statement routed to a tenant's worker runs there whole, with the functions it
-- calls (the deriver's, the webhook copy's), so they must exist there too. Citus creates a function on the workers
-- by itself when its types are already known there; those that take or return a table's row type (purchases,
-- transactions, webhook_purchase_states) are made distributed objects here, after their tables. A function that is
-- a distributed object follows every later `CREATE OR REPLACE` of the migrator. Idempotent.
-- Dependencies first: a worker checks an SQL function's body when Citus creates it there, so an SQL function goes
-- after every function its body names (PL/pgSQL bodies are checked for syntax only). Creation order (oid) is not
-- enough: a function a migration dropped and the files created again is newer than its callers.
DO $functions$
DECLARE
    f regprocedure;
    v_sql oid := (SELECT l.oid FROM pg_language l WHERE l.lanname = 'sql');
    v_left oid[];
    v_ready oid[];
BEGIN
    SELECT COALESCE(array_agg(p.oid ORDER BY p.oid), '{}') INTO v_left FROM pg_proc p
    WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'bouncer\_%' AND p.prokind = 'f'
      AND NOT EXISTS (SELECT 1 FROM pg_dist_object o WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid);
    WHILE cardinality(v_left) > 0 LOOP
        -- PL/pgSQL functions, and SQL functions whose body names no function still left (itself aside); all that
        -- are left if none is ready.
        SELECT array_agg(p.oid ORDER BY p.oid) INTO v_ready FROM pg_proc p
        WHERE p.oid = ANY (v_left) AND NOT (p.prolang = v_sql AND EXISTS (
            SELECT 1 FROM pg_proc q
            WHERE q.oid = ANY (v_left) AND q.proname <> p.proname
              AND p.prosrc ~ ('\m' || q.proname || '\M')));
        v_ready := COALESCE(v_ready, v_left);
        FOREACH f IN ARRAY v_ready::regprocedure[] LOOP
            PERFORM create_distributed_function(f);
        END LOOP;
        SELECT COALESCE(array_agg(x ORDER BY x), '{}') INTO v_left FROM unnest(v_left) x WHERE x <> ALL (v_ready);
    END LOOP;
END
$functions$;
