"""Compaction's planning options, against pylance on copies of the same dataset."""

import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError


@pytest.fixture
def base(tmp_path):
    path = str(tmp_path / "base")
    for i in range(8):
        t = pa.table({"a": list(range(i * 100, i * 100 + 100)), "s": [f"v{j}" * 20 for j in range(100)]})
        lance.write_dataset(t, path, mode="append")
    return path


def _both(base, tmp_path, **options):
    out = {}
    for name, lib in (("lancepy", lancepy), ("pylance", lance)):
        path = str(tmp_path / name)
        shutil.copytree(base, path)
        m = lib.dataset(path).optimize.compact_files(**options)
        frags = sorted(f.fragment_id for f in lance.dataset(path).get_fragments())
        out[name] = ((m.fragments_removed, m.fragments_added), len(frags),
                     lance.dataset(path).to_table().sort_by("a") == lancepy.dataset(base).to_table().sort_by("a"))
    return out


@pytest.mark.parametrize(
    "options",
    [
        {"excluded_fragment_ids": [3]},
        {"excluded_fragment_ids": [0, 7, 99]},
        {"max_source_fragments": 3, "target_rows_per_fragment": 300},
        {"max_source_rows": 450, "target_rows_per_fragment": 200},
        {"data_storage_version": "2.1"},
    ],
)
def test_compaction_options_as_pylance(base, tmp_path, options):
    got = _both(base, tmp_path, **options)
    assert got["lancepy"] == got["pylance"]
    assert got["lancepy"][2]


def test_max_source_bytes_caps_a_run(base, tmp_path):
    path = str(tmp_path / "c")
    shutil.copytree(base, path)
    size = sum(d.file_size_bytes for f in lancepy.dataset(path).get_fragments()[:3] for d in f.data_files())
    m = lancepy.dataset(path).optimize.compact_files(max_source_bytes=size, target_rows_per_fragment=200)
    assert m.fragments_removed <= 3
    assert lancepy.dataset(path).to_table().sort_by("a") == lancepy.dataset(base).to_table().sort_by("a")


def test_max_bytes_per_file_cuts_the_new_files(tmp_path):
    """A soft cap, as pylance's: checked after each batch of `batch_size` rows against the
    bytes written out (pages are buffered to 8 MiB), so the same files come out."""
    arr = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(2 * 1024 * 1024, dtype=np.int64)), 1024)
    counts = {}
    for name, lib in (("ours", lancepy), ("theirs", lance)):
        path = str(tmp_path / name)
        lancepy.write_dataset(pa.table({"a": arr}), path, max_rows_per_file=1024)
        m = lib.dataset(path).optimize.compact_files(target_rows_per_fragment=100 * 1024, max_bytes_per_file=1000,
                                                     batch_size=128, materialize_deletions=False)
        counts[name] = (m.fragments_removed, m.fragments_added, [f.count_rows() for f in lib.dataset(path).get_fragments()])
        assert lance.dataset(path).to_table().equals(pa.table({"a": arr}))
    assert counts["ours"] == counts["theirs"]
    assert counts["ours"][1] == 2


def test_compaction_option_values_are_checked(base):
    with pytest.raises(InvalidArgumentError):
        lancepy.dataset(base).optimize.compact_files(max_source_rows=0)
    with pytest.raises(InvalidArgumentError):
        lancepy.dataset(base).optimize.compact_files(max_bytes_per_file=-1)
