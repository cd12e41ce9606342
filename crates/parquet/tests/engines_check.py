"""Reads an export directory with every engine docs/parquet.md names, without settings,
and checks that they agree with DuckDB: pyarrow's read_table (hive partitions as
dictionaries) and dataset (as strings), and Apache Spark in local mode. Usage:
engines_check.py DIR (run by duckdb.rs after duckdb_check.py, which checks DuckDB's
answers against analyze and the results)."""
import os
import sys

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

out = sys.argv[1]
tables = sorted(t for t in os.listdir(out) if os.path.isdir(os.path.join(out, t)))
db = duckdb.connect()


def duck(sql):
    return db.execute(sql).fetchall()


def glob(t):
    return f"'{out}/{t}/**/*.parquet'"


# What DuckDB reads: rows per table, and per (host, run_id).
want = {}
for t in tables:
    want[t] = dict(((h, r), n) for h, r, n in duck(
        f"SELECT host, run_id, count(*) FROM {glob(t)} GROUP BY ALL"))
    kinds = [(c, ty) for c, ty, *_ in duck(f"DESCRIBE SELECT host, run_id, start_wall_us FROM {glob(t)}")]
    assert kinds == [("host", "VARCHAR"), ("run_id", "VARCHAR"),
                     ("start_wall_us", "TIMESTAMP WITH TIME ZONE")], (t, kinds)

# Each file against its table's schema file (docs/schema/parquet), as pyarrow reads it.
import glob as globs  # noqa: E402
import json  # noqa: E402

schemas = os.path.join(os.path.dirname(__file__), "../../../docs/schema/parquet")
for t in tables:
    spec = json.load(open(os.path.join(schemas, f"{t}.json")))
    want_fields = [(f["name"], f["type"], f["nullable"]) for f in spec["fields"]]
    for path in globs.glob(f"{out}/{t}/host=*/run_id=*/part.parquet"):
        got = [(f.name, str(f.type), f.nullable) for f in pq.read_schema(path)]
        assert got == want_fields, f"{path}: {got} vs {t}.json {want_fields}"
print(f"ok every file matches docs/schema/parquet/TABLE.json: {len(tables)} tables")

# pyarrow, both ways a user reaches for.
for t in tables:
    a = pq.read_table(os.path.join(out, t))
    b = ds.dataset(os.path.join(out, t), partitioning="hive").to_table()
    for how, tab in (("read_table", a), ("dataset", b)):
        assert tab.schema.field("start_wall_us").type == pa.timestamp("us", tz="UTC"), (t, how)
        got = {}
        for h, r in zip(tab.column("host").to_pylist(), tab.column("run_id").to_pylist()):
            got[(h, r)] = got.get((h, r), 0) + 1
        assert got == want[t], f"{t} with pyarrow {how}: {got} vs duckdb {want[t]}"
    assert pa.types.is_string(b.schema.field("host").type), (t, b.schema.field("host").type)
print(f"ok pyarrow read_table and dataset: {len(tables)} tables as DuckDB reads them")

# The questions of the test, in portable SQL (Spark and DuckDB) over views of
# the tables: the worst wake-up per host and CPU, the latency p99.9 per host (buckets
# of every run and CPU summed), and each latency run joined to the trace its host
# recorded around it (overlapping wall-clock windows).
QUESTIONS = {
    "worst wake-up per host and CPU":
        "SELECT host, cpu, max(latency_ns) FROM wakeup GROUP BY host, cpu",
    "latency p99.9 per host": """
        WITH b AS (SELECT host, le_ns, sum(count) AS n FROM latency_histogram GROUP BY host, le_ns),
             c AS (SELECT host, le_ns, sum(n) OVER (PARTITION BY host ORDER BY le_ns) AS cum,
                          sum(n) OVER (PARTITION BY host) AS total FROM b)
        SELECT host, min(le_ns) FROM c WHERE cum >= ceil(0.999 * total) GROUP BY host""",
    "latency run to trace": """
        SELECT l.host, l.run_id, t.run_id, max(l.max_ns) FROM latency_run l JOIN trace t
          ON t.host = l.host AND l.start_wall_ns < t.last_ts_ns + t.wall_offset_ns
         AND t.first_ts_ns + t.wall_offset_ns < l.start_wall_ns + l.dur_ns
        GROUP BY l.host, l.run_id, t.run_id""",
}
for t in ("wakeup", "latency_histogram", "latency_run", "trace"):
    db.execute(f"CREATE VIEW {t} AS SELECT * FROM {glob(t)}")
answers = {q: sorted(duck(sql)) for q, sql in QUESTIONS.items()}
assert all(answers.values()), answers
assert len(answers["latency run to trace"]) == 1, answers["latency run to trace"]

# pyarrow.dataset, the same questions in pyarrow's compute.
import pyarrow.compute as pc  # noqa: E402


def dataset(t):
    return ds.dataset(os.path.join(out, t), partitioning="hive").to_table()


w = dataset("wakeup").group_by(["host", "cpu"]).aggregate([("latency_ns", "max")])
got = sorted(zip(w["host"].to_pylist(), w["cpu"].to_pylist(), w["latency_ns_max"].to_pylist()))
assert got == [tuple(r) for r in answers["worst wake-up per host and CPU"]], got[:5]
h = dataset("latency_histogram").group_by(["host", "le_ns"]).aggregate([("count", "sum")])
p999 = {}
for host in set(h["host"].to_pylist()):
    mine = h.filter(pc.equal(h["host"], host)).sort_by("le_ns")
    counts, les = mine["count_sum"].to_pylist(), mine["le_ns"].to_pylist()
    total, cum = sum(counts), 0
    for le, n in zip(les, counts):
        cum += n
        if cum >= -(-999 * total // 1000):
            p999[host] = le
            break
assert sorted(p999.items()) == [tuple(r) for r in answers["latency p99.9 per host"]], p999
lat, tr = dataset("latency_run"), dataset("trace")
joined = set()
for l in lat.to_pylist():
    for t in tr.to_pylist():
        if t["host"] == l["host"] and t["wall_offset_ns"] is not None and \
                l["start_wall_ns"] < t["last_ts_ns"] + t["wall_offset_ns"] and \
                t["first_ts_ns"] + t["wall_offset_ns"] < l["start_wall_ns"] + l["dur_ns"]:
            joined.add((l["host"], l["run_id"], t["run_id"]))
assert sorted(joined) == [tuple(r[:3]) for r in answers["latency run to trace"]], joined
print(f"ok pyarrow.dataset: {len(QUESTIONS)} questions answered as DuckDB answers them")

# Spark, local mode, default settings.
from pyspark.sql import SparkSession  # noqa: E402

spark = (SparkSession.builder.master("local[2]").appName("jitterlab-engines")
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
for t in tables:
    df = spark.read.parquet(os.path.join(out, t))
    types = dict(df.dtypes)
    assert (types["host"], types["run_id"], types["start_wall_us"]) == ("string", "string", "timestamp"), (t, types)
    got = {(row["host"], row["run_id"]): row["count"] for row in df.groupBy("host", "run_id").count().collect()}
    assert got == want[t], f"{t} with Spark: {got} vs duckdb {want[t]}"
print(f"ok spark: {len(tables)} tables, host and run_id strings, start_wall_us a timestamp")
for t in ("wakeup", "latency_histogram", "latency_run", "trace"):
    spark.read.parquet(os.path.join(out, t)).createOrReplaceTempView(t)
for q, sql in QUESTIONS.items():
    got = sorted(tuple(r) for r in spark.sql(sql).collect())
    assert got == [tuple(r) for r in answers[q]], (q, got[:5], answers[q][:5])
print(f"ok spark: {len(QUESTIONS)} questions answered as DuckDB answers them")

# docs/fleet.md as written: every DuckDB query, then its Python blocks (Spark, pyarrow),
# on this dataset instead of `fleet/`.
import re  # noqa: E402

doc = open(os.path.join(os.path.dirname(__file__), "../../../docs/fleet.md")).read()
blocks = re.findall(r"```(\w+)\n(.*?)```", doc, re.S)
sql = [b for lang, b in blocks if lang == "sql"]
assert sql, "docs/fleet.md has no sql block"
ran = 0
for block in sql:
    for stmt in block.split(";"):
        body = "\n".join(l for l in stmt.splitlines() if not l.strip().startswith("--")).strip()
        if body:
            db.execute(body.replace("'fleet/", f"'{out}/")).fetchall()
            ran += 1
py = [b for lang, b in blocks if lang == "python"]
assert len(py) >= 2, "docs/fleet.md has a Spark and a pyarrow block"
for block in py:
    exec(block.replace('"fleet/', f'"{out}/'), {})
spark.stop()
print(f"ok docs/fleet.md: {ran} DuckDB queries and {len(py)} Python blocks ran as written")
