"""``LanceFragment.merge_columns`` (a distributed column backfill: workers compute new columns
per fragment, the driver commits them with ``LanceOperation.Merge``), against pylance 14."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancepy
from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError
from lancepy.fragment import FragmentMetadata

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")

pytestmark = pytest.mark.interop


def _udf(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.record_batch(
        [pc.multiply(batch.column("a"), 10), pc.binary_join_element_wise(batch.column("s"), "!", "")], names=["c", "t"]
    )


def _make(path: str, writer) -> None:
    table = pa.table({"a": pa.array(range(12), pa.int64()), "s": [f"s{i}" for i in range(12)]})
    writer.write_dataset(table, path, max_rows_per_file=5)
    writer.dataset(path).delete("a in (2, 7)")


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_backfill_equals_pylances(tmp_path, writer):
    """The same backfill run by lancepy and by pylance on copies of one dataset."""
    src = str(tmp_path / "src.lance")
    _make(src, lancepy if writer == "lancepy" else lance)
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    shutil.copytree(src, ours)
    shutil.copytree(src, theirs)

    ds = lancepy.dataset(ours)
    results = [f.merge_columns(_udf, columns=["a", "s"], batch_size=2) for f in ds.get_fragments()]
    assert all(r[1] == results[0][1] for r in results)
    frag, schema = results[0]
    assert isinstance(frag, FragmentMetadata) and len(frag.data_files()) == 2
    assert schema.to_pyarrow().names == ["a", "s", "c", "t"]
    op = lancepy.LanceOperation.Merge([r[0] for r in results], results[0][1])
    lancepy.LanceDataset.commit(ours, op, read_version=ds.version)

    ref = lance.dataset(theirs)
    pres = [f.merge_columns(_udf, columns=["a", "s"], batch_size=2) for f in ref.get_fragments()]
    lance.LanceDataset.commit(theirs, lance.LanceOperation.Merge([r[0] for r in pres], pres[0][1]), read_version=ref.version)

    a, b = lancepy.dataset(ours).to_table(), lance.dataset(theirs).to_table()
    assert a.equals(b)
    assert lance.dataset(ours).to_table().equals(b)  # pylance reads lancepy's result
    assert a.column("c").to_pylist() == [10 * i for i in range(12) if i not in (2, 7)]


def test_pylance_fragments_committed_by_lancepy(tmp_path):
    path = str(tmp_path / "x.lance")
    _make(path, lance)
    ref = lance.dataset(path)
    pres = [f.merge_columns(_udf, columns=["a", "s"]) for f in ref.get_fragments()]
    frags = [FragmentMetadata.from_json(json.dumps(f.to_json())) for f, _ in pres]
    lancepy.LanceDataset.commit(path, lancepy.LanceOperation.Merge(frags, pres[0][1].to_pyarrow()), read_version=ref.version)
    assert lancepy.dataset(path).to_table().equals(lance.dataset(path).to_table())
    assert lance.dataset(path).to_table().column("t").to_pylist()[:2] == ["s0!", "s1!"]


def test_errors(tmp_path):
    path = str(tmp_path / "e.lance")
    _make(path, lancepy)
    frag = lancepy.dataset(path).get_fragments()[0]
    with pytest.raises(InvalidArgumentError, match="rows given"):  # precomputed values: one per physical row
        frag.merge_columns(pa.table({"c": [1]}))
    with pytest.raises(InvalidArgumentError, match="reader_schema"):  # (batches go with it, not a function)
        frag.merge_columns(_udf, reader_schema=pa.schema([("c", pa.int64())]))
    with pytest.raises(ColumnNotFoundError):
        frag.merge_columns(_udf, columns=["nope"])
    with pytest.raises(InvalidArgumentError):
        frag.merge_columns(lambda b: pa.record_batch([b.column("a")], names=["a"]))  # exists
    with pytest.raises(InvalidArgumentError):
        frag.merge_columns(lambda b: pa.record_batch([pa.array([1])], names=["z"]), batch_size=5)  # wrong length
    with pytest.raises(InvalidArgumentError):
        frag.merge_columns(_udf, batch_size=0)
    assert lancepy.dataset(path).version == 2  # nothing committed


def test_batch_udf_schema_from_a_sample_as_pylance(tmp_path):
    """A ``batch_udf`` without ``output_schema``: both libraries call it once on a one-row
    sample for the schema, so a function whose columns change from call to call fails in
    both, and a steady one gives the same fragment contents."""
    path = str(tmp_path / "s.lance")
    _make(path, lancepy)
    calls = {"n": 0}

    def renamed(batch):
        calls["n"] += 1
        return pa.record_batch([batch["a"]], [f"c{calls['n']}"])

    for lib in (lancepy, lance):
        frag = lib.dataset(path).get_fragments()[0]
        with pytest.raises(Exception, match="Output schema of function does not match the expected schema"):
            frag.merge_columns(lib.batch_udf()(renamed))
    got = []
    for lib in (lancepy, lance):
        copy = str(tmp_path / f"copy_{lib.__name__}.lance")
        shutil.copytree(path, copy)
        ds = lib.dataset(copy)
        udf = lib.batch_udf()(lambda b: pa.record_batch([pc.multiply(b["a"], 3)], ["d"]))
        frags, schemas = zip(*(f.merge_columns(udf, columns=["a"]) for f in ds.get_fragments()))
        op = lib.LanceOperation.Merge(list(frags), schemas[-1])
        got.append(lib.LanceDataset.commit(copy, op, read_version=ds.version).to_table().to_pylist())
    assert got[0] == got[1]
    assert [r["d"] for r in got[0]] == [3 * r["a"] for r in got[0]]
