"""Regression tests of wrong answers in writes, per-version state, paths and ignored
arguments (each checked against pylance 14)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError, SchemaMismatchError
from lancepy.file import LanceFileReader, LanceFileWriter


def _listing(path) -> list:
    if not os.path.exists(path):
        return []
    return sorted(os.path.relpath(os.path.join(r, n), path) for r, ds, fs in os.walk(path) for n in ds + fs)


# -- 1. declared schemas: cast, never reinterpret --------------------------------------------


def test_write_casts_iterator_batches_to_declared_schema(tmp_path):
    schema = pa.schema([("a", pa.int64())])
    batches = [pa.record_batch({"a": pa.array([20, 30], pa.int32())})]
    ds = lancepy.write_dataset(iter(batches), tmp_path / "i.lance", schema=schema)
    assert ds.to_table().column("a").to_pylist() == [20, 30]  # was [128849018900, 0]
    assert ds.schema.field("a").type == pa.int64()
    ref = lance.write_dataset(iter(batches), str(tmp_path / "ref.lance"), schema=schema)
    assert ds.to_table().equals(ref.to_table())

    as_float = pa.schema([("a", pa.float64())])
    gen = (pa.record_batch({"a": pa.array([20, 30], pa.int64())}) for _ in range(2))
    ds = lancepy.write_dataset(gen, tmp_path / "f.lance", schema=as_float)
    assert ds.to_table().column("a").to_pylist() == [20.0, 30.0, 20.0, 30.0]  # was 5e-324...

    as_string = pa.schema([("a", pa.string())])
    ds = lancepy.write_dataset([pa.record_batch({"a": pa.array([5, None, 7])})], tmp_path / "s.lance", schema=as_string)
    assert ds.to_table().column("a").to_pylist() == ["5", None, "7"]  # was an internal error


def test_lossy_cast_refused_naming_column_and_types(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("a", pa.int64())])

    def batches():
        yield pa.record_batch({"id": pa.array([1, 2]), "a": pa.array([1.0, 2.0])})
        yield pa.record_batch({"id": pa.array([3, 4]), "a": pa.array([1.5, 2.5])})

    uri = tmp_path / "l.lance"
    with pytest.raises(SchemaMismatchError) as ei:
        lancepy.write_dataset(batches(), uri, schema=schema, max_rows_per_file=2)
    assert "'a'" in str(ei.value) and "double" in str(ei.value) and "int64" in str(ei.value)
    assert not uri.exists(), _listing(uri)  # not even an empty data/ directory
    with pytest.raises(Exception):  # pylance refuses too
        lance.write_dataset(batches(), str(tmp_path / "ref.lance"), schema=schema)


class _Progress:
    def __init__(self):
        self.completed = []

    def begin(self, fragment):
        pass

    def complete(self, fragment):
        self.completed.append(fragment)


@pytest.mark.parametrize("how", ["write_dataset", "write_fragments"])
def test_stream_failing_after_whole_files_leaves_no_files(tmp_path, how):
    # several files are complete (and reported to `progress`) before the bad batch arrives
    schema = pa.schema([("a", pa.int64())])

    def batches():
        for _ in range(3):
            yield pa.record_batch({"a": pa.array(np.arange(100, dtype=np.int32))})
        yield pa.record_batch({"a": pa.array([1.5])})

    uri = tmp_path / "p.lance"
    lancepy.write_dataset(pa.table({"a": [1]}), uri)
    before = _listing(uri)
    for progress in (_Progress(), None):
        with pytest.raises(SchemaMismatchError):
            if how == "write_dataset":
                lancepy.write_dataset(batches(), uri, schema=schema, mode="append", max_rows_per_file=100, progress=progress)
            else:
                lancepy.fragment.write_fragments(batches(), uri, schema=schema, max_rows_per_file=100, progress=progress)
        if progress is not None:
            assert len(progress.completed) == 3
        assert _listing(uri) == before  # the three complete files were left behind with progress=
    assert lancepy.dataset(uri).version == 1


def test_nulls_in_a_declared_non_nullable_column_are_refused(tmp_path):
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False)])
    with pytest.raises(SchemaMismatchError, match="non-nullable"):
        lancepy.write_dataset(iter([pa.record_batch({"a": pa.array([1, None])})]), tmp_path / "n.lance", schema=schema)
    assert not (tmp_path / "n.lance").exists()


def _offsets_past_the_end() -> pa.RecordBatch:
    """A string column whose second offset points 1000 bytes into a 1-byte data buffer (the
    cheap validation pyarrow runs on construction does not look at inner offsets)."""
    offsets = pa.array([0, 1000, 1], pa.int32()).buffers()[1]
    arr = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"x")])
    return pa.RecordBatch.from_arrays([arr], names=["s"])


@pytest.mark.parametrize("kind", ["batch", "iterator", "reader", "table"])
def test_malformed_batch_is_refused_not_read(tmp_path, kind):
    b = _offsets_past_the_end()
    data = {
        "batch": b,
        "iterator": iter([b]),
        "reader": pa.RecordBatchReader.from_batches(b.schema, [b]),
        "table": pa.Table.from_batches([b]),
    }[kind]
    uri = tmp_path / "m.lance"
    with pytest.raises(InvalidArgumentError, match="malformed"):
        lancepy.write_dataset(data, uri, schema=b.schema if kind == "iterator" else None)
    assert not uri.exists()
    w = LanceFileWriter(str(tmp_path / "m.file"), b.schema)
    with pytest.raises(InvalidArgumentError, match="malformed"):
        w.write_batch(b)
    w.write_batch(pa.record_batch({"s": ["ok"]}))
    w.close()
    assert LanceFileReader(str(tmp_path / "m.file")).read_all().to_table().column("s").to_pylist() == ["ok"]


# -- 2. per-version state ---------------------------------------------------------------------


def _vector_table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 8).astype(np.float32)), 8)
    return pa.table({"id": pa.array(np.arange(n), pa.int64()), "vec": vec})


def test_delete_then_search_same_object(tmp_path):
    uri = str(tmp_path / "v.lance")
    q = np.zeros(8, np.float32)
    near = {"column": "vec", "q": q, "k": 10}
    ds = lancepy.write_dataset(_vector_table(300), uri, max_rows_per_file=100)
    ds.create_index("vec", "IVF_FLAT", num_partitions=2)
    assert ds.to_table(nearest=near).num_rows == 10  # caches this version's deleted rows (none)
    ds.delete("id < 150")
    got = ds.to_table(nearest=near)  # was ArrowInvalid: "Added column's length must match ..."
    want = lancepy.dataset(uri).to_table(nearest=near)
    assert got.num_rows == 10 and min(got.column("id").to_pylist()) >= 150
    assert got.equals(want)
    ref = lance.dataset(uri).to_table(nearest=near)  # pylance reads lancepy's index and deletions
    assert got.column("id").to_pylist() == ref.column("id").to_pylist()
    # and again after more moves of the same object
    ds.insert(_vector_table(20, seed=1).set_column(0, "id", pa.array(np.arange(1000, 1020), pa.int64())))
    ds.delete("id % 2 = 0")
    assert ds.to_table(nearest=near).equals(lancepy.dataset(uri).to_table(nearest=near))
    ds.optimize.compact_files()
    assert ds.to_table(nearest=near).equals(lancepy.dataset(uri).to_table(nearest=near))


def test_stable_row_ids_take_rows_after_the_object_moved(tmp_path):
    uri = str(tmp_path / "s.lance")
    ds = lancepy.write_dataset(pa.table({"id": pa.array(np.arange(20), pa.int64())}), uri,
                               max_rows_per_file=5, enable_stable_row_ids=True)
    ids = ds.to_table(with_row_id=True).column("_rowid").to_pylist()
    assert ds.take_rows(ids[:3]).column("id").to_pylist() == [0, 1, 2]  # builds the id -> address map
    ds.delete("id < 10")
    ds.optimize.compact_files()  # the same row ids now live at other addresses
    row_ids = ds.to_table(with_row_id=True).column("_rowid").to_pylist()
    assert ds.take_rows(row_ids[:3]).column("id").to_pylist() == [10, 11, 12]
    assert ds.take_rows(row_ids[:3]).equals(lancepy.dataset(uri).take_rows(row_ids[:3]))


def test_fragments_and_scanners_keep_their_version(tmp_path):
    uri = str(tmp_path / "p.lance")
    ds = lancepy.write_dataset(pa.table({"id": list(range(10))}), uri, max_rows_per_file=5)
    frag = ds.get_fragments()[0]
    scanner = ds.scanner(filter="id > 2")
    ds.delete("id < 3")
    ds.delete("id >= 0")
    # as pylance's: a fragment or scanner reads the version it was made from
    assert frag.count_rows() == 5 and frag.to_table().column("id").to_pylist() == [0, 1, 2, 3, 4]
    assert scanner.to_table().column("id").to_pylist() == list(range(3, 10))
    assert ds.count_rows() == 0 and ds.get_fragments() == []


def test_fragment_take_with_stable_row_ids_after_compaction(tmp_path):
    # LanceFragment.take passed row addresses where row ids were expected: [] after compaction
    for mod, uri in ((lancepy, str(tmp_path / "a.lance")), (lance, str(tmp_path / "b.lance"))):
        ds = mod.write_dataset(pa.table({"id": list(range(10))}), uri, enable_stable_row_ids=True)
        ds.delete("id < 3")
        ds.insert(pa.table({"id": [100, 101]}))
        ds.optimize.compact_files()
        ds.delete("id = 4")
    ours = lancepy.dataset(str(tmp_path / "a.lance")).get_fragments()[0].take([0, 1, 5])
    theirs = lance.dataset(str(tmp_path / "b.lance")).get_fragments()[0].take([0, 1, 5])
    assert ours.to_pydict() == theirs.to_pydict() == {"id": [3, 5, 9]}


# -- 3. paths ---------------------------------------------------------------------------------


def test_tilde_expanded(tmp_path, monkeypatch):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    t = pa.table({"a": [1, 2, 3]})
    ds = lancepy.write_dataset(t, "~/x.lance")
    assert (home / "x.lance" / "_versions").is_dir()
    assert not (cwd / "~").exists()  # was ./~/x.lance
    assert lancepy.dataset("~/x.lance").to_table().equals(t)
    lancepy.write_dataset(t, "~/x.lance", mode="append")
    assert lancepy.dataset("~/x.lance").count_rows() == 6 == ds.latest_version * 3
    # pylance finds the same dataset through the same spelling
    assert lance.dataset("~/x.lance").count_rows() == 6
    frags = lancepy.fragment.write_fragments(t, "~/x.lance")
    assert frags and not (cwd / "~").exists()
    with LanceFileWriter("~/f.lance") as w:
        w.write_batch(t)
    assert (home / "f.lance").is_file()
    assert LanceFileReader("~/f.lance").read_all().to_table().equals(t)
    import lancepy.torch as lt

    assert len(lt.LanceDataset("~/x.lance")) == 6
    assert not (cwd / "~").exists()


def test_memory_uri_without_name_is_not_on_disk(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    t = pa.table({"a": [1, 2]})
    a = lancepy.write_dataset(t, "memory://")
    b = lancepy.write_dataset(pa.table({"a": [3]}), "memory://")  # a fresh store each call, as pylance
    assert a.to_table().equals(t) and b.to_table().column("a").to_pylist() == [3]
    assert a.version == b.version == 1
    a.delete("a = 1")
    assert a.to_table().column("a").to_pylist() == [2] and b.count_rows() == 1
    assert os.listdir(tmp_path) == []  # was ./memory:/...
    with pytest.raises(lancepy.exceptions.DatasetNotFoundError):
        lancepy.dataset("memory://")  # nothing is ever found there (pylance: not found either)
    with pytest.raises(Exception):
        lance.dataset("memory://")


def test_memory_uri_second_create_starts_a_new_dataset():
    import uuid

    uri = f"memory://second-create-{uuid.uuid4().hex}"
    t = pa.table({"a": [1, 2]})
    lancepy.write_dataset(t, uri).delete("a = 2")
    again = lancepy.write_dataset(pa.table({"a": [7]}), uri)  # was: "already exists"
    ref = lance.write_dataset(pa.table({"a": [7]}), uri)  # pylance: a new, empty store each call
    assert (again.version, again.to_table().to_pydict()) == (ref.version, ref.to_table().to_pydict()) == (1, {"a": [7]})
    assert lancepy.dataset(uri).to_table().to_pydict() == {"a": [7]}
    assert lancepy.dataset(uri).versions()[0]["version"] == 1 and len(lancepy.dataset(uri).versions()) == 1
    # append and overwrite keep lancepy's process-wide memory store: they see the dataset
    assert lancepy.write_dataset(t, uri, mode="append").count_rows() == 3
    assert lancepy.write_dataset(t, uri, mode="overwrite").to_table().equals(t)


# -- 4. arguments accepted and ignored --------------------------------------------------------


def _udf_calls(mod, uri, **kwargs):
    ds = mod.write_dataset(pa.table({"id": list(range(10)), "x": [float(i) for i in range(10)]}), uri, max_rows_per_file=6)
    ds.delete("id in (2, 3)")
    seen = []

    def udf(batch):
        seen.append(batch.column("id").to_pylist())
        return pa.record_batch({"y": pa.compute.multiply(batch.column("id"), 2)})

    ds.add_columns(udf, read_columns=["id"], **kwargs)
    return seen, ds.to_table()


@pytest.mark.parametrize("batch_size", [1, 2, 4, None])
def test_add_columns_batch_size_honoured(tmp_path, batch_size):
    ours, got = _udf_calls(lancepy, str(tmp_path / "a.lance"), batch_size=batch_size)
    theirs, want = _udf_calls(lance, str(tmp_path / "b.lance"), batch_size=batch_size)
    # pylance first calls the function once on one row, to learn its output schema
    assert theirs[0] == [0]
    assert ours == theirs[1:]  # runs of batch_size physical rows, deleted rows left out
    if batch_size is not None:
        assert all(len(c) <= batch_size for c in ours)  # was one call per fragment
    assert got.equals(want)
    assert got.column("y").to_pylist() == [2 * i for i in got.column("id").to_pylist()]


def test_unclosed_file_writer_leaves_no_file(tmp_path):
    schema = pa.schema([("a", pa.int64())])
    t = pa.table({"a": [1, 2, 3]})

    path = tmp_path / "dropped.lance"
    w = LanceFileWriter(str(path), schema)
    w.write_batch(t)
    del w
    gc.collect()
    assert not path.exists()  # pylance leaves none either
    ref = tmp_path / "ref.lance"
    rw = lance.file.LanceFileWriter(str(ref), schema)
    rw.write_batch(t)
    del rw
    gc.collect()
    assert not ref.exists()

    path = tmp_path / "raised.lance"
    with pytest.raises(RuntimeError):
        with LanceFileWriter(str(path), schema) as w:
            w.write_batch(t)
            raise RuntimeError("the producer failed")
    assert not path.exists()

    path = tmp_path / "aborted.lance"
    w = LanceFileWriter(str(path), schema)
    w.write_batch(t)
    w.abort()
    assert not path.exists()
    w.abort()  # twice is fine

    # a closed writer keeps its file, whatever happens to the object afterwards
    path = tmp_path / "closed.lance"
    with LanceFileWriter(str(path), schema) as w:
        w.write_batch(t)
    assert w.schema == schema and w.num_rows == 3
    del w
    gc.collect()
    assert LanceFileReader(str(path)).read_all().to_table().equals(t)


def test_unclosed_file_writer_leaves_no_file_at_exit(tmp_path):
    # a writer still referenced when the interpreter exits is discarded too
    path = tmp_path / "at-exit.lance"
    script = textwrap.dedent(f"""
        import pyarrow as pa
        from lancepy.file import LanceFileWriter
        w = LanceFileWriter({str(path)!r}, pa.schema([("a", pa.int64())]))
        w.write_batch(pa.table({{"a": [1, 2]}}))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=120)
    assert not path.exists()


def test_fast_search_searches_only_indexed_rows(tmp_path):
    rng = np.random.default_rng(0)

    def rows(a, b):
        v = rng.standard_normal((b - a) * 4).astype(np.float32)
        return pa.table({"id": pa.array(np.arange(a, b), pa.int64()),
                         "vec": pa.FixedSizeListArray.from_arrays(pa.array(v), 4)})

    first, second = rows(0, 100), rows(100, 200)
    q = np.zeros(4, np.float32)
    near = {"column": "vec", "q": q, "k": 5}
    ours, theirs = str(tmp_path / "a.lance"), str(tmp_path / "b.lance")
    for mod, uri in ((lancepy, ours), (lance, theirs)):
        ds = mod.write_dataset(first, uri)
        assert ds.to_table(nearest=near, fast_search=True).num_rows == 0  # no index: nothing indexed
        ds.create_index("vec", "IVF_FLAT", num_partitions=2)
        mod.write_dataset(second, uri, mode="append")  # not covered by the index
    ds = lancepy.dataset(ours)
    fast = ds.to_table(nearest=near, fast_search=True)  # was: every row searched
    assert fast.num_rows == 5 and max(fast.column("id").to_pylist()) < 100
    assert fast.column("id").to_pylist() == lance.dataset(theirs).to_table(nearest=near, fast_search=True).column("id").to_pylist()
    assert ds.scanner(nearest=near, fast_search=True).to_table().equals(fast)
    slow = ds.to_table(nearest=near)
    assert slow.column("id").to_pylist() == lance.dataset(theirs).to_table(nearest=near).column("id").to_pylist()
    assert max(slow.column("id").to_pylist()) >= 100  # (the query's nearest rows include new ones)


def test_scanner_count_rows_honours_include_deleted_rows(tmp_path):
    counts = []
    for mod, uri in ((lancepy, str(tmp_path / "a.lance")), (lance, str(tmp_path / "b.lance"))):
        ds = mod.write_dataset(pa.table({"id": list(range(10))}), uri)
        ds.delete("id < 3")
        sc = ds.scanner(include_deleted_rows=True, with_row_id=True)
        counts.append((sc.count_rows(), sc.to_table().num_rows))
    assert counts[0] == counts[1] == (10, 10)  # was 7 from count_rows


def test_commit_timeout_bounds_retries(tmp_path, monkeypatch):
    import datetime

    from lancepy._table import commit as commit_module

    uri = str(tmp_path / "c.lance")
    lancepy.write_dataset(pa.table({"id": [1]}), uri)
    frags = lancepy.fragment.write_fragments(pa.table({"id": [2]}), uri)
    lancepy.write_dataset(pa.table({"id": [3]}), uri, mode="append")  # version 2 exists
    real = commit_module.latest_version
    # every attempt sees version 1 as the latest, so version 2 is always taken: a lost race
    monkeypatch.setattr(commit_module, "latest_version", lambda store: (1, real(store)[1]))
    with pytest.raises(lancepy.exceptions.CommitConflictError, match="the commit timeout"):
        lancepy.LanceDataset.commit(uri, lancepy.LanceOperation.Append(frags), read_version=1, max_retries=40,
                                    commit_timeout=datetime.timedelta(seconds=0.2))
    # (pylance's max_retries: retries after the first try, so 3 tries)
    with pytest.raises(lancepy.exceptions.CommitConflictError, match="after 2 retries \\(3 attempts\\)"):
        lancepy.LanceDataset.commit(uri, lancepy.LanceOperation.Append(frags), read_version=1, max_retries=2,
                                    commit_timeout=None)
    monkeypatch.setattr(commit_module, "latest_version", real)
    ds = lancepy.LanceDataset.commit(uri, lancepy.LanceOperation.Append(frags), read_version=1,
                                     commit_timeout=datetime.timedelta(seconds=5))
    assert sorted(ds.to_table().column("id").to_pylist()) == [1, 2, 3]


def test_binary_metadata_is_refused_before_anything_is_written(tmp_path):
    """Lance keeps metadata as text: a non-UTF-8 key or value (schema or nested field) is an
    InvalidArgumentError (pylance: ValueError), and base64 text is written and read back."""
    import base64
    import os
    import pickle

    import lance

    import lancepy
    from lancepy.exceptions import InvalidArgumentError

    blob = pickle.dumps("foo")
    bad = pa.table({"a": range(3)}).replace_schema_metadata({"foo": blob})
    with pytest.raises(ValueError):
        lance.write_dataset(bad, str(tmp_path / "theirs"))
    with pytest.raises(InvalidArgumentError, match="not valid UTF-8"):
        lancepy.write_dataset(bad, str(tmp_path / "ours"))
    assert not os.path.exists(tmp_path / "ours" / "_versions")
    nested = pa.schema([pa.field("s", pa.struct([pa.field("x", pa.int64(), metadata={b"k": b"\xff"})]))])
    with pytest.raises(InvalidArgumentError, match="field 's.x'"):
        lancepy.write_dataset(pa.table({"s": [{"x": 1}]}, schema=nested), str(tmp_path / "nested"))
    good = bad.replace_schema_metadata({"foo": base64.b64encode(blob)})
    lancepy.write_dataset(good, str(tmp_path / "ok"))
    assert lance.dataset(str(tmp_path / "ok")).schema.metadata[b"foo"] == base64.b64encode(blob)


def test_datasets_with_empty_struct_columns_both_ways(tmp_path):
    """pylance's test_empty_structs, both directions: scans and takes of a dataset with a
    struct column without children."""
    import lance

    schema = pa.schema([pa.field("id", pa.int32()), pa.field("empties", pa.struct([]))])
    table = pa.table({"id": list(range(50)), "empties": [{}] * 50}, schema=schema)
    for writer, reader in ((lancepy, lance), (lance, lancepy), (lancepy, lancepy)):
        uri = str(tmp_path / f"{writer.__name__}-{reader.__name__}")
        writer.write_dataset(table, uri, max_rows_per_file=20)
        ds = reader.dataset(uri)
        assert ds.to_table() == table
        assert ds.take([42, 0, 21]) == table.take([42, 0, 21])
        assert ds.to_table(filter="id > 45") == table.slice(46)
