"""Two writers at once, pylance 14 the oracle: for every pair of operations (appends,
deletes, updates, upserts, new and dropped columns, compaction, indices, config, column
replacements, restore, overwrite, tags), operation A is committed while operation B commits
first (B runs inside A's commit lock, so A finds its version taken and must rebase over B or
give up). Each library does the same on a dataset of its own; they must agree on whether A
committed, was refused as retryable or as incompatible (``CommitConflictError.retryable``
against pylance's "Retryable commit conflict" / "Incompatible transaction"), on the version
reached, the rows (with their stable ids where the dataset has them), a filtered scan, and
the indices with the fragments they cover. Each pair runs on a plain dataset and on one with
stable row ids and a BTREE index."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import CommitConflictError

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
pytestmark = pytest.mark.interop

LIBS = [lancepy, lance]


def _base(lib: Any, uri: str, variant: str) -> None:
    """Three fragments of 4 rows; the ``indexed`` variant has stable row ids and a BTREE
    index on ``b`` (so that rebasing moves index coverage too)."""
    t = pa.table({"a": pa.array(range(12), pa.int64()), "b": pa.array([x * 10 for x in range(12)], pa.int64()),
                  "s": pa.array([f"s{x % 3}" for x in range(12)])})
    lib.write_dataset(t, uri, max_rows_per_file=4, enable_stable_row_ids=variant == "indexed")
    if variant == "indexed":
        lib.dataset(uri).create_scalar_index("b", "BTREE", name="b_pre")


def _replace_b(lib: Any, uri: str, fragment_id: int, **kw: Any) -> Any:
    (frag,) = lib.fragment.write_fragments(pa.table({"b": pa.array([7, 8, 9, 10], pa.int64())}), uri)
    op = lib.LanceOperation.DataReplacement([lib.LanceOperation.DataReplacementGroup(fragment_id, frag.files[0])])
    return lib.LanceDataset.commit(uri, op, read_version=lib.dataset(uri).version, **kw)


def _upsert(lib: Any, uri: str, **kw: Any) -> Any:
    source = pa.table({"a": pa.array([3, 50], pa.int64()), "b": pa.array([0, 0], pa.int64()), "s": ["u", "u"]})
    return lib.dataset(uri, **kw).merge_insert("a").when_matched_update_all().when_not_matched_insert_all().execute(source)


OPS: Dict[str, Callable[..., Any]] = {
    "append": lambda lib, uri, **kw: lib.write_dataset(
        pa.table({"a": pa.array([100], pa.int64()), "b": pa.array([1], pa.int64()), "s": ["n"]}), uri, mode="append", **kw),
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
    "overwrite": lambda lib, uri, **kw: lib.write_dataset(
        pa.table({"a": pa.array([1], pa.int64()), "b": pa.array([1], pa.int64()), "s": ["o"]}), uri, mode="overwrite", **kw),
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
    t = ds.to_table(with_row_id=variant == "indexed")
    names = sorted(t.column_names)
    rows = sorted(zip(*(t.column(n).to_pylist() for n in names)), key=repr)
    indices = sorted((i["name"], sorted(i.get("fragment_ids", []))) for i in ds.list_indices())
    filtered = sorted(ds.to_table(columns=["a"], filter="b > 50").column("a").to_pylist())
    return result, ds.version, names, rows, indices, filtered


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("variant", ["plain", "indexed"])
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
