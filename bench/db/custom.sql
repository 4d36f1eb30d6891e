\set k random(1, 100000)
INSERT INTO bench_kv (k, v) VALUES (:k, 1) ON CONFLICT (k) DO UPDATE SET v = bench_kv.v + 1;
