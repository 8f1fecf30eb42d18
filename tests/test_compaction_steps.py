"""Compaction in steps (pylance's ``lance.optimize``: ``Compaction.plan`` -> ``task.execute``
-> ``Compaction.commit``), compared with pylance's on the same data: the same tasks (the same
fragments), the same metrics, versions and rows; plans, tasks and results pickle; indexed
and unindexed fragments are never merged; ``lancepy.lance`` and ``lancepy.commit`` hold the
pylance names tests import."""

from __future__ import annotations

import pickle
import re

import lancepy
import lancepy.commit
import lancepy.lance
import numpy as np
import pyarrow as pa
import pytest
from lancepy.exceptions import CommitConflictError, InvalidArgumentError, NotSupportedError
from lancepy.optimize import Compaction, CompactionPlan, CompactionTask, RewriteResult

lance = pytest.importorskip("lance")
pytest.importorskip("lance.commit")
pytest.importorskip("lance.optimize")


def _both(tmp_path, table, **kwargs):
    return (
        lancepy.write_dataset(table, tmp_path / "ours", **kwargs),
        lance.write_dataset(table, tmp_path / "theirs", **kwargs),
    )


def _ids(fragments):
    return [f.id for f in fragments]


@pytest.mark.parametrize(
    "options",
    [
        {"target_rows_per_fragment": 400},
        {"target_rows_per_fragment": 10_000},
        {"target_rows_per_fragment": 400, "excluded_fragment_ids": [1]},
        {"target_rows_per_fragment": 400, "max_source_fragments": 2},
        {"target_rows_per_fragment": 400, "materialize_deletions_threshold": 0.05, "num_threads": 1},
    ],
)
def test_plan_execute_commit_as_pylance(tmp_path, options):
    table = pa.table({"a": range(1000), "b": [str(i) for i in range(1000)]})
    ours, theirs = _both(tmp_path, table, max_rows_per_file=200)
    for ds in (ours, theirs):
        ds.delete("a % 17 = 0")
    plans = [lib.optimize.Compaction.plan(ds, options) for lib, ds in ((lancepy, ours), (lance, theirs))]
    assert plans[0].read_version == plans[1].read_version
    assert [_ids(t.fragments) for t in plans[0].tasks] == [_ids(t.fragments) for t in plans[1].tasks]
    assert repr(plans[0]) == repr(plans[1])
    results = [[t.execute(ds) for t in p.tasks] for p, ds in zip(plans, (ours, theirs))]
    for r0, r1 in zip(*results):
        assert r0.read_version == r1.read_version
        assert _ids(r0.original_fragments) == _ids(r1.original_fragments)
        assert [f.num_rows for f in r0.new_fragments] == [f.num_rows for f in r1.new_fragments]
        assert str(r0.metrics) == str(r1.metrics)
    assert ours.version == theirs.version  # executing commits nothing
    m0 = Compaction.commit(ours, results[0])
    m1 = lance.optimize.Compaction.commit(theirs, results[1])
    assert str(m0) == str(m1)
    assert ours.version == theirs.version
    assert [(f.fragment_id, f.count_rows()) for f in ours.get_fragments()] == [
        (f.fragment_id, f.count_rows()) for f in theirs.get_fragments()
    ]
    assert ours.to_table() == theirs.to_table()
    assert lance.dataset(tmp_path / "ours").to_table() == theirs.to_table()


def test_compact_files_versions_as_pylance(tmp_path):
    table = pa.table({"a": range(800)})
    ours, theirs = _both(tmp_path, table, max_rows_per_file=200)
    m0 = ours.optimize.compact_files(target_rows_per_fragment=400)
    m1 = theirs.optimize.compact_files(target_rows_per_fragment=400)
    assert str(m0) == str(m1)
    # ReserveFragments, then Rewrite.
    assert ours.version == theirs.version == 3
    assert [f.fragment_id for f in ours.get_fragments()] == [f.fragment_id for f in theirs.get_fragments()]


def test_plans_tasks_results_pickle(tmp_path):
    ours = lancepy.write_dataset(pa.table({"a": range(800)}), tmp_path / "ds", max_rows_per_file=200)
    plan = Compaction.plan(ours, {"target_rows_per_fragment": 400})
    assert isinstance(plan, CompactionPlan) and plan.num_tasks() == 2
    assert repr(plan) == "CompactionPlan(read_version=1, tasks=<2 compaction tasks>)"
    assert pickle.loads(pickle.dumps(plan)) == plan
    task = pickle.loads(pickle.dumps(plan.tasks[0]))
    assert isinstance(task, CompactionTask) and task == plan.tasks[0] and task != plan.tasks[1]
    assert task.fragments == [f.metadata for f in ours.get_fragments()[:2]]
    result = task.execute(ours)
    again = pickle.loads(pickle.dumps(result))
    assert isinstance(again, RewriteResult) and again == result
    assert re.match(r"RewriteResult\(read_version=1, new_fragments=\[.+\], old_fragments=\[.+\]\)", repr(result))
    assert RewriteResult.from_json(result.json()) == result
    assert CompactionPlan.from_json(plan.json()) == plan
    metrics = Compaction.commit(ours, [again])
    assert (metrics.fragments_removed, metrics.fragments_added) == (2, 1)
    assert ours.version == 3 and ours.count_rows() == 800


def test_task_of_an_older_version_reads_that_version(tmp_path):
    ours = lancepy.write_dataset(pa.table({"a": range(400)}), tmp_path / "ds", max_rows_per_file=100)
    plan = Compaction.plan(ours, {"target_rows_per_fragment": 400})
    lancepy.write_dataset(pa.table({"a": range(400, 500)}), tmp_path / "ds", mode="append")
    latest = lancepy.dataset(tmp_path / "ds")
    result = plan.tasks[0].execute(latest)
    assert result.read_version == 1 and sum(f.physical_rows for f in result.new_fragments) == 400
    Compaction.commit(latest, [result])
    assert sorted(latest.to_table().column("a").to_pylist()) == list(range(500))


def test_commit_conflicts_as_pylance(tmp_path):
    ours, theirs = _both(tmp_path, pa.table({"a": range(800)}), max_rows_per_file=200)
    results = []
    for lib, ds in ((lancepy, ours), (lance, theirs)):
        plan = lib.optimize.Compaction.plan(ds, {"target_rows_per_fragment": 400})
        results.append([t.execute(ds) for t in plan.tasks])
        ds.delete("a = 5")
    with pytest.raises(OSError):
        lance.optimize.Compaction.commit(theirs, results[1])
    with pytest.raises(CommitConflictError):
        Compaction.commit(ours, results[0])
    assert ours.count_rows() == 799


def test_indexed_and_unindexed_fragments_are_not_merged(tmp_path):
    rng = np.random.default_rng(0)
    first, second = (
        pa.table({"vector": lancepy.vector.vec_to_table(rng.random((300, 8))).column(0), "id": range(s, s + 300)})
        for s in (0, 300)
    )
    made = []
    for lib, name in ((lancepy, "ours"), (lance, "theirs")):
        ds = lib.write_dataset(first, tmp_path / name, max_rows_per_file=150)
        ds.create_index("vector", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=2)
        ds = lib.write_dataset(second, tmp_path / name, mode="append", max_rows_per_file=150)
        ds.delete("id % 4 = 0")
        ds.optimize.compact_files()
        made.append(ds)
    ours, theirs = made
    assert len(ours.get_fragments()) == len(theirs.get_fragments()) == 2
    assert [f.count_rows() for f in ours.get_fragments()] == [f.count_rows() for f in theirs.get_fragments()]
    assert ours.version == theirs.version
    assert len(ours.list_indices()[0]["fragment_ids"]) == len(theirs.list_indices()[0]["fragment_ids"]) == 1
    # The remapped index still finds the rows it holds.
    for i in (1, 150, 299):
        q = {"column": "vector", "q": first.column("vector")[i].values.to_numpy(), "k": 1}
        assert ours.to_table(nearest=q, columns=["id"]).column("id").to_pylist() == [i]


def test_options_refused(tmp_path):
    ours, theirs = _both(tmp_path, pa.table({"a": range(10)}))
    with pytest.raises(ValueError, match="Invalid compaction option: bogus"):
        lance.optimize.Compaction.plan(theirs, {"bogus": 1})
    with pytest.raises(InvalidArgumentError, match="Invalid compaction option: bogus"):
        Compaction.plan(ours, {"bogus": 1})
    with pytest.raises(NotSupportedError, match="defer_index_remap"):
        Compaction.plan(ours, {"defer_index_remap": True})
    with pytest.raises(NotSupportedError, match="compaction_mode"):
        Compaction.plan(ours, {"compaction_mode": "force_binary_copy"})
    with pytest.raises(InvalidArgumentError):
        Compaction.commit(ours, ["not a result"])
    assert str(Compaction.commit(ours, [])) == str(lance.optimize.Compaction.commit(theirs, []))
    assert ours.version == theirs.version == 1


def test_pylance_module_names():
    assert lancepy.lance.Compaction is Compaction
    assert lancepy.lance.RewriteResult is RewriteResult
    for name in ("Compaction", "CompactionMetrics", "CompactionPlan", "CompactionTask", "RewriteResult"):
        assert hasattr(lance.optimize, name) and hasattr(lancepy.optimize, name)
    assert set(lance.optimize.CompactionOptions.__annotations__) == set(
        lancepy.optimize.CompactionOptions.__annotations__
    )
    assert lancepy.commit.CommitConflictError is CommitConflictError
    for lib in (lance.commit, lancepy.commit):
        e = lib.CommitConflictError("lost", retryable=False)
        assert isinstance(e, OSError) and str(e) == "lost" and e.retryable is False
        assert lib.CommitConflictError().retryable is True


def test_explain_plan_names_the_exact_search_when_pylance_does(tmp_path):
    """Exact search (pylance's ``KNNVectorDistance``) appears in the plan when, and only
    when, some fragments are not covered by the index (or there is no index)."""
    rng = np.random.default_rng(1)
    vectors = lancepy.vector.vec_to_table(rng.random((300, 8))).column(0)
    table = pa.table({"vector": vectors, "id": range(300)})
    q = {"column": "vector", "q": rng.random(8), "k": 5}
    seen = []
    for lib, name in ((lancepy, "ours"), (lance, "theirs")):
        ds = lib.write_dataset(table, tmp_path / name, max_rows_per_file=150)
        plans = [ds.scanner(nearest=q).explain_plan()]
        ds.create_index("vector", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=2)
        plans.append(ds.scanner(nearest=q).explain_plan())
        ds = lib.write_dataset(table, tmp_path / name, mode="append")
        plans.append(ds.scanner(nearest=q).explain_plan())
        ds.optimize.compact_files()
        plans.append(ds.scanner(nearest=q).explain_plan())
        seen.append(["KNNVectorDistance" in p for p in plans])
    assert seen[0] == seen[1] == [True, False, True, True]
