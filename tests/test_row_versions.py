"""The version each row was created and last updated in (``_row_created_at_version`` /
``_row_last_updated_at_version``), on datasets with stable row ids: what lancepy writes for
each operation equals what pylance 14 writes (read by both libraries, both directions), and
the columns read and filter as pylance's do. Random sequences of operations are compared in
``test_differential_sequences.py``."""

from __future__ import annotations

import shutil
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy import _lancepy
from lancepy.exceptions import CorruptFileError

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
pytestmark = pytest.mark.interop

VERSIONS = ["_rowid", "_row_created_at_version", "_row_last_updated_at_version"]


def _versions(ds: Any) -> Dict[str, List[int]]:
    return ds.to_table(columns=VERSIONS).sort_by("_rowid").to_pydict()


def _table(ids: List[int]) -> pa.Table:
    return pa.table({"id": ids, "v": [float(i) for i in ids], "k": pa.array([i % 3 for i in ids], pa.int32())})


STEPS: List[Tuple[str, Callable[[Any, str], Any]]] = [
    ("append", lambda lib, d: lib.write_dataset(_table([6, 7, 8]), d, mode="append")),
    ("update", lambda lib, d: lib.dataset(d).update({"v": "v + 10"}, where="id = 2 OR id = 7")),
    ("delete", lambda lib, d: lib.dataset(d).delete("id = 4")),
    ("upsert", lambda lib, d: lib.dataset(d).merge_insert("id").when_matched_update_all()
     .when_not_matched_insert_all().execute(_table([1, 9, 10]))),
    ("computed column", lambda lib, d: lib.dataset(d).add_columns({"w": "v * 2"})),
    ("null column", lambda lib, d: lib.dataset(d).add_columns(pa.field("n", pa.int32()))),
    ("rename", lambda lib, d: lib.dataset(d).alter_columns({"path": "w", "name": "w2"})),
    ("drop", lambda lib, d: lib.dataset(d).drop_columns(["w2"])),
    ("join", lambda lib, d: lib.dataset(d).merge(pa.table({"id": [1, 8], "z": [1, 2]}), "id")),
    ("compact", lambda lib, d: lib.dataset(d).optimize.compact_files()),
    ("update after compaction", lambda lib, d: lib.dataset(d).update({"v": "v + 1"}, where="id = 9")),
    ("upsert with delete", lambda lib, d: lib.dataset(d).merge_insert("id").when_matched_update_all()
     .when_not_matched_by_source_delete("id > 8").execute(_table([3, 5]))),
    ("restore", lambda lib, d: lib.dataset(d, version=3).restore()),
    ("overwrite", lambda lib, d: lib.write_dataset(_table([20, 21]), d, mode="overwrite")),
]


def _run(lib: Any, uri: str) -> List[Tuple[str, int, Dict[str, List[int]], Dict[str, List[int]]]]:
    """Each step of :data:`STEPS` by `lib`, then the versions as each library reads them."""
    lib.write_dataset(_table(list(range(6))), uri, enable_stable_row_ids=True, max_rows_per_file=4)
    out = []
    for name, step in STEPS:
        step(lib, uri)
        out.append((name, lance.dataset(uri).version, _versions(lance.dataset(uri)), _versions(lancepy.dataset(uri))))
    return out


def test_each_operation_records_the_versions_pylance_records(tmp_path) -> None:
    theirs = _run(lance, str(tmp_path / "pylance"))
    ours = _run(lancepy, str(tmp_path / "lancepy"))
    for (name, version, want, want_by_us), (_, our_version, got_by_them, got) in zip(theirs, ours):
        assert our_version == version, name
        assert want_by_us == want, f"{name}: lancepy reads pylance's dataset otherwise"
        assert got == want, f"{name}: lancepy writes\n{got}\npylance writes\n{want}"
        assert got_by_them == want, f"{name}: pylance reads lancepy's dataset otherwise"
    # (the sequence exercised the interesting cases: rows kept through updates, rows inserted
    # later, new columns for every row)
    upsert = ours[3][3]
    assert len(set(upsert["_row_created_at_version"])) >= 3 and len(set(upsert["_row_last_updated_at_version"])) >= 3


def test_versions_in_reads_and_filters_answer_as_pylance(tmp_path) -> None:
    uri = str(tmp_path / "d")
    lance.write_dataset(_table(list(range(6))), uri, enable_stable_row_ids=True, max_rows_per_file=4)
    lance.write_dataset(_table([6, 7]), uri, mode="append")
    lance.dataset(uri).update({"v": "v + 1"}, where="id = 3")
    cols = ["id", "_row_created_at_version", "_row_last_updated_at_version"]
    reads: List[Tuple[str, Callable[[Any], Any]]] = [
        ("take", lambda ds: ds.take([0, 6, 7], columns=cols).to_pydict()),
        ("fragment", lambda ds: ds.get_fragments()[1].to_table(columns=cols).to_pydict()),
        ("limit/offset", lambda ds: ds.to_table(columns=cols, limit=3, offset=4).to_pydict()),
        ("batches", lambda ds: [b.to_pydict() for b in ds.to_batches(columns=cols, batch_size=3)]),
        ("with row id", lambda ds: ds.scanner(columns=["_row_last_updated_at_version"], with_row_id=True).to_table().to_pydict()),
        ("filter", lambda ds: ds.to_table(columns=["id"], filter="_row_created_at_version > 1").to_pydict()),
        ("filter and", lambda ds: ds.to_table(columns=cols, filter="_row_last_updated_at_version = 3 OR id < 1").to_pydict()),
        ("filter limit", lambda ds: ds.to_table(columns=["id"], filter="_row_created_at_version = 1", limit=2, offset=1).to_pydict()),
        ("filtered batches", lambda ds: [b.to_pydict() for b in ds.to_batches(columns=["id"], filter="_row_created_at_version = 2", batch_size=1)]),
        ("count", lambda ds: ds.count_rows("_row_last_updated_at_version >= 2")),
        ("nearest prefilter", lambda ds: ds.to_table(
            columns=["id"], nearest={"column": "vec", "q": np.zeros(2, np.float32), "k": 3},
            filter="_row_created_at_version = 2", prefilter=True).to_pydict()),
    ]
    # (a vector column for the nearest-neighbour read, joined by pylance)
    lance.dataset(uri).merge(pa.table({"id": list(range(8)), "vec": pa.FixedSizeListArray.from_arrays(
        pa.array(np.repeat(np.arange(8, dtype=np.float32), 2)), 2)}), "id")
    theirs, ours = lance.dataset(uri), lancepy.dataset(uri)
    for name, read in reads:
        want, got = read(theirs), read(ours)
        if isinstance(want, dict):
            want.pop("_distance", None)
            got.pop("_distance", None)
        assert got == want, name
    # A delete by version, on copies: the same rows go.
    copy_a, copy_b = str(tmp_path / "a"), str(tmp_path / "b")
    shutil.copytree(uri, copy_a)
    shutil.copytree(uri, copy_b)
    lance.dataset(copy_a).delete("_row_created_at_version = 2")
    lancepy.dataset(copy_b).delete("_row_created_at_version = 2")
    assert _versions(lancepy.dataset(copy_b)) == _versions(lance.dataset(copy_a))


def test_datasets_without_stable_row_ids_read_version_one(tmp_path) -> None:
    """Without stable row ids no sequence is written; both libraries read 1 for every row."""
    for lib in (lance, lancepy):
        uri = str(tmp_path / lib.__name__)
        lib.write_dataset(_table([0, 1]), uri)
        lib.write_dataset(_table([2]), uri, mode="append")
        lib.dataset(uri).update({"v": "v + 1"}, where="id = 0")
        cols = ["id", "_row_created_at_version", "_row_last_updated_at_version"]
        for reader in (lance, lancepy):
            t = reader.dataset(uri).to_table(columns=cols).sort_by("id").to_pydict()
            assert t["_row_created_at_version"] == [1, 1, 1] and t["_row_last_updated_at_version"] == [1, 1, 1]


def test_a_sequence_that_does_not_cover_its_fragment_is_refused() -> None:
    one_run = _lancepy.encode_row_versions(np.array([1, 1, 2], dtype="<u8").tobytes())
    assert np.frombuffer(_lancepy.decode_row_versions(one_run, 3), "<u8").tolist() == [1, 1, 2]
    with pytest.raises(CorruptFileError, match="covers 3 rows of a fragment of 4"):
        _lancepy.decode_row_versions(one_run, 4)
    with pytest.raises(CorruptFileError):
        _lancepy.decode_row_versions(b"\x0a\x03\xff\xff\xff", 1)
