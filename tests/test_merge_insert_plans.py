"""merge_insert's execute_uncommitted / explain_plan / analyze_plan / use_index, and the
no-op refusal, with pylance's semantics: results compared with pylance on the same data."""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError


def _data():
    return pa.table({"id": range(10), "v": [f"s{i}" for i in range(10)]})


def _files(uri):
    return sorted(os.listdir(os.path.join(uri, "data")))


def test_execute_uncommitted_then_commit_equals_pylance_execute(tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lancepy.write_dataset(_data(), ours)
    lance.write_dataset(_data(), theirs)
    src = pa.table({"id": [1, 3, 20], "v": ["u1", "u3", "new"]})
    ds = lancepy.dataset(ours)
    txn, stats = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute_uncommitted(src)
    want = lance.dataset(theirs).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    assert stats == {k: want[k] for k in stats}
    assert isinstance(txn, lancepy.Transaction) and isinstance(txn.operation, lancepy.LanceOperation.Update)
    assert lancepy.dataset(ours).version == 1  # nothing committed yet
    done = lancepy.LanceDataset.commit(ours, txn)
    assert done.to_table().sort_by("id").equals(lance.dataset(theirs).to_table().sort_by("id"))
    assert lance.dataset(ours).to_table().sort_by("id").equals(lance.dataset(theirs).to_table().sort_by("id"))


def test_explain_and_analyze_leave_the_dataset_as_it_was(tmp_path):
    uri = str(tmp_path / "d")
    lancepy.write_dataset(_data(), uri)
    ds = lancepy.dataset(uri)
    b = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().use_index(False)
    plan = b.explain_plan()
    assert plan.startswith("MergeInsert: on=['id']") and "Join" in plan
    assert "MergeInsert" in b.explain_plan(pa.schema([("id", pa.int64()), ("v", pa.string())]), verbose=True)
    before = _files(uri)
    text = b.analyze_plan(pa.table({"id": [1, 50], "v": ["a", "b"]}))
    assert "num_updated_rows=1" in text and "num_inserted_rows=1" in text
    assert "num_files_written=" in text and "bytes_written=" in text and "bytes_written=0]" not in text
    assert _files(uri) == before and lancepy.dataset(uri).version == 1
    with pytest.raises(InvalidArgumentError):
        b.use_index("yes")


def test_a_merge_with_no_clause_is_refused_as_pylance_does(tmp_path):
    uri = str(tmp_path / "d")
    lance.write_dataset(_data(), uri)
    with pytest.raises(ValueError):
        lance.dataset(uri).merge_insert("id").execute(_data())
    with pytest.raises(InvalidArgumentError, match="does nothing"):
        lancepy.dataset(uri).merge_insert("id").execute(_data())
