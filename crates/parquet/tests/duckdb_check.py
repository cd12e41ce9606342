"""Checks an export directory with DuckDB against what analyze --json and the latency
crate computed (expected.json, written by duckdb.rs). Usage: duckdb_check.py DIR EXPECTED"""
import json
import math
import os
import re
import sys

import duckdb

out, expected_path = sys.argv[1], sys.argv[2]
exp = json.load(open(expected_path))
db = duckdb.connect()


def table(name):
    return f"read_parquet('{out}/{name}/**/*.parquet', hive_partitioning = true)"


def rows(sql, *params):
    return db.execute(sql, list(params)).fetchall()


checked = 0
for t in exp["traces"]:
    run, e = t["run"], t["expected"]
    for host in t["hosts"]:
        # Per task: run time from sched_slice, wake-ups and their worst latency from wakeup.
        got = {
            (tid, first): (run_ns, wakes, mx)
            for tid, first, run_ns, wakes, mx in rows(
                f"""
                WITH s AS (SELECT utid, sum(dur_ns) AS run_ns FROM {table('sched_slice')}
                           WHERE host = ? AND run_id = ? AND utid IS NOT NULL GROUP BY utid),
                     w AS (SELECT utid, count(*) AS n, max(latency_ns) AS mx FROM {table('wakeup')}
                           WHERE host = ? AND run_id = ? GROUP BY utid)
                SELECT t.tid, t.first_ts_ns, coalesce(s.run_ns, 0), coalesce(w.n, 0), w.mx
                FROM {table('thread')} t LEFT JOIN s USING (utid) LEFT JOIN w USING (utid)
                WHERE t.host = ? AND t.run_id = ? AND (s.utid IS NOT NULL OR w.utid IS NOT NULL)
                """,
                host, run, host, run, host, run,
            )
        }
        want = {(x["tid"], x["first_ns"]): (x["run_ns"], x["wakeups"], x["max_latency"]) for x in e["tasks"]}
        for k, v in want.items():
            assert got.get(k) == v, f"{host}/{run} task {k}: duckdb {got.get(k)} analyze {v}"
        extra = {k: v for k, v in got.items() if k not in want and v != (0, 0, None)}
        assert not extra, f"{host}/{run}: tasks analyze does not list: {extra}"
        checked += len(want)
        # IRQ and softirq counts.
        got = dict(rows(f"SELECT irq, count(*) FROM {table('irq')} WHERE host = ? AND run_id = ? GROUP BY irq", host, run))
        assert got == {x["irq"]: x["count"] for x in e["irqs"]}, f"{host}/{run} irqs: {got} vs {e['irqs']}"
        got = dict(rows(f"SELECT softirq_vec, count(*) FROM {table('softirq')} WHERE host = ? AND run_id = ? GROUP BY softirq_vec", host, run))
        assert got == {x["vec"]: x["count"] for x in e["softirqs"]}, f"{host}/{run} softirqs"
        # IRQ -> task and softirq -> task chains (a tid may have several incarnations:
        # compare the multisets of counts per (source, tid)).
        got = sorted(rows(
            f"""SELECT irq, tid, count(*), count(*) FILTER (WHERE chain_latency_ns IS NULL) FROM {table('irq_chain')}
                WHERE host = ? AND run_id = ? AND source = 'irq' GROUP BY irq, utid, tid""", host, run))
        want_c = sorted((x["irq"], x["tid"], x["count"], x["exit_unknown"]) for x in e["chains"])
        assert [tuple(g) for g in got] == want_c, f"{host}/{run} chains: {got} vs {want_c}"
        got = sorted(rows(
            f"""SELECT softirq_vec, tid, count(*) FROM {table('irq_chain')}
                WHERE host = ? AND run_id = ? AND source = 'softirq' GROUP BY softirq_vec, utid, tid""", host, run))
        want_c = sorted((x["vec"], x["tid"], x["count"]) for x in e["softirq_chains"])
        assert [tuple(g) for g in got] == want_c, f"{host}/{run} softirq chains: {got} vs {want_c}"
        print(f"ok {host}/{run}: {len(e['tasks'])} tasks, {len(e['irqs'])} irqs, "
              f"{len(e['chains'])} irq chains, {len(e['softirq_chains'])} softirq chains")

# Each export's trace row names the file and the buffer it read; the buffers a
# multi-buffer trace left out are named.
for t in exp["traces"]:
    for host in t["hosts"]:
        got = rows(f"SELECT file, buffer, buffers_not_exported IS NOT NULL FROM {table('trace')} WHERE host = ? AND run_id = ?",
                   host, t["run"])
        multi = t["file"].endswith("instances.v7.dat")
        assert got == [(t["file"], t["buffer"], multi)], f"{host}/{t['run']}: {got}"
buffers = rows(f"SELECT buffer, run_id FROM {table('trace')} WHERE host = 'h2' AND file LIKE '%instances.v7.dat' ORDER BY buffer")
assert [b for b, _ in buffers] == ["jlab_big", "jlab_small", "top"] and len({r for _, r in buffers}) == 3, buffers
print(f"ok a multi-buffer trace: each buffer a run of its own {buffers}")

# Two days of the same file name on one host: both runs kept, ordered by their start.
got = [r for (r,) in rows(f"SELECT run_id FROM {table('trace')} WHERE host = 'h3' AND file = 'runs/h3.dat' ORDER BY start_wall_us")]
assert got == exp["days"], (got, exp["days"])
print(f"ok two days of runs/h3.dat: {got}")

# Three hosts as one dataset: the trace they share has the same rows on each.
shared = exp["traces"][0]["run"]
per_host = rows(f"""SELECT host, count(*), sum(dur_ns) FROM {table('sched_slice')}
                    WHERE run_id = ? GROUP BY host ORDER BY host""", shared)
assert [h for h, _, _ in per_host] == ["h1", "h2", "h3"], per_host
assert len({(n, d) for _, n, d in per_host}) == 1, per_host
hosts = rows(f"SELECT DISTINCT host FROM {table('trace')} WHERE host LIKE 'h%' ORDER BY host")
assert [h for (h,) in hosts] == ["h1", "h2", "h3"], hosts
print(f"ok three hosts, one dataset: {per_host}")

# Latency: summing the buckets of two runs gives the merged histogram's percentiles.
def sql_percentiles(runs, cpu):
    out_ = []
    for q in exp["quantiles"]:
        (v,) = rows(f"""
            WITH b AS (SELECT le_ns, sum(count) AS n FROM {table('latency_histogram')}
                       WHERE run_id IN ({','.join('?' * len(runs))}) AND cpu = ? GROUP BY le_ns),
                 c AS (SELECT le_ns, sum(n) OVER (ORDER BY le_ns) AS cum, sum(n) OVER () AS total FROM b),
                 r AS (SELECT min(min_ns) AS lo, max(max_ns) AS hi FROM {table('latency_run')}
                       WHERE run_id IN ({','.join('?' * len(runs))}) AND cpu = ?)
            SELECT least(greatest(min(le_ns), (SELECT lo FROM r)), (SELECT hi FROM r))
            FROM c WHERE cum >= greatest(ceil(? * total), 1)""", *runs, cpu, *runs, cpu, q)[0]
        out_.append(v)
    return out_

for l in exp["latency"]:
    a = sql_percentiles(["lat-a"], l["cpu"])
    assert a == l["a"], f"cpu {l['cpu']}: one run {a} vs {l['a']}"
    m = sql_percentiles(["lat-a", "lat-b"], l["cpu"])
    assert m == l["merged"], f"cpu {l['cpu']}: merged {m} vs {l['merged']}"
    print(f"ok latency cpu {l['cpu']}: merged percentiles {m}")

# Experiment verdicts.
(n,) = rows(f"SELECT count(*) FROM {table('experiment_verdict')}")[0]
assert n == exp["verdicts"], (n, exp["verdicts"])
print(f"ok experiment: {n} verdicts; tasks checked: {checked}")


def fleet_query(title):
    """The DuckDB query of docs/fleet.md that begins with the comment `-- TITLE`, reading
    the export under test instead of `fleet/`."""
    doc = open(os.path.join(os.path.dirname(__file__), "../../../docs/fleet.md")).read()
    m = re.search(r"^-- " + re.escape(title) + r".*?;$", doc, re.S | re.M)
    assert m, f"docs/fleet.md has no query '-- {title}'"
    return m.group(0).replace("'fleet/", f"'{out}/")


# Audits: fleet.md's findings by host, over four hosts (one with an older audit).
a = exp["audits"]
got = {host: (verdict, high, medium, low, list(ids or []))
       for host, verdict, high, medium, low, ids in rows(fleet_query("Audit findings by host"))}
want = {host: (x["verdict"], x["high"], x["medium"], x["low"], x["high_ids"]) for host, x in a["latest"].items()}
assert got == want, f"audit findings by host: duckdb {got} vs the audits {want}"
(runs,) = rows(f"SELECT count(DISTINCT run_id) FROM {table('audit_finding')} WHERE host = 'board1'")[0]
assert runs == 2, runs
for host, x in a["latest"].items():
    (n,) = rows(f"SELECT count(*) FROM {table('audit_finding')} WHERE host = ? AND run_id = ?", host, x["run"])[0]
    assert n == x["findings"], (host, n, x["findings"])
measured = rows(fleet_query("What measured audits saw"))
assert [h for h, *_ in measured] == ["vm"] * len(measured), measured
assert max(w for _, _, w, _ in measured) == a["max_ns"], (measured, a["max_ns"])
(n, noise) = rows(f"SELECT count(*), (SELECT sum(noise_ns) FROM {table('audit_noise')}) FROM {table('audit_latency')}")[0]
assert (n, noise) == (a["latency_rows"], a["noise_ns"]), (n, noise, a)
print(f"ok audits: {len(got)} hosts {sorted(got)}, {n} measured latency rows")

# The measured audit's idle phase names the trace it kept: its rows join that trace's.
joined = rows(f"""SELECT l.load, count(DISTINCT t.run_id), any_value(t.events)
                  FROM {table('audit_latency')} l JOIN {table('trace')} t
                  ON t.host = l.host AND t.run_id = l.trace_run_id GROUP BY l.load""")
assert [(load, n) for load, n, _ in joined] == [("idle", 1)], joined
(kept,) = rows(f"SELECT DISTINCT trace_run_id FROM {table('audit_latency')} WHERE load = 'idle'")[0]
assert kept == a["kept_trace_run"], (kept, a["kept_trace_run"])
print(f"ok the audit's idle phase joins its kept trace {kept}: {joined[0][2]} events")

# The latency p99.9 per host, by fleet.md's query (buckets of every run and CPU of a host).
got = {host: p for host, _kernel, p in rows(fleet_query("Worst p99.9 wake-up latency"))}
assert got == exp["p99_9_by_host"], f"p99.9 per host: duckdb {got} vs the merged histograms {exp['p99_9_by_host']}"
print(f"ok the latency p99.9 per host: {got}")

# A latency run joins the trace its host recorded around it (overlapping wall-clock
# windows), by fleet.md's query; the same trace under another host does not join.
j = exp["recorded_join"]
got = rows(fleet_query("The trace recorded while each latency run measured"))
assert got == [(j["host"], j["latency_run"], j["trace_run"], j["worst_ns"], j["p99_9_ns"])], (got, j)
print(f"ok latency run {j['latency_run']} joins trace {j['trace_run']} on host {j['host']}")
