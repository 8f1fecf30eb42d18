"""LanceDataset.commit_batch: several Append transactions committed as one version, as
pylance does; other operations refused."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import NotSupportedError


def test_commit_batch_of_appends_equals_pylance(tmp_path):
    results = {}
    for name, lib in (("ours", lancepy), ("theirs", lance)):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"a": range(10)}), uri)
        txns = []
        for i, start in enumerate((10, 20)):
            frags = lib.fragment.write_fragments(pa.table({"a": range(start, start + 10)}), ds)
            txns.append(lib.Transaction(1 + i, lib.LanceOperation.Append(frags)))
        out = lib.LanceDataset.commit_batch(ds, txns)
        assert out["dataset"].version == 2
        assert isinstance(out["merged"].operation, lib.LanceOperation.Append)
        assert out["merged"].operation.fragments == txns[0].operation.fragments + txns[1].operation.fragments
        results[name] = uri
    want = lance.dataset(results["theirs"]).to_table()
    assert lancepy.dataset(results["ours"]).to_table().equals(want)
    assert lance.dataset(results["ours"]).to_table().equals(want)


def test_commit_batch_refuses_other_operations(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancepy.write_dataset(pa.table({"a": range(10)}), uri)
    txn = lancepy.Transaction(1, lancepy.LanceOperation.Delete([], [], "a > 3"))
    with pytest.raises(NotSupportedError, match="Append transactions only"):
        lancepy.LanceDataset.commit_batch(ds, [txn])
    assert lancepy.dataset(uri).version == 1
