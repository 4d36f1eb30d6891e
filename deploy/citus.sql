-- Distributes Bouncer's schema on Citus by tenant (project). See deploy/citus.md for when and why.
--
-- Run ONCE on the coordinator, after `bouncer migrate` created the plain tables (migrations 0001-0002) and
-- after `CREATE EXTENSION citus` and adding the workers; before serving traffic is best (distributing a
-- table that already has rows copies them and blocks writes to it meanwhile):
--
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 --single-transaction -f deploy/citus.sql
--
-- deploy/check runs this file against the real migrated schema on plain PostgreSQL, with stand-ins for the
-- two Citus functions, and checks that every tenant table is distributed by project_id, every primary key,
-- unique constraint and foreign key between distributed tables includes project_id, and nothing is missed.

-- 32 shards (Citus' default) spreads tenants over up to 32 workers; pick a few times your worker count.
-- SET citus.shard_count = 32;

-- projects: a REFERENCE table (one copy on every node). Every request starts by finding its project by
-- public key (`public_key` is UNIQUE), which a table distributed by `id` could neither enforce (a unique
-- constraint there must contain the distribution column) nor route (the lookup does not know the id yet).
-- A reference table answers it on any node, and the distributed tables below can keep their foreign keys
-- to it (distributed -> reference is supported, ON DELETE CASCADE included). Projects are few and small.
SELECT create_reference_table('projects');

-- Every tenant table: distributed by project_id, all in one co-location group, so a tenant's rows of every
-- table live in the same shard group and each request's statements (all filter on project_id) and its
-- multi-statement database transaction run on one worker, with local joins and local foreign keys.
-- Order: a referenced table before the tables that reference it (purchases before subscriptions).
SELECT create_distributed_table('purchases',        'project_id');
SELECT create_distributed_table('products',         'project_id', colocate_with => 'purchases');
SELECT create_distributed_table('transactions',     'project_id', colocate_with => 'purchases');
SELECT create_distributed_table('subscriptions',    'project_id', colocate_with => 'purchases');
SELECT create_distributed_table('ownership_events', 'project_id', colocate_with => 'purchases');
SELECT create_distributed_table('notifications',    'project_id', colocate_with => 'purchases');
SELECT create_distributed_table('pending_renewals', 'project_id', colocate_with => 'purchases');

-- schema_migrations stays a plain (local) table on the coordinator: only the migrator reads and writes it,
-- always through the coordinator, under its session advisory lock there.
