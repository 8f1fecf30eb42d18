"""Streaming writes: inputs of any length are written in the memory of a few pages per column."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import lance
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError, SchemaMismatchError

# A child process streams `rows` x `dim` float32 embeddings plus an id column (generated batch
# by batch, never held whole) into a dataset and reports its peak RSS above the baseline it
# had with the first batch already made.
RSS_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    import numpy as np, pyarrow as pa, lancepy
    from lancepy.fragment import write_fragments
    uri, rows, dim, how = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    bs = 4096
    schema = pa.schema([("id", pa.int64()), ("emb", pa.list_(pa.float32(), dim))])
    block = np.random.default_rng(0).random(bs * dim, dtype=np.float32)
    def batches():
        for s in range(0, rows, bs):
            n = min(bs, rows - s)
            vals = pa.array(block[: n * dim] + np.float32(s))
            yield pa.record_batch([pa.array(np.arange(s, s + n)), pa.FixedSizeListArray.from_arrays(vals, dim)], schema=schema)
    next(batches())
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if how == "write_dataset":
        ds = lancepy.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), uri)
        n = ds.count_rows()
    else:
        frags = write_fragments(batches(), uri, schema=schema)
        n = sum(f.physical_rows for f in frags)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rows": n, "grew_mb": (peak - base) / 1024}))
    """
)


@pytest.mark.parametrize("how", ["write_dataset", "write_fragments"])
def test_stream_larger_than_memory_bound(tmp_path, how):
    rows, dim = 240_000, 768  # 737 MB of embeddings, several times the bound below
    out = subprocess.run(
        [sys.executable, "-c", RSS_CHILD, str(tmp_path / "big.lance"), str(rows), str(dim), how],
        capture_output=True, text=True, check=True, timeout=600,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["rows"] == rows
    stream_mb = rows * dim * 4 / 2**20
    # A few 8 MiB pages per column, the encoder's scratch space and the allocator's slack;
    # before pages stopped pinning imported batches this grew with the input (~stream_mb).
    assert report["grew_mb"] < 200, f"peak RSS grew {report['grew_mb']:.0f} MB writing a {stream_mb:.0f} MB stream"


def _table(n: int = 1000, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "s": pa.array([f"r{i}" for i in ids]), "x": ids.astype(np.float64) / 4})


def test_every_streamed_input_kind_writes_the_same_rows(tmp_path):
    t = _table(3000)
    inputs = {
        "generator": (b for b in t.to_batches(max_chunksize=700)),
        "iterator": iter(t.to_batches(max_chunksize=1000)),
        "pyarrow_dataset": pads.dataset(t),
        "pyarrow_scanner": pads.dataset(t).scanner(batch_size=500),
        "lancepy_dataset": lancepy.write_dataset(t, tmp_path / "src.lance"),
        "lancepy_scanner": lancepy.dataset(tmp_path / "src.lance").scanner(),
    }
    for name, data in inputs.items():
        ds = lancepy.write_dataset(data, tmp_path / f"{name}.lance", schema=t.schema)
        assert ds.to_table().sort_by("id").equals(t), name


def test_an_iterable_needs_a_schema(tmp_path):
    with pytest.raises(InvalidArgumentError, match="schema="):
        lancepy.write_dataset(iter(_table(10).to_batches()), tmp_path / "x.lance")
    with pytest.raises(InvalidArgumentError, match="record batches"):
        lancepy.write_dataset(iter([1, 2]), tmp_path / "y.lance", schema=_table(1).schema)
    assert not (tmp_path / "y.lance" / "_versions").exists()


def test_write_fragments_honours_schema(tmp_path):
    t = _table(100)
    want = pa.schema([t.schema.field("x"), t.schema.field("id"), t.schema.field("s")])
    frags = lancepy.fragment.write_fragments(t.to_reader(), tmp_path / "f.lance", schema=want)
    ds = lancepy.LanceDataset.commit(tmp_path / "f.lance", lancepy.LanceOperation.Overwrite(want, frags))
    assert ds.schema.names == ["x", "id", "s"]
    assert ds.to_table().equals(t.select(["x", "id", "s"]))
    wrong = pa.schema([("id", pa.string())])
    with pytest.raises(SchemaMismatchError):
        lancepy.fragment.write_fragments(t.to_reader(), tmp_path / "g.lance", schema=wrong)


def test_max_bytes_per_file_cuts_files(tmp_path):
    dim = 256
    vals = np.random.default_rng(1).random(20_000 * dim, dtype=np.float32)
    t = pa.table({"emb": pa.FixedSizeListArray.from_arrays(pa.array(vals), dim)})  # ~20 MB
    ds = lancepy.write_dataset(t.to_reader(max_chunksize=1000), tmp_path / "b.lance", max_bytes_per_file=6 * 2**20)
    frags = ds.get_fragments()
    assert len(frags) >= 2
    # A soft limit, as pylance's: checked after each batch against the bytes written out
    # (pages are buffered), so files end at a batch boundary past it. Where exactly depends
    # on when each library's encoder writes pages: pylance cuts this input into 3 files too.
    theirs = lance.write_dataset(t.to_reader(max_chunksize=1000), tmp_path / "p.lance", max_bytes_per_file=6 * 2**20)
    assert len(frags) == len(theirs.get_fragments())
    for f in frags[:-1]:
        assert f.count_rows() % 1000 == 0 and f.data_files()[0].file_size_bytes >= 6 * 2**20
    assert ds.to_table().equals(t)
    with pytest.raises(InvalidArgumentError, match="max_bytes_per_file"):
        lancepy.write_dataset(t, tmp_path / "c.lance", max_bytes_per_file=0)
