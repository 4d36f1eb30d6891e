#!/usr/bin/env python3
"""bench/api's CPU split of a POST phase's wrk time, and of the drain after it, by process and thread.

    cpu-split.py snapshot BOUNCER_PID RECEIVER_PID PG_MASTER_PID PSQL_ARGS...   > snapshot.json
    cpu-split.py report BEFORE.json AFTER.json COMPLETED [LABEL]     # LABEL: "during wrk" unless given

A snapshot holds the CPU ticks (utime + stime) of each bouncer thread (/proc/PID/task/*/stat, named by its comm:
Job threads are `bouncer.webhook…`, the I/O loops `bouncer-io-N`, the workers `bouncer-worker-N`), of the receiver,
and of each PostgreSQL process by what pg_stat_activity says it is (application_name, else backend_type), and the
top-level statements of pg_stat_statements (calls, exec ms, buffers). The report prints each group's CPU in µs per
POST (threads and backends that came and went are counted from 0) and the top-level statements' exec µs and
buffers per POST over the same interval: which of them is the deriver's, the dispatcher's or the receipts'.
PostgreSQL's processes that exited within the interval (autovacuum workers, mostly) are the group `exited`: the
postmaster's reaped children's CPU (cutime + cstime), which the live processes' sum misses.
"""
import json
import os
import re
import subprocess
import sys


def ticks(path, reaped=False):
    """utime + stime of /proc/PID/stat, or with `reaped` its waited-for children's (cutime + cstime)."""
    try:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[13]) + int(fields[14]) if reaped else int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def comm(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "?"


def group(name):
    # bouncer-io-0, bouncer-worker-12: one group per kind of thread.
    return re.sub(r"[-.]\d+$", "-N", name)


def rows(psql, width, sql):
    """psql's tab-separated rows of `width` fields (others, e.g. a query text with a tab, are skipped)."""
    out = subprocess.run(psql + ["-F", "\t", "-c", sql], capture_output=True, text=True).stdout
    return [parts for parts in (line.split("\t") for line in out.splitlines()) if len(parts) == width]


def snapshot(bpid, rpid, master, psql):
    threads = {}
    for tid in os.listdir("/proc/%s/task" % bpid):
        t = ticks("/proc/%s/task/%s/stat" % (bpid, tid))
        if t is not None:
            threads[tid] = [group(comm("/proc/%s/task/%s/comm" % (bpid, tid))), t]
    kinds = {pid: kind for pid, kind in rows(psql, 2, "SELECT pid, COALESCE(NULLIF(regexp_replace(application_name, "
                                                     "'-[0-9]+$', ''), ''), backend_type) FROM pg_stat_activity")}
    pg = {}
    children = subprocess.run(["pgrep", "-P", master], capture_output=True, text=True).stdout.split()
    for pid in children + [master]:
        t = ticks("/proc/%s/stat" % pid)
        if t is not None:
            pg[pid] = [kinds.get(pid, "postmaster" if pid == master else "other"), t]
    statements = {}
    for qid, calls, ms, buffers, query in rows(
            psql, 5, "SELECT queryid, calls, total_exec_time, shared_blks_hit + shared_blks_read, "
                     "left(regexp_replace(query, '\\s+', ' ', 'g'), 80) FROM pg_stat_statements "
                     "WHERE toplevel AND dbid = (SELECT oid FROM pg_database WHERE datname = 'bouncer')"):
        statements[qid] = [query, int(calls), float(ms), int(buffers)]
    pg["exited"] = ["exited", ticks("/proc/%s/stat" % master, reaped=True) or 0]
    receiver = ticks("/proc/%s/stat" % rpid) if rpid and rpid != "0" else None
    return {"threads": threads, "pg": pg, "receiver": receiver or 0, "statements": statements}


def report(before, after, n, label="during wrk"):
    hz = os.sysconf("SC_CLK_TCK")
    us = lambda t: 1e6 * t / hz / n

    def grouped(key):
        sums = {}
        for ident, (name, t) in after[key].items():
            was = before[key].get(ident)
            d = t - (was[1] if was and was[0] == name else 0)
            sums[name] = sums.get(name, 0) + d
        return sums

    threads = grouped("threads")
    pg = grouped("pg")
    print("                   cpu split %s (us per POST): bouncer %.0f = %s" % (label,
        us(sum(threads.values())),
        ", ".join("%s %.0f" % (k, us(v)) for k, v in sorted(threads.items(), key=lambda x: -x[1]) if v > 0)))
    print("                   cpu split %s (us per POST): postgres %.0f = %s" % (label,
        us(sum(pg.values())),
        ", ".join("%s %.0f" % (k, us(v)) for k, v in sorted(pg.items(), key=lambda x: -x[1]) if v > 0)))
    print("                   cpu split %s (us per POST): receiver %.0f" % (
        label, us(after["receiver"] - before["receiver"])))
    rows = []
    for qid, (query, calls, ms, buffers) in after["statements"].items():
        was = before["statements"].get(qid, [query, 0, 0.0, 0])
        dc = calls - was[1]
        if dc > 0:
            rows.append((1000 * (ms - was[2]) / n, dc / n, (buffers - was[3]) / n, (buffers - was[3]) / dc, query))
    print("                   top-level statements %s (exec us per POST, calls per POST, buffers per POST, per call):"
          % label)
    for row in sorted(rows, reverse=True)[:10]:
        print("                     %8.1f %8.3f %9.1f %9.1f  %s" % row)


if sys.argv[1] == "snapshot":
    json.dump(snapshot(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]), sys.stdout)
else:
    with open(sys.argv[2]) as f:
        b = json.load(f)
    with open(sys.argv[3]) as f:
        a = json.load(f)
    report(b, a, int(sys.argv[4]), *sys.argv[5:6])
