"""Writes with a declared ``schema=``: every input kind × every kind of declared schema,
each cell compared with pylance.

The rule lancepy follows for every input kind: batches are cast to the declared schema with
Arrow's safe cast; a lossy or impossible cast raises ``SchemaMismatchError`` and leaves the
dataset (or the place where it would have been) exactly as it was.

pylance applies the declared schema this way to iterators, generators and lists of batches
(its ``_casting_recordbatch_iter``), and converts pandas frames with it. To a ``Table``,
``RecordBatch``, ``RecordBatchReader`` or dataset it does not apply ``schema=`` at all (it
stores the data's own types), and it does not take ``__arrow_c_stream__`` objects. For
those kinds the reference is what pylance stores for the same batches given as an iterator,
i.e. what it stores when it does honour the declared schema.
"""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import SchemaMismatchError

ID = pa.array([1, 2, 3, 4, 5, 6], pa.int64())

# name -> (values of column "a" as stored in the source, declared type of "a", expected outcome)
CASES = {
    "equal": (pa.array([20, 30, 40, 50, 60, 70], pa.int64()), pa.int64(), "ok"),
    "int32_to_int64": (pa.array([20, 30, -40, 50, 60, 2**31 - 1], pa.int32()), pa.int64(), "ok"),
    "int64_to_float64": (pa.array([20, 30, 40, -50, 60, 2**40], pa.int64()), pa.float64(), "ok"),
    "whole_floats_to_int64": (pa.array([1.0, 2.0, -3.0, 4.0, 5.0, 6.0]), pa.int64(), "ok"),
    "int64_to_string": (pa.array([5, 1, None, 7, 8, 9], pa.int64()), pa.string(), "ok"),
    # the offending value sits in the second batch: streams fail after a first batch went by
    "lossy_float_to_int64": (pa.array([1.0, 2.0, 3.0, 4.5, 5.0, 6.0]), pa.int64(), "raises"),
    "lossy_big_int64_to_int32": (pa.array([1, 2, 3, 2**40, 5, 6], pa.int64()), pa.int32(), "raises"),
    "impossible_int64_to_date32": (pa.array([1, 2, 3, 4, 5, 6], pa.int64()), pa.date32(), "raises"),
    "impossible_int64_to_list": (pa.array([1, 2, 3, 4, 5, 6], pa.int64()), pa.list_(pa.int64()), "raises"),
}

# pandas frames are converted with the declared schema by pyarrow's from_pandas (as pylance
# does), which refuses to turn numbers into strings.
EXPECTED_OVERRIDES = {("int64_to_string", "pandas"): "raises"}


def _table(values: pa.Array) -> pa.Table:
    return pa.table({"id": ID, "a": values})


def _declared(type_: pa.DataType) -> pa.Schema:
    return pa.schema([("id", pa.int64()), ("a", type_)])


class _Stream:
    """A foreign Arrow producer: only ``__arrow_c_stream__``."""

    def __init__(self, t: pa.Table) -> None:
        self._t = t

    def __arrow_c_stream__(self, requested_schema=None):
        return self._t.to_reader(max_chunksize=3).__arrow_c_stream__(requested_schema)


def _kinds(t: pa.Table, tmp_path):
    """name -> (factory of the input, does pylance apply schema= to this kind itself)."""
    batches = t.to_batches(max_chunksize=3)

    def lancepy_ds():
        return lancepy.write_dataset(t, tmp_path / f"src-lancepy-{os.urandom(4).hex()}.lance", max_rows_per_file=3)

    def pylance_ds():
        return lance.write_dataset(t, str(tmp_path / f"src-pylance-{os.urandom(4).hex()}.lance"), max_rows_per_file=3)

    return {
        "table": (lambda: pa.Table.from_batches(batches), False),
        "record_batch": (lambda: t.combine_chunks().to_batches()[0], False),
        "reader": (lambda: pa.RecordBatchReader.from_batches(t.schema, batches), False),
        "iterator": (lambda: iter(batches), True),
        "generator": (lambda: (b for b in batches), True),
        "list": (lambda: list(batches), True),
        "pandas": (lambda: t.to_pandas(), True),
        "lancepy_dataset": (lancepy_ds, False),
        "pylance_dataset": (pylance_ds, False),
        "arrow_c_stream": (lambda: _Stream(t), False),
    }


KIND_NAMES = ["table", "record_batch", "reader", "iterator", "generator", "list", "pandas",
              "lancepy_dataset", "pylance_dataset", "arrow_c_stream"]


def _pylance_reference(kind: str, make, own: bool, t: pa.Table, declared: pa.Schema, uri: str):
    """What pylance stores (a table) or the exception it raises."""
    data = make() if own else iter(t.to_batches(max_chunksize=3))
    try:
        lance.write_dataset(data, uri, schema=declared)
    except Exception as e:  # noqa: BLE001 - any refusal counts as "raises"
        return e
    return lance.dataset(uri).to_table()


def _listing(path) -> list:
    if not os.path.exists(path):
        return []
    return sorted(os.path.relpath(os.path.join(r, n), path) for r, ds, fs in os.walk(path) for n in ds + fs)


@pytest.mark.parametrize("kind", KIND_NAMES)
@pytest.mark.parametrize("case", list(CASES))
def test_declared_schema_cell_matches_pylance(tmp_path, kind, case):
    values, type_, expected = CASES[case]
    expected = EXPECTED_OVERRIDES.get((case, kind), expected)
    t = _table(values)
    declared = _declared(type_)
    make, own = _kinds(t, tmp_path)[kind]
    reference = _pylance_reference(kind, make, own, t, declared, str(tmp_path / "ref.lance"))
    uri = tmp_path / "out.lance"
    if isinstance(reference, Exception):
        assert expected == "raises", f"pylance refused a cell expected to be written: {reference!r}"
        with pytest.raises(SchemaMismatchError) as ei:
            lancepy.write_dataset(make(), uri, schema=declared)
        message = str(ei.value)
        assert "'a'" in message and str(type_) in message, message
        # nothing written: no dataset, no directory, no orphan data files
        assert not uri.exists(), _listing(uri)
        return
    assert expected == "ok", "pylance wrote a cell expected to be refused"
    ds = lancepy.write_dataset(make(), uri, schema=declared)
    got = ds.to_table()
    assert got.schema.field("a").type == type_
    assert got.schema.field("a").type == reference.schema.field("a").type
    assert got.equals(reference), (got.to_pydict(), reference.to_pydict())
    # what is stored reads back the same through a fresh open, and through pylance
    assert lancepy.dataset(uri).to_table().equals(reference)
    assert lance.dataset(str(uri)).to_table().equals(reference)


@pytest.mark.parametrize("kind", KIND_NAMES)
@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][2] == "raises"])
def test_refused_append_leaves_the_dataset_as_it_was(tmp_path, kind, case):
    values, type_, _ = CASES[case]
    t = _table(values)
    declared = _declared(type_)
    uri = tmp_path / "ds.lance"
    first = pa.table({"id": pa.array([0], pa.int64()), "a": pa.nulls(1, type_)})
    lancepy.write_dataset(first, uri, schema=declared)
    before = _listing(uri)
    make, _ = _kinds(t, tmp_path)[kind]
    with pytest.raises(SchemaMismatchError):
        lancepy.write_dataset(make(), uri, schema=declared, mode="append")
    with pytest.raises(SchemaMismatchError):
        lancepy.dataset(uri).insert(make(), schema=declared)
    with pytest.raises(SchemaMismatchError):
        lancepy.fragment.write_fragments(make(), uri, schema=declared)
    assert _listing(uri) == before
    ds = lancepy.dataset(uri)
    assert ds.version == 1 and ds.to_table().equals(first.cast(declared))


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_castable_append_insert_and_fragments_cast(tmp_path, kind):
    values, type_, _ = CASES["int32_to_int64"]
    t = _table(values)
    declared = _declared(type_)
    make, _ = _kinds(t, tmp_path)[kind]
    uri = tmp_path / "ds.lance"
    ref_uri = str(tmp_path / "ref.lance")
    lancepy.write_dataset(make(), uri, schema=declared)
    lancepy.write_dataset(make(), uri, schema=declared, mode="append")
    ds = lancepy.dataset(uri)
    ds.insert(make(), schema=declared)
    frags = lancepy.fragment.write_fragments(make(), uri, schema=declared)
    ds = lancepy.LanceDataset.commit(uri, lancepy.LanceOperation.Append(frags), read_version=ds.version)
    # pylance, through the path where it applies the declared schema
    lance.write_dataset(iter(t.to_batches()), ref_uri, schema=declared)
    ref = lance.dataset(ref_uri)
    ref.insert(iter(t.to_batches()), schema=declared)
    ref.insert(iter(t.to_batches()), schema=declared)
    ref.insert(iter(t.to_batches()), schema=declared)
    got, want = ds.to_table(), lance.dataset(ref_uri).to_table()
    assert got.schema.field("a").type == pa.int64()
    assert got.equals(want)
