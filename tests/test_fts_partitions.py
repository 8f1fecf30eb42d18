"""INVERTED builds in bounded memory: with ``memory_limit`` (MiB, pylance's option) lancepy
reads the column a scan batch at a time and writes a partition whenever the estimated build
memory reaches the budget, as pylance's builder flushes its workers' partitions. Queries see
one index: the same rows and scores as a one-partition build and as pylance, and pylance
searches lancepy's partitioned index with the same results."""

from __future__ import annotations

import os
import random

import lance
import pyarrow as pa
import pytest
from test_fts import WORDS, assert_same, corpus

import lancepy
from lancepy import query as lq


def _build(tmp_path, name, docs, lib, **options):
    path = str(tmp_path / name)
    lance.write_dataset(pa.table({"id": list(range(len(docs))), "text": docs}), path, max_rows_per_file=3000)
    lib.dataset(path).create_scalar_index("text", "INVERTED", with_position=True, **options)
    lance.dataset(path).delete("id % 9 = 4")
    return path


def _partitions(path):
    seg = [i for i in lance.dataset(path).list_indices() if i["type"] == "Inverted"][0]
    return sorted(n for n in os.listdir(os.path.join(path, "_indices", seg["uuid"])) if n.endswith("_docs.lance"))


def _segment_dir(path):
    seg = [i for i in lance.dataset(path).list_indices() if i["type"] == "Inverted"][0]
    return os.path.join(path, "_indices", seg["uuid"])


def test_partitioned_build_answers_as_one_index(tmp_path):
    docs = corpus(71, 30000, 3, 50)
    parts = _build(tmp_path, "parts", docs, lancepy, memory_limit=1)
    whole = _build(tmp_path, "whole", docs, lancepy)
    theirs = _build(tmp_path, "theirs", docs, lance)
    assert len(_partitions(parts)) > 2 and len(_partitions(whole)) == 1
    rng = random.Random(72)
    for _ in range(30):
        text = " ".join(rng.choices(WORDS[:40], k=rng.randint(1, 3)))
        q = lq.PhraseQuery(text, "text") if rng.random() < 0.3 else lq.MatchQuery(text, "text")
        pq = lance.query.PhraseQuery(text, "text") if isinstance(q, lq.PhraseQuery) else lance.query.MatchQuery(text, "text")
        kw = {"columns": ["id"], **({"limit": 10} if rng.random() < 0.5 else {})}
        want = lancepy.dataset(whole).to_table(full_text_query=q, **kw)
        assert_same(want, lancepy.dataset(parts).to_table(full_text_query=q, **kw), limited="limit" in kw)
        assert_same(want, lance.dataset(parts).to_table(full_text_query=pq, **kw), limited="limit" in kw)
        assert_same(lance.dataset(theirs).to_table(full_text_query=pq, **kw),
                    lancepy.dataset(theirs).to_table(full_text_query=q, **kw), limited="limit" in kw)


def test_partitioned_index_is_merged_by_optimize(tmp_path):
    docs = corpus(73, 6000, 3, 40)
    path = _build(tmp_path, "p", docs, lancepy, memory_limit=1)
    lance.write_dataset(pa.table({"id": [9000, 9001], "text": ["new data row", "another index"]}), path, mode="append")
    before = lancepy.dataset(path).to_table(full_text_query="data index", columns=["id"])
    lancepy.dataset(path).optimize.optimize_indices()
    after = lancepy.dataset(path).to_table(full_text_query="data index", columns=["id"])
    assert set(after["id"].to_pylist()) == set(before["id"].to_pylist())
    assert_same(lance.dataset(path).to_table(full_text_query="data index", columns=["id"]), after, limited=False)


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
def test_partitioned_merge_streams_partitions(tmp_path, monkeypatch, builder):
    """optimize_indices merges a partitioned index one partition at a time (never two of the
    old partitions open together): each old partition becomes one of the new segment, the
    appended rows another; lancepy and pylance answer from the merged index as from one
    index built over all the rows at once (same rows and scores)."""
    import weakref

    from lancepy._ops import inverted as _inverted

    lib = lancepy if builder == "lancepy" else lance
    docs = corpus(75, 24000, 3, 40)
    path = _build(tmp_path, "p", docs, lib, memory_limit=1)
    old_parts = len(_partitions(path))
    if builder == "lancepy":
        assert old_parts > 2
    extra = corpus(76, 1500, 3, 40)
    lance.write_dataset(pa.table({"id": list(range(len(docs), len(docs) + 1500)), "text": extra}), path, mode="append")
    alive, most = [0], [0]
    opened = _inverted.Partition.__init__

    def counting(self, *args, **kwargs):
        opened(self, *args, **kwargs)
        alive[0] += 1
        most[0] = max(most[0], alive[0])
        weakref.finalize(self, lambda: alive.__setitem__(0, alive[0] - 1))

    monkeypatch.setattr(_inverted.Partition, "__init__", counting)
    old_seg = _segment_dir(path)
    old_files = {n: open(os.path.join(old_seg, n), "rb").read() for n in os.listdir(old_seg) if n.startswith("part_")}
    lancepy.dataset(path).optimize.optimize_indices()
    monkeypatch.undo()
    assert most[0] <= 1
    # Partitions laid out as the merged segment declares (all of lancepy's) are copied as they
    # are, in order; the others are decoded and written again (one at a time: above).
    new_seg = _segment_dir(path)
    old_pids = sorted({int(n.split("_")[1]) for n in old_files})
    copied = [all(open(os.path.join(new_seg, f"part_{new}_{k}.lance"), "rb").read() == old_files[f"part_{old}_{k}.lance"]
                  for k in ("invert", "tokens", "docs")) for new, old in enumerate(old_pids)]
    if builder == "lancepy":
        assert all(copied) and most[0] == 0
    else:
        assert all(copied) == (most[0] == 0)
    lance.dataset(path).delete("id % 9 = 4")  # (the appended rows too, as in `whole`)
    assert len(_partitions(path)) == old_parts + 1
    (desc,) = lance.dataset(path).describe_indices()
    assert desc.num_rows_indexed == lance.dataset(path).count_rows()
    whole = _build(tmp_path, "whole", docs + extra, lancepy)  # (one index over every row, the same deletions)
    rng = random.Random(77)
    for _ in range(25):
        text = " ".join(rng.choices(WORDS[:40], k=rng.randint(1, 3)))
        q = lq.PhraseQuery(text, "text") if rng.random() < 0.3 else lq.MatchQuery(text, "text")
        pq = lance.query.PhraseQuery(text, "text") if isinstance(q, lq.PhraseQuery) else lance.query.MatchQuery(text, "text")
        kw = {"columns": ["id"], **({"limit": 10} if rng.random() < 0.5 else {})}
        want = lancepy.dataset(whole).to_table(full_text_query=q, **kw)
        assert_same(want, lancepy.dataset(path).to_table(full_text_query=q, **kw), limited="limit" in kw)
        assert_same(want, lance.dataset(path).to_table(full_text_query=pq, **kw), limited="limit" in kw)


def test_build_options_checked(tmp_path):
    path = str(tmp_path / "d")
    lance.write_dataset(pa.table({"text": ["a b", "c d"]}), path)
    ds = lancepy.dataset(path)
    for bad in (0, -5, 1.5, True):
        with pytest.raises(lancepy.exceptions.InvalidArgumentError, match="memory_limit"):
            ds.create_scalar_index("text", "INVERTED", memory_limit=bad)
    with pytest.raises(lancepy.exceptions.NotSupportedError, match="num_workers"):
        ds.create_scalar_index("text", "INVERTED", num_workers=2)
    ds.create_scalar_index("text", "INVERTED", num_workers=1, memory_limit=64)
    assert lance.dataset(path).to_table(full_text_query="c").num_rows == 1
