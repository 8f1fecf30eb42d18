"""Two writers at once, pylance 14 the oracle: for every pair of operations (appends,
deletes, updates, upserts, new and dropped columns, compaction, indices, config, column
replacements, restore, overwrite, tags), operation A is committed while operation B commits
first (B runs inside A's commit lock, so A finds its version taken and must rebase over B or
give up). Each library does the same on a dataset of its own; they must agree on whether A
committed, was refused as retryable or as incompatible (``CommitConflictError.retryable``
against pylance's "Retryable commit conflict" / "Incompatible transaction"), on the version
reached, the rows (with their stable ids where the dataset has them), a filtered scan, and
the indices with the fragments they cover, nearest neighbours and full-text matches. Each pair
runs on a plain dataset, on one with stable row ids and a BTREE index, and on one with full-text
and vector indices."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import CommitConflictError

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
pytestmark = pytest.mark.interop

LIBS = [lancepy, lance]


def _vectors(n: int, seed: int = 0) -> pa.Array:
    values = np.random.default_rng(seed).standard_normal(n * 4).astype(np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(values), 4)


def _rows(a: List[int], b: List[int], s: List[str]) -> pa.Table:
    return pa.table({"a": pa.array(a, pa.int64()), "b": pa.array(b, pa.int64()), "s": pa.array(s),
                     "v": _vectors(len(a), seed=len(a))})


def _base(lib: Any, uri: str, variant: str) -> None:
    """Three fragments of 4 rows. The ``indexed`` variant has stable row ids and a BTREE
    index on ``b`` (so that rebasing moves index coverage too); the ``searchable`` one an
    INVERTED index on ``s`` and an IVF_FLAT index on the vectors ``v``."""
    t = _rows(list(range(12)), [x * 10 for x in range(12)], [f"s{x % 3} word{x}" for x in range(12)])
    lib.write_dataset(t, uri, max_rows_per_file=4, enable_stable_row_ids=variant == "indexed")
    if variant == "indexed":
        lib.dataset(uri).create_scalar_index("b", "BTREE", name="b_pre")
    if variant == "searchable":
        lib.dataset(uri).create_scalar_index("s", "INVERTED")
        lib.dataset(uri).create_index("v", "IVF_FLAT", num_partitions=2)


def _replace_b(lib: Any, uri: str, fragment_id: int, **kw: Any) -> Any:
    (frag,) = lib.fragment.write_fragments(pa.table({"b": pa.array([7, 8, 9, 10], pa.int64())}), uri)
    op = lib.LanceOperation.DataReplacement([lib.LanceOperation.DataReplacementGroup(fragment_id, frag.files[0])])
    return lib.LanceDataset.commit(uri, op, read_version=lib.dataset(uri).version, **kw)


def _upsert(lib: Any, uri: str, **kw: Any) -> Any:
    source = _rows([3, 50], [0, 0], ["u word5", "u"])
    return lib.dataset(uri, **kw).merge_insert("a").when_matched_update_all().when_not_matched_insert_all().execute(source)


OPS: Dict[str, Callable[..., Any]] = {
    "append": lambda lib, uri, **kw: lib.write_dataset(_rows([100], [1], ["n word5"]), uri, mode="append", **kw),
    "delete in fragment 0": lambda lib, uri, **kw: lib.dataset(uri, **kw).delete("a = 1"),
    "delete in fragment 1": lambda lib, uri, **kw: lib.dataset(uri, **kw).delete("a = 5"),
    "delete fragment 0": lambda lib, uri, **kw: lib.dataset(uri, **kw).delete("a < 4"),
    "update in fragment 0": lambda lib, uri, **kw: lib.dataset(uri, **kw).update({"b": "b + 1"}, where="a = 2"),
    "update in fragment 2": lambda lib, uri, **kw: lib.dataset(uri, **kw).update({"b": "b + 1"}, where="a = 9"),
    "upsert": _upsert,
    "add column": lambda lib, uri, **kw: lib.dataset(uri, **kw).add_columns({"c": "a * 2"}),
    "drop column": lambda lib, uri, **kw: lib.dataset(uri, **kw).drop_columns(["s"]),
    "compact": lambda lib, uri, **kw: lib.dataset(uri, **kw).optimize.compact_files(target_rows_per_fragment=100),
    "index b": lambda lib, uri, **kw: lib.dataset(uri, **kw).create_scalar_index("b", "BTREE"),
    "index a": lambda lib, uri, **kw: lib.dataset(uri, **kw).create_scalar_index("a", "BTREE"),
    "config k": lambda lib, uri, **kw: lib.dataset(uri, **kw).update_config({"k": "v"}),
    "config k2": lambda lib, uri, **kw: lib.dataset(uri, **kw).update_config({"k2": "w"}),
    "replace b of fragment 0": lambda lib, uri, **kw: _replace_b(lib, uri, 0, **kw),
    "replace b of fragment 1": lambda lib, uri, **kw: _replace_b(lib, uri, 1, **kw),
    "restore": lambda lib, uri, **kw: lib.dataset(uri, version=1, **kw).restore(),
    "overwrite": lambda lib, uri, **kw: lib.write_dataset(_rows([1], [1], ["o"]), uri, mode="overwrite", **kw),
    "tag": lambda lib, uri, **kw: lib.dataset(uri, **kw).tags.create("t", 1),
}


def _interrupting(action: Callable[[], Any]) -> Tuple[Callable[[int], Any], List[BaseException]]:
    """A commit lock that lets `action` (the other writer) commit the first time it is taken,
    in a thread of its own (pylance calls the lock from inside its async runtime)."""
    done: List[bool] = []
    failures: List[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            failures.append(e)

    @contextlib.contextmanager
    def lock(_version: int) -> Any:
        if not done:
            done.append(True)
            worker = threading.Thread(target=run)
            worker.start()
            worker.join()
        yield

    return lock, failures


def _outcome(lib: Any, uri: str, mine: str, theirs: str, variant: str) -> Tuple[Any, ...]:
    lock, failures = _interrupting(lambda: OPS[theirs](lib, uri))
    try:
        OPS[mine](lib, uri, commit_lock=lock)
        result = "committed"
    except CommitConflictError as e:
        result = "retryable conflict" if e.retryable else "incompatible"
    except Exception as e:  # noqa: BLE001 - compared between the libraries
        text = str(e)
        if "Retryable commit conflict" in text:
            result = "retryable conflict"
        elif "Incompatible transaction" in text:
            result = "incompatible"
        else:
            result = f"{type(e).__name__}: {text[:200]}"
    assert not failures, failures  # (the other writer's commit itself never fails)
    ds = lib.dataset(uri)
    t = ds.to_table(columns=[n for n in ds.schema.names if n != "v"], with_row_id=variant == "indexed")
    names = sorted(t.column_names)
    rows = sorted(zip(*(t.column(n).to_pylist() for n in names)), key=repr)
    indices = sorted((i["name"], sorted(i.get("fragment_ids", []))) for i in ds.list_indices())
    found = [sorted(ds.to_table(columns=["a"], filter="b > 50").column("a").to_pylist())]
    if variant == "searchable":
        near = {"column": "v", "q": np.ones(4, np.float32), "k": 3}
        found.append(sorted(ds.to_table(columns=["a"], nearest=near).column("a").to_pylist()))
        if any(i["type"] == "Inverted" for i in ds.list_indices()):
            found.append(sorted(ds.to_table(columns=["a"], full_text_query="word5").column("a").to_pylist()))
    return result, ds.version, names, rows, indices, found


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("variant", ["plain", "indexed", "searchable"])
@pytest.mark.parametrize("mine", sorted(OPS))
def test_an_operation_over_each_concurrent_commit_equals_pylance(tmp_path: Path, mine: str, variant: str) -> None:
    seen = {}
    for theirs in sorted(OPS):
        for lib in LIBS:
            uri = str(tmp_path / f"{len(seen)}-{lib.__name__}")
            _base(lib, uri, variant)
            seen[(theirs, lib.__name__)] = _outcome(lib, uri, mine, theirs, variant)
        ours, pylance = seen[(theirs, "lancepy")], seen[(theirs, "lance")]
        assert ours == pylance, f"{mine} over a concurrent {theirs}:\nlancepy {ours}\npylance {pylance}"
    results = {seen[(t, "lancepy")][0] for t in OPS}
    assert "committed" in results  # (every operation commits over some concurrent commit)
    if variant == "searchable" and mine not in ("overwrite", "restore"):  # (the full-text query ran)
        assert any(len(seen[(t, "lancepy")][5]) == 3 for t in OPS)


def test_an_append_planned_before_a_cast_reads_as_pylance_reads_it(tmp_path: Path) -> None:
    """A cast gives the column a new field id, as pylance's does, so an append written before
    it (committed after) holds the old id: its values of that column read as nulls in both
    libraries. lancepy kept the id and read the old file's int64 2**40 as the int32 0."""
    seen = {}
    for lib in LIBS:
        uri = str(tmp_path / lib.__name__)
        lib.write_dataset(pa.table({"a": pa.array(range(4), pa.int64()), "b": pa.array(range(4), pa.int64())}), uri)
        frags = lib.fragment.write_fragments(pa.table({"a": pa.array([9], pa.int64()), "b": pa.array([2**40], pa.int64())}), uri)
        lib.dataset(uri).alter_columns({"path": "b", "data_type": pa.int32()})
        lib.LanceDataset.commit(uri, lib.LanceOperation.Append(frags), read_version=1)
        layout = [[list(d.fields) for d in f.data_files()] for f in lance.dataset(uri).get_fragments()]
        seen[lib.__name__] = (layout, [r.dataset(uri).to_table().to_pydict() for r in LIBS])
    assert seen["lancepy"] == seen["lance"]
    assert seen["lancepy"][1][0] == {"a": [0, 1, 2, 3, 9], "b": [0, 1, 2, 3, None]}
    assert seen["lancepy"][0][0] == [[0, 1], [2]]


def test_an_index_built_concurrently_with_a_cast_of_its_column_goes(tmp_path: Path) -> None:
    """A cast committed over a concurrent index build on the cast column: the column has a
    new field id, so the index (on the old id) indexes values no column holds, and the
    cast's commit drops it, as pylance's does. lancepy kept it."""
    seen = {}
    for lib in LIBS:
        uri = str(tmp_path / lib.__name__)
        _base(lib, uri, "plain")
        lock, failures = _interrupting(lambda: OPS["index b"](lib, uri))
        lib.dataset(uri, commit_lock=lock).alter_columns({"path": "b", "data_type": pa.int32()})
        assert not failures
        ds = lib.dataset(uri)
        seen[lib.__name__] = (ds.version, [i["name"] for i in ds.list_indices()], ds.to_table(filter="b > 50").to_pydict())
    assert seen["lancepy"] == seen["lance"]
    assert seen["lancepy"][1] == []


@pytest.mark.parametrize("change", ["cast b", "drop b"])
def test_an_index_build_over_a_concurrent_cast_or_drop_of_its_column_is_refused(tmp_path: Path, change: str) -> None:
    """The build indexed the column's old field; after a concurrent cast (a new field id) or
    drop, that index would index values no column holds. pylance 14 commits it, and then
    cannot open the dataset's indices ("Index referenced a field with id 1 which did not
    exist"); lancepy refuses the commit as a retryable conflict and leaves a dataset both
    libraries read."""
    uri = str(tmp_path / "ds")
    _base(lancepy, uri, "plain")
    other = {
        "cast b": lambda: lancepy.dataset(uri).alter_columns({"path": "b", "data_type": pa.int32()}),
        "drop b": lambda: lancepy.dataset(uri).drop_columns(["b"]),
    }[change]
    lock, failures = _interrupting(other)
    with pytest.raises(CommitConflictError) as caught:
        lancepy.dataset(uri, commit_lock=lock).create_scalar_index("b", "BTREE")
    assert caught.value.retryable and not failures
    assert lancepy.dataset(uri).list_indices() == [] and lance.dataset(uri).list_indices() == []
    assert lance.dataset(uri).to_table().equals(lancepy.dataset(uri).to_table())
