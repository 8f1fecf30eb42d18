"""Columns rewritten in place: fragments of some of a dataset's columns
(``write_fragments``), committed as a ``DataReplacement`` or a ``Merge``. Each case is run by
lancepy and by pylance 14 on equal datasets and compared: the data files each fragment ends
with, the rows both libraries read, the index coverage (an index on a rewritten column stops
answering for the fragments rewritten: its values there are the old ones) and, under stable
row ids, the version each row was last updated in. An index built while its column is rewritten
is refused or rebased as pylance does it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
pytestmark = pytest.mark.interop

LIBS = [lancepy, lance]


def _name(lib: Any) -> str:
    return "lancepy" if lib is lancepy else "pylance"


def _setup(lib: Any, uri: str, *, stable: bool = False, index: Optional[str] = None) -> Any:
    """Two fragments of 3 rows: ``a`` and ``b`` in one file, ``c`` (computed) in another, ``e``
    added without data (no file)."""
    t = pa.table({"a": pa.array(range(6), pa.int64()), "b": pa.array([x * 10 for x in range(6)], pa.int64())})
    lib.write_dataset(t, uri, max_rows_per_file=3, enable_stable_row_ids=stable)
    lib.dataset(uri).add_columns({"c": "a * 100"})
    lib.dataset(uri).add_columns(pa.schema([pa.field("e", pa.int64())]))
    if index is not None:
        lib.dataset(uri).create_scalar_index(index, "BTREE")
    return lib.dataset(uri)


def _group(lib: Any, uri: str, columns: List[str], fragment_id: int = 0) -> Any:
    new = pa.table({c: pa.array([7, 8, 9], pa.int64()) for c in columns})
    (frag,) = lib.fragment.write_fragments(new, uri)
    (file,) = frag.files
    return lib.LanceOperation.DataReplacementGroup(fragment_id, file)


def _state(uri: str, stable: bool) -> List[Tuple[Any, ...]]:
    """What each library reads: every row (with its last-updated version under stable row
    ids), some filtered scans, and each index's fragments."""
    cols = ["a", "b", "c", "e"] + (["_rowid", "_row_last_updated_at_version"] if stable else [])
    out: List[Tuple[Any, ...]] = []
    for reader in LIBS:
        ds = reader.dataset(uri)
        out.append((
            _name(reader),
            ds.to_table(columns=cols).to_pydict(),
            [ds.to_table(columns=["a"], filter=f).column("a").to_pylist() for f in ("b = 0", "b = 8", "b >= 10", "c = 8")],
            sorted((i["name"], sorted(i.get("fragment_ids", []))) for i in ds.list_indices()),
        ))
    return out


def _layout(uri: str) -> List[List[List[int]]]:
    return [[list(f.fields) for f in frag.metadata.files] for frag in lance.dataset(uri).get_fragments()]


@pytest.mark.parametrize(
    "columns",
    [["b"], ["a", "b"], ["b", "a"], ["b", "c"], ["c"], ["e"], ["a", "b", "c"]],
    ids=["part of a file", "a whole file", "a whole file reordered", "across files", "a file of its own",
         "a column without data", "every column"],
)
@pytest.mark.parametrize("stable", [False, True], ids=["row addresses", "stable row ids"])
def test_replacement_equals_pylance(tmp_path: Path, columns: List[str], stable: bool) -> None:
    results: Dict[str, Any] = {}
    for lib in LIBS:
        uri = str(tmp_path / _name(lib))
        ds = _setup(lib, uri, stable=stable, index="b")
        op = lib.LanceOperation.DataReplacement([_group(lib, uri, columns)])
        lib.LanceDataset.commit(uri, op, read_version=ds.version)
        results[_name(lib)] = (_layout(uri), _state(uri, stable))
    assert results["lancepy"] == results["pylance"]
    layout, ((_, rows, filtered, indices), _) = results["lancepy"]
    for c in columns:
        assert rows[c][:3] == [7, 8, 9] and rows[c][3:] != [7, 8, 9]
    if "b" in columns:  # (the index no longer answers for the replaced fragment)
        assert indices == [("b_idx", [1])] and filtered[0] == [] and filtered[1] == [rows["a"][1]]
    if stable:
        assert rows["_row_last_updated_at_version"][:3] == [5] * 3
        assert rows["_row_last_updated_at_version"][3:] != [5] * 3


def test_a_replacement_that_aligns_with_no_file_is_refused_by_both(tmp_path: Path) -> None:
    for lib in LIBS:
        uri = str(tmp_path / _name(lib))
        ds = _setup(lib, uri)
        op = lib.LanceOperation.DataReplacement([_group(lib, uri, ["b", "e"])])
        with pytest.raises(Exception, match="no changes were made") as info:
            lib.LanceDataset.commit(uri, op, read_version=ds.version)
        if lib is lancepy:
            assert isinstance(info.value, InvalidArgumentError)
        assert lib.dataset(uri).version == ds.version


def test_new_files_of_other_fields_are_refused(tmp_path: Path) -> None:
    uri = str(tmp_path / "d")
    ds = _setup(lancepy, uri)
    op = lancepy.LanceOperation.DataReplacement([_group(lancepy, uri, ["b"]), _group(lancepy, uri, ["c"], 1)])
    with pytest.raises(InvalidArgumentError, match="must have the same fields"):
        lancepy.LanceDataset.commit(uri, op, read_version=ds.version)
    assert lancepy.dataset(uri).version == ds.version


@pytest.mark.parametrize("writer", LIBS, ids=_name)
def test_fragments_of_some_columns(tmp_path: Path, writer: Any) -> None:
    """``write_fragments`` of some of the columns, in any order: a file of just those fields
    under the dataset's ids (as pylance writes it); appended, the other columns read null."""
    uri = str(tmp_path / "d")
    t = pa.table({"a": pa.array([1, 2], pa.int64()), "b": pa.array([3, 4], pa.int64()), "s": pa.array(["x", "y"])})
    lance.write_dataset(t, uri)
    frags = writer.fragment.write_fragments(pa.table({"s": ["z"], "a": pa.array([5], pa.int64())}), uri)
    assert [list(f.fields) for f in frags[0].files] == [[2, 0]]
    assert [list(f.column_indices) for f in frags[0].files] == [[0, 1]]
    writer.LanceDataset.commit(uri, writer.LanceOperation.Append(frags), read_version=1)
    for reader in LIBS:
        assert reader.dataset(uri).to_table().to_pydict() == {"a": [1, 2, 5], "b": [3, 4, None], "s": ["x", "y", "z"]}
    with pytest.raises(Exception, match="(?i)unexpected|schema"):
        writer.fragment.write_fragments(pa.table({"z": pa.array([1], pa.int64())}), uri)


@pytest.mark.parametrize("stable", [False, True], ids=["row addresses", "stable row ids"])
def test_merge_that_moves_an_indexed_column_withdraws_the_index(tmp_path: Path, stable: bool) -> None:
    """A ``Merge`` whose fragment 0 reads ``b`` from a new file (its old file keeps ``a``
    only): the index on ``b`` stops covering fragment 0, as pylance's does."""
    results = {}
    for lib in LIBS:
        uri = str(tmp_path / _name(lib))
        ds = _setup(lib, uri, stable=stable, index="b")
        group = _group(lib, uri, ["b"])
        frags = [f.metadata for f in ds.get_fragments()]
        files = [type(group.new_file)(**{**_file_args(d), "fields": [x if x != 1 else -2 for x in d.fields]})
                 for d in frags[0].files] + [group.new_file]
        frags[0] = _with_files(lib, frags[0], files)
        lib.LanceDataset.commit(uri, lib.LanceOperation.Merge(frags, ds.schema), read_version=ds.version)
        results[_name(lib)] = _state(uri, stable)
    assert results["lancepy"] == results["pylance"]
    assert results["lancepy"][0][3] == [("b_idx", [1])]


def _file_args(d: Any) -> Dict[str, Any]:
    names = ["path", "fields", "column_indices", "file_major_version", "file_minor_version", "file_size_bytes"]
    return {n: getattr(d, n) for n in names}


def _with_files(lib: Any, frag: Any, files: List[Any]) -> Any:
    """`frag` (a ``FragmentMetadata``) with other data files."""
    return type(frag)(frag.id, files, frag.physical_rows, frag.deletion_file, frag.row_id_meta,
                      frag.created_at_version_meta, frag.last_updated_at_version_meta)


def _failure(action) -> List[BaseException]:
    try:
        action()
        return []
    except BaseException as e:  # noqa: BLE001 - reported by the caller
        return [e]


def _interrupting(action):
    """A commit lock that runs `action` (another writer's commit) the first time it is taken:
    the holder then finds its version taken and rebases over that commit."""
    import contextlib

    done: List[bool] = []
    failures: List[BaseException] = []

    @contextlib.contextmanager
    def lock(_version):
        if not done:
            done.append(True)
            # (in a thread of its own: pylance calls the lock from inside its async runtime)
            worker = threading.Thread(target=lambda: failures.extend(_failure(action)))
            worker.start()
            worker.join()
            assert not failures, failures
        yield

    return lock


@pytest.mark.parametrize("concurrent", ["DataReplacement", "Update"])
def test_an_index_built_while_its_column_is_rewritten(tmp_path: Path, concurrent: str) -> None:
    """``create_scalar_index`` whose commit meets a concurrent in-place rewrite of the indexed
    column: after a ``DataReplacement`` it is refused, after an ``Update`` of some columns
    (``update_columns``) the index is committed without the rewritten fragments, as
    pylance does both. The rows a filter answers stay right."""
    seen = {}
    for lib in LIBS:
        uri = str(tmp_path / _name(lib))
        _setup(lib, uri)

        def rewrite() -> None:
            ds = lib.dataset(uri)
            if concurrent == "DataReplacement":
                op = lib.LanceOperation.DataReplacement([_group(lib, uri, ["b"])])
            else:
                frag, fields = ds.get_fragment(0).update_columns(pa.table({"_rowid": pa.array([1], pa.uint64()),
                                                                           "b": pa.array([8], pa.int64())}))
                op = lib.LanceOperation.Update(updated_fragments=[frag], fields_modified=fields)
            lib.LanceDataset.commit(uri, op, read_version=ds.version)

        ds = lib.dataset(uri, commit_lock=_interrupting(rewrite))
        try:
            ds.create_scalar_index("b", "BTREE")
            outcome = "committed"
        except Exception as e:  # noqa: BLE001 - compared between the libraries
            outcome = "refused" if "onflict" in str(e) else f"{type(e).__name__}: {e}"
        seen[_name(lib)] = (outcome, _state(uri, False))
    assert seen["lancepy"] == seen["pylance"]
    outcome, ((_, rows, filtered, indices), _) = seen["lancepy"]
    assert outcome == ("refused" if concurrent == "DataReplacement" else "committed")
    assert rows["b"][1] == 8 and filtered[1] == [1] and filtered[0] == ([] if concurrent == "DataReplacement" else [0])
    assert indices == ([] if concurrent == "DataReplacement" else [("b_idx", [1])])


CONCURRENT = {
    "append": lambda lib, uri: lib.write_dataset(pa.table({"a": pa.array([9], pa.int64()), "b": pa.array([90], pa.int64())}),
                                                 uri, mode="append"),
    "delete in the fragment": lambda lib, uri: lib.dataset(uri).delete("a = 2"),
    "delete the fragment": lambda lib, uri: lib.dataset(uri).delete("a < 3"),
    "update moving rows": lambda lib, uri: lib.dataset(uri).update({"b": "b + 1"}, where="a = 1"),
    "replace another fragment": lambda lib, uri: lib.LanceDataset.commit(
        uri, lib.LanceOperation.DataReplacement([_group(lib, uri, ["b"], 1)]), read_version=lib.dataset(uri).version),
    "replace the same column": lambda lib, uri: lib.LanceDataset.commit(
        uri, lib.LanceOperation.DataReplacement([_group(lib, uri, ["b"], 0)]), read_version=lib.dataset(uri).version),
    "replace another column": lambda lib, uri: lib.LanceDataset.commit(
        uri, lib.LanceOperation.DataReplacement([_group(lib, uri, ["c"], 0)]), read_version=lib.dataset(uri).version),
    "index the column": lambda lib, uri: lib.dataset(uri).create_scalar_index("b", "BTREE"),
    "index another column": lambda lib, uri: lib.dataset(uri).create_scalar_index("a", "BTREE"),
    "drop the column": lambda lib, uri: lib.dataset(uri).drop_columns(["b"]),
    "drop another column": lambda lib, uri: lib.dataset(uri).drop_columns(["c"]),
    "compact": lambda lib, uri: lib.dataset(uri).optimize.compact_files(target_rows_per_fragment=100),
    "config": lambda lib, uri: lib.dataset(uri).update_config({"k": "v"}),
}


@pytest.mark.parametrize("concurrent", sorted(CONCURRENT))
def test_a_replacement_over_a_concurrent_commit(tmp_path: Path, concurrent: str) -> None:
    """A ``DataReplacement`` of column ``b`` of fragment 0 whose commit meets another
    writer's commit: refused or rebased as pylance 14 decides, with the same rows after."""
    seen = {}
    for lib in LIBS:
        uri = str(tmp_path / _name(lib))
        ds = _setup(lib, uri)
        op = lib.LanceOperation.DataReplacement([_group(lib, uri, ["b"])])
        try:
            lib.LanceDataset.commit(uri, op, read_version=ds.version,
                                    commit_lock=_interrupting(lambda: CONCURRENT[concurrent](lib, uri)))
            outcome = "committed"
        except Exception as e:  # noqa: BLE001 - compared between the libraries
            outcome = "refused" if "onflict" in str(e) else f"{type(e).__name__}: {e}"
        latest = lib.dataset(uri)
        seen[_name(lib)] = (outcome, latest.version, _canonical_rows(latest))
    assert seen["lancepy"] == seen["pylance"]


def _canonical_rows(ds: Any) -> Dict[str, List[Any]]:
    return ds.to_table().sort_by("a").to_pydict()


def test_a_file_of_another_length_is_refused_before_committing(tmp_path: Path) -> None:
    """pylance commits a replacing file with fewer rows than its fragment, and every read of
    the fragment then fails; lancepy refuses it and leaves the dataset as it was."""
    uri = str(tmp_path / "d")
    ds = _setup(lancepy, uri)
    (short,) = lancepy.fragment.write_fragments(pa.table({"b": pa.array([7, 8], pa.int64())}), uri)
    op = lancepy.LanceOperation.DataReplacement([lancepy.LanceOperation.DataReplacementGroup(0, short.files[0])])
    with pytest.raises(InvalidArgumentError, match="holds 2 rows, but fragment 0 has 3"):
        lancepy.LanceDataset.commit(uri, op, read_version=ds.version)
    missing = lancepy.LanceOperation.DataReplacement(
        [lancepy.LanceOperation.DataReplacementGroup(0, type(short.files[0])(path="gone.lance", fields=[1],
                                                                             column_indices=[0], file_major_version=2,
                                                                             file_minor_version=2))])
    with pytest.raises(lancepy.exceptions.LanceError):
        lancepy.LanceDataset.commit(uri, missing, read_version=ds.version)
    assert lancepy.dataset(uri).version == ds.version
    assert lancepy.dataset(uri).to_table().to_pydict() == ds.to_table().to_pydict()
