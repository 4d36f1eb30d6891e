-- Stand-ins for Citus' create_reference_table and create_distributed_table on plain PostgreSQL, so that
-- deploy/check can run deploy/citus.sql against the real migrated schema. They enforce the rules Citus
-- enforces when distributing a table (the ones that concern our schema) and record what was distributed;
-- citus_stub_verify() then checks that nothing was missed. deploy/check loads this file, runs citus.sql
-- and the verification in ONE transaction and rolls it back: nothing here persists.

CREATE TABLE citus_stub_tables (
    relid        regclass PRIMARY KEY,
    kind         text     NOT NULL CHECK (kind IN ('reference', 'distributed')),
    column_name  text,
    colocation   regclass
);

-- A reference table is replicated to every node: it may reference only other reference tables.
CREATE FUNCTION create_reference_table(table_name regclass) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    fk record;
BEGIN
    IF EXISTS (SELECT 1 FROM citus_stub_tables WHERE relid = table_name) THEN
        RAISE EXCEPTION 'table % is already distributed', table_name;
    END IF;
    FOR fk IN SELECT conname, confrelid::regclass AS target FROM pg_constraint
              WHERE conrelid = table_name AND contype = 'f' LOOP
        IF NOT EXISTS (SELECT 1 FROM citus_stub_tables WHERE relid = fk.target AND kind = 'reference') THEN
            RAISE EXCEPTION 'reference table %: foreign key % references %, which is not a reference table',
                table_name, fk.conname, fk.target;
        END IF;
    END LOOP;
    INSERT INTO citus_stub_tables VALUES (table_name, 'reference', NULL, NULL);
END
$$;

-- Same parameter names as Citus (callers use `colocate_with =>`); distribution_type is text here.
CREATE FUNCTION create_distributed_table(
    table_name regclass, distribution_column text, distribution_type text DEFAULT 'hash',
    colocate_with text DEFAULT 'default', shard_count int DEFAULT NULL
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    dist_att   smallint;
    not_null   boolean;
    grp        regclass;
    c          record;
    target     record;
    target_att smallint;
BEGIN
    IF EXISTS (SELECT 1 FROM citus_stub_tables WHERE relid = table_name) THEN
        RAISE EXCEPTION 'table % is already distributed', table_name;
    END IF;
    SELECT attnum, attnotnull INTO dist_att, not_null FROM pg_attribute
    WHERE attrelid = table_name AND attname = distribution_column AND NOT attisdropped;
    IF dist_att IS NULL THEN
        RAISE EXCEPTION 'table % has no column %', table_name, distribution_column;
    END IF;
    IF NOT not_null THEN  -- Citus rejects rows with a NULL distribution column
        RAISE EXCEPTION 'distribution column %.% must be NOT NULL', table_name, distribution_column;
    END IF;

    -- Uniqueness is enforced per shard only, so every unique index (primary keys and UNIQUE constraints
    -- included) must contain the distribution column.
    FOR c IN SELECT indexrelid::regclass AS idx, indkey::int2[] AS cols FROM pg_index
             WHERE indrelid = table_name AND indisunique LOOP
        IF NOT dist_att = ANY (c.cols) THEN
            RAISE EXCEPTION 'unique index % of % does not include the distribution column %',
                c.idx, table_name, distribution_column;
        END IF;
    END LOOP;

    IF colocate_with = 'default' THEN
        grp := table_name;  -- starts its own co-location group
    ELSIF colocate_with = 'none' THEN
        grp := table_name;
    ELSE
        SELECT colocation INTO grp FROM citus_stub_tables
        WHERE relid = colocate_with::regclass AND kind = 'distributed';
        IF grp IS NULL THEN
            RAISE EXCEPTION 'colocate_with %: that table is not distributed (yet)', colocate_with;
        END IF;
    END IF;

    -- Foreign keys: to a reference table, or to a distributed table of the same co-location group with the
    -- distribution columns in the same position of both column lists. SET NULL / SET DEFAULT actions that
    -- would touch the distribution column are not supported.
    FOR c IN SELECT conname, confrelid::regclass AS ref, conkey, confkey, confdeltype, confupdtype
             FROM pg_constraint WHERE conrelid = table_name AND contype = 'f' LOOP
        SELECT * INTO target FROM citus_stub_tables WHERE relid = c.ref;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'foreign key % of % references %, which is neither a reference nor a distributed table yet',
                c.conname, table_name, c.ref;
        END IF;
        IF dist_att = ANY (c.conkey) AND (c.confdeltype IN ('n', 'd') OR c.confupdtype IN ('n', 'd')) THEN
            RAISE EXCEPTION 'foreign key % of %: SET NULL/SET DEFAULT on the distribution column', c.conname, table_name;
        END IF;
        IF target.kind = 'distributed' THEN
            IF target.colocation IS DISTINCT FROM grp THEN
                RAISE EXCEPTION 'foreign key % of % references %, which is not co-located', c.conname, table_name, c.ref;
            END IF;
            SELECT attnum INTO target_att FROM pg_attribute WHERE attrelid = c.ref AND attname = target.column_name;
            IF array_position(c.conkey, dist_att) IS NULL
               OR array_position(c.conkey, dist_att) IS DISTINCT FROM array_position(c.confkey, target_att) THEN
                RAISE EXCEPTION 'foreign key % of % does not pair the distribution columns of both tables',
                    c.conname, table_name;
            END IF;
        END IF;
    END LOOP;
    INSERT INTO citus_stub_tables VALUES (table_name, 'distributed', distribution_column, grp);
END
$$;

-- After citus.sql: every table of the schema (but the migrator's own) is covered; every table with a
-- project_id is distributed by it; all distributed tables share one co-location group.
CREATE FUNCTION citus_stub_verify() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    missing text;
    wrong   text;
    groups  int;
BEGIN
    SELECT string_agg(c.oid::regclass::text, ', ' ORDER BY c.relname) INTO missing
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
      AND c.relname NOT IN ('schema_migrations', 'citus_stub_tables')
      AND NOT EXISTS (SELECT 1 FROM citus_stub_tables t WHERE t.relid = c.oid);
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'citus.sql leaves these tables local: %', missing;
    END IF;
    SELECT string_agg(t.relid::text, ', ') INTO wrong
    FROM citus_stub_tables t JOIN pg_attribute a ON a.attrelid = t.relid AND a.attname = 'project_id'
    WHERE t.kind <> 'distributed' OR t.column_name <> 'project_id';
    IF wrong IS NOT NULL THEN
        RAISE EXCEPTION 'tenant tables not distributed by project_id: %', wrong;
    END IF;
    SELECT count(DISTINCT colocation) INTO groups FROM citus_stub_tables WHERE kind = 'distributed';
    IF groups <> 1 THEN
        RAISE EXCEPTION 'distributed tables form % co-location groups, expected 1', groups;
    END IF;
    RETURN QUERY SELECT t.kind || ' ' || t.relid::text || coalesce(' by ' || t.column_name, '')
                 FROM citus_stub_tables t ORDER BY t.kind DESC, t.relid::text;
END
$$;
