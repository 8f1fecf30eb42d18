"""Stable row ids written by pylance's compaction after deletions (row-id sequences stored
as ranges with bitmaps, ranges with holes, arrays): lancepy reads them as pylance does.
Seeded random deletes, then pylance compacts; row ids and takes by row id must agree."""

from __future__ import annotations

import random

import lance
import pyarrow as pa
import pytest

import lancepy


@pytest.mark.parametrize("seed", range(12))
def test_row_ids_after_pylance_compacts_deletions(tmp_path, seed):
    rng = random.Random(seed)
    uri = str(tmp_path / "d.lance")
    n = rng.choice([50, 200, 1000])
    lance.write_dataset(pa.table({"a": range(n)}), uri, max_rows_per_file=rng.choice([20, 64, 300]),
                        enable_stable_row_ids=True)
    for _ in range(rng.randint(1, 3)):
        mod, rem = rng.randint(2, 9), rng.randint(0, 8)
        lance.dataset(uri).delete(f"a % {mod} = {rem % mod}")
        if rng.random() < 0.7:
            lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=rng.choice([100, 10_000]))
    theirs = lance.dataset(uri).to_table(with_row_id=True)
    ours = lancepy.dataset(uri).to_table(with_row_id=True)
    assert ours.equals(theirs)
    ids = theirs.column("_rowid").to_pylist()
    if ids:
        pick = rng.sample(ids, min(10, len(ids)))
        assert lancepy.dataset(uri)._take_rows(pick, columns=["a"]).equals(lance.dataset(uri)._take_rows(pick, columns=["a"]))
