"""Reads an export directory with every engine docs/parquet.md names, without settings,
and checks that they agree with DuckDB: pyarrow's read_table (hive partitions as
dictionaries) and dataset (as strings), and Apache Spark in local mode. Usage:
engines_check.py DIR (run by duckdb.rs after duckdb_check.py)."""
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
# The worst wake-up per host and CPU, in SQL on both.
if "wakeup" in tables:
    q = "SELECT host, run_id, cpu, max(latency_ns) AS worst FROM wakeup GROUP BY host, run_id, cpu"
    spark.read.parquet(os.path.join(out, "wakeup")).createOrReplaceTempView("wakeup")
    s = sorted(tuple(r) for r in spark.sql(q).collect())
    d = sorted(duck(q.replace("FROM wakeup", f"FROM {glob('wakeup')}")))
    assert s == d, (s[:5], d[:5])
print(f"ok spark: {len(tables)} tables, host and run_id strings, start_wall_us a timestamp")

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
