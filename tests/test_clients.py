"""Real consumers of ``pyarrow.dataset`` objects over lancepy (issue 27): DuckDB's replacement
scans and stream scans, and Polars' ``scan_pyarrow_dataset``, give the same results over a
lancepy dataset as over pylance's, on the same files."""

from __future__ import annotations

import datetime
import decimal

import lancepy
import numpy as np
import pyarrow as pa
import pytest

duckdb = pytest.importorskip("duckdb", reason="duckdb is a test dependency (scripts/setup.sh)")
pl = pytest.importorskip("polars", reason="polars is a test dependency (scripts/setup.sh)")


def _rows(n: int, seed: int, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)

    def nulls(values, t):
        mask = rng.random(n) < 0.15
        return pa.array([None if m else v for v, m in zip(values, mask)], t)

    base = datetime.datetime(2021, 3, 1)
    return pa.table({
        "id": pa.array(np.arange(start, start + n), pa.int64()),
        "s": nulls(list(rng.choice(["red", "green", "blue", "o'k"], n)), pa.string()),
        "f": nulls([float(x) for x in rng.normal(size=n).round(3)], pa.float64()),
        "b": nulls([bool(x) for x in rng.random(n) < 0.4], pa.bool_()),
        "d": nulls([datetime.date(2021, 3, 1) + datetime.timedelta(days=int(x)) for x in rng.integers(0, 30, n)], pa.date32()),
        "ts": nulls([base + datetime.timedelta(minutes=int(x)) for x in rng.integers(0, 5000, n)], pa.timestamp("us")),
        "tz": nulls([base + datetime.timedelta(minutes=int(x)) for x in rng.integers(0, 5000, n)], pa.timestamp("us", "UTC")),
        "dec": nulls([decimal.Decimal(int(x)) / 100 for x in rng.integers(-1000, 1000, n)], pa.decimal128(9, 2)),
        "bin": nulls([bytes([int(x), 7]) for x in rng.integers(0, 6, n)], pa.binary()),
        "st": pa.StructArray.from_arrays([pa.array(rng.integers(0, 9, n)), pa.array(rng.choice(["p", "q"], n))], ["a", "c"]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8).astype(np.float32)), 8),
    })


QUERIES = [
    "SELECT s, count(*), sum(id), min(f), max(d) FROM ds WHERE id % 3 = 0 GROUP BY s ORDER BY s",
    "SELECT count(*), sum(id), min(f), max(f), count(DISTINCT s), max(ts), min(tz) FROM ds",
    "SELECT id, f FROM ds WHERE f > 0.5 ORDER BY id",
    "SELECT id FROM ds WHERE s = 'green' ORDER BY id",
    "SELECT id FROM ds WHERE s = 'o''k' OR s IS NULL ORDER BY id",
    "SELECT id FROM ds WHERE b ORDER BY id",
    "SELECT id FROM ds WHERE b = false AND d >= DATE '2021-03-15' ORDER BY id",
    "SELECT id FROM ds WHERE ts < TIMESTAMP '2021-03-02 10:00:00' ORDER BY id",
    "SELECT id FROM ds WHERE tz >= TIMESTAMPTZ '2021-03-03 00:00:00+00' ORDER BY id",
    "SELECT id FROM ds WHERE dec > 3.25 AND dec <= 7.5 ORDER BY id",
    "SELECT id FROM ds WHERE bin = '\\x02\\x07'::BLOB ORDER BY id",
    "SELECT id FROM ds WHERE id IN (1, 5, 77, 140, 399) ORDER BY id",
    "SELECT id FROM ds WHERE st.a = 4 AND st.c = 'q' ORDER BY id",
    "SELECT id FROM ds WHERE NOT (f < 0 OR s <> 'red') ORDER BY id",
    "SELECT id, st, vec FROM ds WHERE id BETWEEN 10 AND 30 ORDER BY id",
    "SELECT vec FROM ds ORDER BY id LIMIT 5",
    "SELECT st.c, avg(st.a) FROM ds GROUP BY ALL ORDER BY ALL",
]


def _duck(query: str, ds) -> list:
    # DuckDB's replacement scan finds the local variable named in the query.
    con = duckdb.connect()
    return con.sql(query).fetchall()


def _want(query: str, theirs) -> list:
    """The query over pylance's dataset; where pylance refuses DuckDB's pushed filter (nested
    references, pylance 14), over the pyarrow table pylance reads instead."""
    try:
        return _duck(query, theirs)
    except duckdb.InvalidInputException as e:
        assert "nested references in pushdown filters" in str(e)
        return _duck(query, theirs.to_table())


@pytest.fixture(scope="module")
def written(tmp_path_factory, pylance):
    """pylance writes several fragments, deletes some rows and appends: two versions."""
    uri = str(tmp_path_factory.mktemp("clients") / "t.lance")
    pylance.write_dataset(_rows(300, 1), uri, max_rows_per_file=70)
    pylance.write_dataset(_rows(120, 2, start=300), uri, mode="append", max_rows_per_file=50)
    pylance.dataset(uri).delete("id % 7 = 2 OR id = 301")
    return uri


@pytest.mark.parametrize("query", QUERIES)
def test_duckdb_same_results_as_over_pylance(written, pylance, query):
    ours, theirs = lancepy.dataset(written), pylance.dataset(written)
    assert len(ours.get_fragments()) > 4
    want = _want(query, theirs)
    assert want, query
    assert _duck(query, ours) == want


def test_duckdb_old_version(written, pylance):
    query = "SELECT s, count(*), sum(id) FROM ds GROUP BY s ORDER BY s"
    assert _duck(query, lancepy.dataset(written, version=1)) == _duck(query, pylance.dataset(written, version=1))
    assert _duck("SELECT count(*) FROM ds", lancepy.dataset(written, version=1)) == [(300,)]


def test_duckdb_over_scanners_and_readers(written, pylance):
    ours, theirs = lancepy.dataset(written), pylance.dataset(written)
    query = "SELECT s, count(*), min(f), max(f) FROM sc GROUP BY s ORDER BY s"

    def run(ds):
        sc = ds.scanner(columns=["s", "f"], filter="id > 100")  # DuckDB finds `sc` by name
        first = duckdb.connect().sql(query).fetchall()
        sc = ds.scanner(columns=["s", "f"], filter="id > 100").to_reader()  # noqa: F841
        second = duckdb.connect().sql(query).fetchall()
        return first, second

    (a1, a2), (b1, b2) = run(ours), run(theirs)
    assert a1 == b1 == a2 == b2
    arrow_tbl = ours.to_table(columns=["id"], filter="st.a = 3")  # noqa: F841
    assert duckdb.connect().sql("SELECT count(*) FROM arrow_tbl").fetchall() == [(theirs.count_rows("st.a = 3"),)]


def test_polars_scan_pyarrow_dataset(written, pylance):
    ours, theirs = lancepy.dataset(written), pylance.dataset(written)

    def run(ds):
        lazy = pl.scan_pyarrow_dataset(ds)
        return [
            lazy.filter((pl.col("id") % 3 == 0) & (pl.col("s") == "red")).select(["id", "f", "st"]).collect(),
            lazy.filter(pl.col("dec") > decimal.Decimal("1.5")).select(["id", "dec"]).collect(),
            lazy.filter(pl.col("tz") > datetime.datetime(2021, 3, 3, tzinfo=datetime.timezone.utc)).select("id").collect(),
            lazy.filter(pl.col("d") <= datetime.date(2021, 3, 9)).select(["id", "vec"]).head(20).collect(),
            lazy.group_by("s").agg(pl.len(), pl.col("id").sum(), pl.col("f").max()).sort("s").collect(),
        ]

    for mine, ref in zip(run(ours), run(theirs)):
        assert mine.sort(mine.columns[0], nulls_last=True).equals(ref.sort(ref.columns[0], nulls_last=True))
        assert mine.height > 0


@pytest.mark.s3
def test_duckdb_and_polars_on_s3(s3, pylance):
    opts = s3.options()
    uri = f"s3://{s3.create_bucket()}/t.lance"
    pylance.write_dataset(_rows(200, 3), uri, max_rows_per_file=60, storage_options=opts)
    ours, theirs = lancepy.dataset(uri, storage_options=opts), pylance.dataset(uri, storage_options=opts)
    for query in QUERIES[:4]:
        assert _duck(query, ours) == _want(query, theirs), query
    assert pl.scan_pyarrow_dataset(ours).filter(pl.col("id") < 50).select("s").collect().equals(
        pl.scan_pyarrow_dataset(theirs).filter(pl.col("id") < 50).select("s").collect())


def test_lancepy_written_dataset_over_duckdb(tmp_path, pylance):
    uri = str(tmp_path / "w.lance")
    ours = lancepy.write_dataset(_rows(250, 4), uri, max_rows_per_file=64)
    ours.delete("id % 5 = 1")
    theirs = pylance.dataset(uri)
    for query in QUERIES:
        assert _duck(query, lancepy.dataset(uri)) == _want(query, theirs), query


# --------------------------------------------------------------------------------------------
# Pushdown, measured by lancepy's read counters (bytes asked of storage), not by timing
# --------------------------------------------------------------------------------------------


def _read_bytes(fn) -> int:
    """Bytes lancepy read from storage (requests and mapped copies) while `fn` ran. The
    counters are the process's (lancepy.io_counts); nothing else reads during a test."""
    before = lancepy.io_counts()
    fn()
    after = lancepy.io_counts()
    return (after["bytes"] - before["bytes"]) + (after["mapped_bytes"] - before["mapped_bytes"])


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """4,000 rows with a 768-d float32 vector column (12 MB) and two small columns."""
    n = 4000
    rng = np.random.default_rng(768)
    t = pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "s": pa.array(rng.choice(["a", "b", "c", "d"], n)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 768).astype(np.float32)), 768),
    })
    uri = str(tmp_path_factory.mktemp("wide") / "w.lance")
    lancepy.write_dataset(t, uri, max_rows_per_file=1000)
    return uri


def test_duckdb_projection_and_filter_are_pushed_down(wide):
    ds = lancepy.dataset(wide)
    ds.count_rows()
    ds.head(1)  # manifests and file footers, read once
    full = _read_bytes(lambda: _duck("SELECT * FROM ds", ds))
    assert full >= 4000 * 768 * 4
    one_column = _read_bytes(lambda: _duck("SELECT sum(id) FROM ds", ds))
    assert 0 < one_column <= 0.05 * full, (one_column, full)
    # DuckDB hands the filter over (s = 'b'); lancepy reads s, then id of the rows that pass.
    filtered = _read_bytes(lambda: _duck("SELECT count(*), sum(id) FROM ds WHERE s = 'b'", ds))
    assert 0 < filtered <= 0.05 * full, (filtered, full)
    # A filter on vec's rows: only the passing rows' vectors are read (late materialization).
    few = _read_bytes(lambda: _duck("SELECT vec FROM ds WHERE id < 40", ds))
    assert 40 * 768 * 4 <= few <= 0.05 * full, (few, full)
    assert _duck("SELECT count(*), sum(id) FROM ds WHERE s = 'b'", ds) == [
        (ds.count_rows("s = 'b'"), sum(ds.to_table(columns=["id"], filter="s = 'b'").column("id").to_pylist()))]


def test_polars_projection_is_pushed_down(wide):
    ds = lancepy.dataset(wide)
    ds.head(1)
    full = _read_bytes(lambda: pl.scan_pyarrow_dataset(ds).collect())
    one = _read_bytes(lambda: pl.scan_pyarrow_dataset(ds).filter(pl.col("s") == "c").select("id").collect())
    assert 0 < one <= 0.05 * full, (one, full)
