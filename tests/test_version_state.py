"""Per-version state: one dataset object moved through random short sequences of mutations
reads exactly what a freshly opened dataset at the same version reads.

Each sequence (seeded) writes a small dataset (stable row ids or not, several fragments,
an IVF_FLAT index in some), then applies 3 to 5 operations to ONE ``LanceDataset`` object:
delete, update, merge_insert, insert, add / alter / drop columns, compaction, creating an
index, restoring an older version, and a write by another object followed by
``checkout_latest``. After every operation every read API of the object (which has read,
and so cached, everything the previous version offered) is compared with the same call on
``lancepy.dataset(uri, version=...)``: filtered and unfiltered scans, ``scanner()``,
``count_rows``, ``take``, ``take_rows`` with row ids from ``_rowid``, fragments (ids, rows,
deletions, their own scans), nearest-neighbour search when an IVF index exists, and
``lancepy.torch.LanceDataset`` (length and ``__getitems__``). Fragments and scanners made
before an operation must still read the version they were made from (as pylance's do).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancepy

import lancepy.torch as lancepy_torch  # noqa: E402  torch is a test dependency

DIM = 4
SEQUENCES = 200


def _vectors(rng: np.random.Generator, n: int) -> pa.Array:
    return pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * DIM).astype(np.float32)), DIM)


def _rows(schema: pa.Schema, ids: np.ndarray, rng: np.random.Generator) -> pa.Table:
    """Rows with the given ids for the dataset's current schema."""
    cols = {}
    for f in schema:
        if f.name == "id":
            cols[f.name] = pa.array(ids, pa.int64())
        elif f.name == "vec":
            cols[f.name] = _vectors(rng, len(ids))
        elif pa.types.is_floating(f.type):
            cols[f.name] = pa.array(np.round(rng.random(len(ids)) * 100, 2), f.type)
        else:
            cols[f.name] = pa.array(rng.integers(0, 1000, len(ids)), pa.int64()).cast(f.type)
    return pa.table(cols, schema=schema)


class Sequence:
    def __init__(self, seed: int, tmp_path) -> None:
        self.rng = np.random.default_rng(seed)
        self.uri = str(tmp_path / f"seq{seed}.lance")
        self.next_id = 0
        self.added = 0
        n = int(self.rng.integers(12, 40))
        t = pa.table({"id": pa.array(np.arange(n), pa.int64()),
                      "x": pa.array(np.round(self.rng.random(n) * 100, 2)),
                      "vec": _vectors(self.rng, n)})
        self.next_id = n
        self.ds = lancepy.write_dataset(t, self.uri, max_rows_per_file=int(self.rng.integers(5, 20)),
                                        enable_stable_row_ids=bool(self.rng.integers(0, 2)))
        self.indexed = False
        if self.rng.random() < 0.5:
            self.op_create_index()
        self.q = self.rng.standard_normal(DIM).astype(np.float32)

    # -- operations ---------------------------------------------------------------------

    def _new_ids(self, k: int) -> np.ndarray:
        ids = np.arange(self.next_id, self.next_id + k)
        self.next_id += k
        return ids

    def op_delete(self) -> None:
        m = int(self.rng.integers(2, 6))
        self.ds.delete(f"id % {m} = {int(self.rng.integers(0, m))}")

    def op_update(self) -> None:
        self.ds.update({"x": "x + 1000"}, where=f"id % 3 = {int(self.rng.integers(0, 3))}")

    def op_merge_insert(self) -> None:
        live = self.ds.to_table(columns=["id"]).column("id").to_numpy()
        old = self.rng.choice(live, size=min(len(live), int(self.rng.integers(1, 5))), replace=False) if len(live) else []
        ids = np.concatenate([np.asarray(old, np.int64), self._new_ids(int(self.rng.integers(1, 5)))])
        source = _rows(self.ds.schema, ids, self.rng)
        self.ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(source)

    def op_insert(self) -> None:
        self.ds.insert(_rows(self.ds.schema, self._new_ids(int(self.rng.integers(1, 12))), self.rng))

    def op_add_columns(self) -> None:
        self.added += 1
        self.ds.add_columns({f"c{self.added}": "id * 2"})

    def op_alter_columns(self) -> None:
        extra = [n for n in self.ds.schema.names if n not in ("id", "x", "vec")]
        if not extra:
            return self.op_add_columns()
        name = str(self.rng.choice(extra))
        self.ds.alter_columns({"path": name, "name": f"{name}_r"})

    def op_drop_columns(self) -> None:
        extra = [n for n in self.ds.schema.names if n not in ("id", "x", "vec")]
        if not extra:
            self.op_add_columns()
            check(self.ds, self)
            extra = [n for n in self.ds.schema.names if n not in ("id", "x", "vec")]
        self.ds.drop_columns([str(self.rng.choice(extra))])

    def op_compact(self) -> None:
        self.ds.optimize.compact_files(target_rows_per_fragment=int(self.rng.integers(10, 60)))

    def op_create_index(self) -> None:
        if "vec" in self.ds.schema.names and self.ds.count_rows() >= 4:
            self.ds.create_index("vec", "IVF_FLAT", num_partitions=2, replace=True)
            self.indexed = True

    def op_create_scalar_index(self) -> None:
        # (BITMAP is refused on datasets with stable row ids, where pylance keys it by row id)
        kinds = ["BTREE"] if self.ds.has_stable_row_ids else ["BTREE", "BITMAP"]
        self.ds.create_scalar_index("id", str(self.rng.choice(kinds)), replace=True)

    def op_restore(self) -> None:
        v = int(self.rng.integers(1, self.ds.version + 1))
        old = self.ds.checkout_version(v)
        check(old, self)  # warm the old version's caches, then move that object
        old.restore()
        check(old, self)
        self.ds.checkout_latest()  # the sequence's object moves to the restored version
        self.indexed = self.ds.has_index

    def op_other_writer(self) -> None:
        other = lancepy.dataset(self.uri)
        if self.rng.random() < 0.5:
            other.delete(f"id % 4 = {int(self.rng.integers(0, 4))}")
        else:
            other.insert(_rows(other.schema, self._new_ids(3), self.rng))
        self.ds.checkout_latest()

    OPS = ["op_delete", "op_update", "op_merge_insert", "op_insert", "op_add_columns", "op_alter_columns",
           "op_drop_columns", "op_compact", "op_create_index", "op_create_scalar_index", "op_restore", "op_other_writer"]


def _same(a: pa.Table, b: pa.Table, what: str) -> None:
    assert a.schema == b.schema, what
    assert a.equals(b), f"{what}: {a.to_pydict()} != {b.to_pydict()}"


def check(ds: lancepy.LanceDataset, seq: Sequence) -> None:
    """Every read of `ds` equals the same read of a fresh open of its version."""
    fresh = lancepy.dataset(seq.uri, version=ds.version)
    assert ds.schema == fresh.schema
    n = fresh.count_rows()
    assert ds.count_rows() == n == len(ds)
    assert ds.count_rows(filter="id % 2 = 0") == fresh.count_rows(filter="id % 2 = 0")
    _same(ds.to_table(), fresh.to_table(), "to_table")
    _same(ds.to_table(filter="id % 3 = 1"), fresh.to_table(filter="id % 3 = 1"), "filtered to_table")
    # A filter a scalar index on id answers (when there is one) equals the scan without it.
    indexable = "id < 20 OR id IN (41, 57) OR (id > 70 AND NOT id = 75)"
    _same(ds.to_table(filter=indexable), fresh.to_table(filter=indexable, use_scalar_index=False), "indexed filter")
    _same(ds.scanner(columns=["id"], with_row_id=True).to_table(),
          fresh.scanner(columns=["id"], with_row_id=True).to_table(), "scanner")
    if n:
        idx = sorted(set(seq.rng.integers(0, n, 4).tolist()))
        _same(ds.take(idx), fresh.take(idx), "take")
        scanned = fresh.to_table(columns=["id"], with_row_id=True)
        pick = seq.rng.integers(0, n, 3).tolist()
        row_ids = scanned.column("_rowid").take(pick)
        got = ds.take_rows(row_ids.to_pylist(), columns=["id"])
        _same(got, fresh.take_rows(row_ids.to_pylist(), columns=["id"]), "take_rows")
        assert sorted(got.column("id").to_pylist()) == sorted(scanned.column("id").take(pick).to_pylist())
    frags = [(f.fragment_id, f.count_rows(), f.physical_rows, f.num_deletions, f.to_table().column("id").to_pylist())
             for f in ds.get_fragments()]
    assert frags == [(f.fragment_id, f.count_rows(), f.physical_rows, f.num_deletions,
                      f.to_table().column("id").to_pylist()) for f in fresh.get_fragments()]
    assert sum(f[1] for f in frags) == n
    if fresh.has_index and "vec" in fresh.schema.names and n:
        near = {"column": "vec", "q": seq.q, "k": 5}
        mine = ds.to_table(columns=["id"], nearest=near)
        theirs = fresh.to_table(columns=["id"], nearest=near)
        assert mine.column("id").to_pylist() == theirs.column("id").to_pylist()
        np.testing.assert_allclose(mine.column("_distance").to_numpy(), theirs.column("_distance").to_numpy(), rtol=1e-6)
        assert mine.num_rows == min(5, n)
    tds = lancepy_torch.LanceDataset(ds, columns=["id"])
    assert len(tds) == n
    if n:
        rows = tds.__getitems__([0, n - 1])
        assert list(np.asarray(rows["id"])) == fresh.take([0, n - 1], columns=["id"]).column("id").to_pylist()


@pytest.mark.parametrize("seed", range(SEQUENCES))
def test_one_object_through_random_mutations_reads_like_a_fresh_open(seed, tmp_path):
    seq = Sequence(seed, tmp_path)
    check(seq.ds, seq)
    for _ in range(int(seq.rng.integers(3, 6))):
        op = str(seq.rng.choice(Sequence.OPS))
        version_before = seq.ds.version
        frags_before = seq.ds.get_fragments()
        scanner_before = seq.ds.scanner(columns=["id"], filter="id % 2 = 1")
        getattr(seq, op)()
        check(seq.ds, seq)
        # made before the operation: still the version they were made from
        old = lancepy.dataset(seq.uri, version=version_before)
        assert [(f.fragment_id, f.count_rows(), f.to_table().column("id").to_pylist()) for f in frags_before] == [
            (f.fragment_id, f.count_rows(), f.to_table().column("id").to_pylist()) for f in old.get_fragments()
        ], op
        _same(scanner_before.to_table(), old.to_table(columns=["id"], filter="id % 2 = 1"), f"scanner made before {op}")


def test_no_cache_outside_the_per_version_state(tmp_path):
    """Whatever a dataset object computes lazily lives in the state `_set_loaded` replaces:
    after every read API has run, the object has no attribute it did not have when opened."""
    seq = Sequence(12345, tmp_path)
    if not seq.indexed:
        seq.op_create_index()
    ds = lancepy.dataset(seq.uri)
    fresh_attrs = set(vars(ds))
    check(ds, seq)
    ds.delete("id = 1")
    check(ds, seq)
    assert set(vars(ds)) == fresh_attrs


def test_a_dataset_holds_one_immutable_view_and_operations_return_a_new_one(tmp_path):
    """A dataset's version is one ``DatasetView``: immutable, replaced (never changed) when
    the dataset moves; an operation of the operations layer returns the view it committed
    and leaves the dataset where it is until the public layer installs it."""
    from lancepy._ops import mutations as _mutations
    from lancepy._table.snapshot import DatasetView

    uri = str(tmp_path / "v.lance")
    ds = lancepy.write_dataset(pa.table({"id": pa.array(range(10), pa.int64())}), uri, max_rows_per_file=4)
    first = ds._view
    assert isinstance(first, DatasetView) and set(vars(ds)) <= {"_io", "_view", "_default_scan_options"}
    with pytest.raises(AttributeError):
        first.loaded = None
    view, counts = _mutations.delete(first, "id < 3")
    assert counts == {"num_deleted_rows": 3}
    assert (view.version, first.version, ds.version) == (2, 1, 1)  # (the dataset has not moved)
    assert ds._view is first and first.count_rows() == 10 and view.count_rows() == 7
    assert view.state is not first.state and view.session is first.session and view.store is first.store
    ds.checkout_latest()
    assert ds.version == 2 and ds.count_rows() == 7 and ds._view is not view
    ds.update({"id": "id + 100"}, where="id = 9")
    assert ds.version == 3 and first.version == 1 and first.count_rows() == 10
    assert lancepy.dataset(uri, version=1).to_table().equals(pa.table({"id": pa.array(range(10), pa.int64())}))
    assert sorted(ds.to_table().column("id").to_pylist()) == [3, 4, 5, 6, 7, 8, 109]
