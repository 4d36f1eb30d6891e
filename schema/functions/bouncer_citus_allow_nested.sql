-- On Citus (deploy/citus.md, "What changed in the application"): lets a function that reads the tenant's tables run
-- inside a statement Citus routed to the tenant's worker, for the rest of the transaction. There the statement runs
-- as a query on a shard, and Citus refuses any query of a distributed table under it ("cannot execute a distributed
-- query from a query on a shard") unless citus.allow_nested_distributed_execution is on. Each caller reads only rows
-- of the statement's project, whose shards are co-located with the statement's (one worker, local execution in the
-- same transaction), or reference tables. Nothing on one node (citus.version is unset): one setting read. Returns the
-- setting's new value (NULL on one node).
CREATE OR REPLACE FUNCTION bouncer_citus_allow_nested() RETURNS text
LANGUAGE sql VOLATILE AS $$
    SELECT CASE WHEN current_setting('citus.version', true) IS NOT NULL
        THEN set_config('citus.allow_nested_distributed_execution', 'on', true) END
$$;
