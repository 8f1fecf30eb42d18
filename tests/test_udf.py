"""``lancepy.batch_udf`` (pylance's ``lance.batch_udf``) with ``add_columns``: the same
functions on the same data give the same columns in both libraries; a result of another
schema is refused; a checkpoint file resumes a failed run, and each library resumes from
the other's checkpoint."""

from __future__ import annotations

import os

import lancepy
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lancepy.exceptions import InvalidArgumentError, SchemaMismatchError
from lancepy.udf import BatchUDF, BatchUDFCheckpoint

lance = pytest.importorskip("lance")


def _write_both(tmp_path, table, **kwargs):
    return (
        lancepy.write_dataset(table, tmp_path / "ours", **kwargs),
        lance.write_dataset(table, tmp_path / "theirs", **kwargs),
    )


def test_batch_udf_columns_as_pylance(tmp_path):
    table = pa.table({"a": range(100), "b": range(100)})
    ours, theirs = _write_both(tmp_path, table, max_rows_per_file=25)
    ours.delete("a % 7 = 3")
    theirs.delete("a % 7 = 3")

    def double(batch):
        assert batch.schema.names == ["a"]
        return pa.record_batch([pc.multiply(batch["a"], 2)], ["double_a"])

    schema = pa.schema([pa.field("double_a", pa.int64())])
    ours.add_columns(lancepy.batch_udf(output_schema=schema)(double), read_columns=["a"])
    theirs.add_columns(lance.batch_udf(output_schema=schema)(double), read_columns=["a"])
    assert ours.to_table() == theirs.to_table()
    assert lance.dataset(tmp_path / "ours").to_table() == theirs.to_table()


def test_batch_udf_infers_the_schema_and_takes_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    table = pa.table({"a": range(30)})
    ours, theirs = _write_both(tmp_path, table, max_rows_per_file=10)

    def triple(batch):
        return pd.DataFrame({"t": [3 * x for x in batch["a"].to_pylist()]})

    udf = lancepy.batch_udf()(triple)
    ours.add_columns(udf, read_columns=["a"], batch_size=4)
    theirs.add_columns(lance.batch_udf()(triple), read_columns=["a"], batch_size=4)
    assert ours.to_table() == theirs.to_table()
    assert udf.output_schema.names == ["t"]
    # Calling the object calls the function as written.
    assert isinstance(udf(pa.record_batch({"a": [1]})), pd.DataFrame)


def test_batch_udf_refuses_another_schema(tmp_path):
    table = pa.table({"a": range(40)})
    ours, theirs = _write_both(tmp_path, table, max_rows_per_file=10)
    names = iter(f"c{i}" for i in range(100))

    def renaming(batch):
        return pa.record_batch([batch["a"]], [next(names)])

    with pytest.raises(Exception, match="Output schema of function does not match the expected schema"):
        theirs.add_columns(lance.batch_udf()(renaming))
    with pytest.raises(SchemaMismatchError, match="Output schema of function does not match the expected schema"):
        ours.add_columns(lancepy.batch_udf()(renaming))
    assert ours.version == theirs.version == 1
    with pytest.raises(InvalidArgumentError):
        lancepy.batch_udf(output_schema="a: int")(renaming)
    with pytest.raises(InvalidArgumentError):
        BatchUDF(42)


def _failing_then_resuming(lib, path, checkpoint):
    ds = lib.write_dataset(pa.table({"a": range(100), "b": range(100)}), path, max_rows_per_file=20)

    @lib.batch_udf(checkpoint_file=checkpoint)
    def failing(batch):
        if batch["a"][0].as_py() >= 50:
            raise RuntimeError("I failed")
        return pa.record_batch([pc.multiply(batch["a"], 2)], ["a2"])

    with pytest.raises(Exception, match="I failed"):
        ds.add_columns(failing, read_columns=["a"])
    assert ds.version == 1 and os.path.exists(checkpoint)
    return ds


@pytest.mark.parametrize("first", ["lancepy", "pylance"])
def test_checkpoint_resumes_a_failed_run(tmp_path, first):
    lib = lancepy if first == "lancepy" else lance
    checkpoint = tmp_path / "cache.sqlite"
    ds = _failing_then_resuming(lib, tmp_path / "ds", checkpoint)
    seen = []

    @lancepy.batch_udf(checkpoint_file=checkpoint)
    def resuming(batch):
        seen.append(batch["a"][0].as_py())
        return pa.record_batch([pc.multiply(batch["a"], 2)], ["a2"])

    ours = lancepy.dataset(ds.uri)
    ours.add_columns(resuming, read_columns=["a"])
    assert not os.path.exists(checkpoint)
    # lancepy's checkpoint keeps batches: only those not computed run again.
    if first == "lancepy":
        assert seen == [60, 80]
    assert ours.to_table() == pa.table({"a": range(100), "b": range(100), "a2": range(0, 200, 2)})


def test_pylance_resumes_from_lancepys_checkpoint(tmp_path):
    checkpoint = tmp_path / "cache.sqlite"
    ds = _failing_then_resuming(lancepy, tmp_path / "ds", checkpoint)

    @lance.batch_udf(checkpoint_file=checkpoint)
    def resuming(batch):
        assert batch["a"][0].as_py() in (0, 60, 80)
        return pa.record_batch([pc.multiply(batch["a"], 2)], ["a2"])

    theirs = lance.dataset(ds.uri)
    theirs.add_columns(resuming, read_columns=["a"])
    assert not os.path.exists(checkpoint)
    assert theirs.to_table() == pa.table({"a": range(100), "b": range(100), "a2": range(0, 200, 2)})


def test_checkpoint_api_as_pylance(tmp_path):
    import lance.udf

    for lib, name in ((lancepy.udf, "ours"), (lance.udf, "theirs")):
        cp = lib.BatchUDFCheckpoint(tmp_path / f"{name}.sqlite")
        info = lib.BatchUDFCheckpoint.BatchInfo(3, 1)
        assert cp.get_batch(info) is None and cp.get_fragment(3) is None
        batch = pa.record_batch({"x": [1, 2]})
        cp.insert_batch(info, batch)
        assert cp.get_batch(info) == batch
        cp.insert_fragment(3, '{"id": 3}')
        assert cp.get_fragment(3) == '{"id": 3}' and cp.get_batch(info) is None
        cp.cleanup()
        assert not os.path.exists(tmp_path / f"{name}.sqlite")
    assert BatchUDFCheckpoint.BatchInfo._fields == lance.udf.BatchUDFCheckpoint.BatchInfo._fields
