"""Scalar index builds (BTREE, BITMAP, LABEL_LIST) in bounded memory: an external sort of the
indexed column, with build progress.

``memory_limit`` (MiB; default :data:`DEFAULT_MEMORY_LIMIT_MIB`, 1 GiB: pylance 14 takes the
option, for its INVERTED builds) is the build's working memory for the column. Sorting rows
takes about 2.5 times their size (the rows, the sort order, the sorted copy), so the column
is read a scan batch at a time and its rows (values and row addresses) are kept while they
are at most a third of the budget: a column that fits is indexed in memory as before (one
sort, the fastest way). Once they are more, the rows held are sorted into a *run*, spilled to
a file of a temporary local directory (Arrow IPC, batches of :data:`RUN_BATCH_ROWS` rows),
and so on; at the end the runs are merged k ways and the merged rows stream straight into
the index's pages (BTREE) or bitmaps (BITMAP, LABEL_LIST). The temporary directory is
removed whether the build succeeds or fails.

Memory while merging: a window of every run (together a quarter of the budget, but at least
one batch of each run), the rows taken from the windows in one step and their sorted copy
(each at most as much), plus the page or bitmaps being written. A LABEL_LIST build also
keeps the row addresses of its null lists (8 bytes each) until the file is written.

The order is the in-memory build's, so the files are the same: rows sorted by value (nulls
first, floats in IEEE total order), ties in scan order (floats' ties excepted: the
in-memory build's float sort is not stable, and neither is pylance's, so the order of rows
with one float value may differ; the pages' values and lookup do not). A run holds
consecutive scan rows and the merge takes ties from the earlier run first.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from lancepy._ops import bitmap as _bitmap
from lancepy._ops import btree as _btree
from lancepy.exceptions import InvalidArgumentError
from lancepy.progress import IndexProgress

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy._table.snapshot import DatasetView

#: The build's memory budget for the column when ``memory_limit`` is not given (MiB).
DEFAULT_MEMORY_LIMIT_MIB = 1024
#: Bytes per unit of ``memory_limit``.
MIB = 1 << 20
#: Rows per batch of a spilled run (the unit the merge reads).
RUN_BATCH_ROWS = _btree.BATCH_SIZE

Progress = Optional[Callable[[IndexProgress], None]]


def budget_bytes(memory_limit: Any) -> int:
    """The sort budget in bytes for ``memory_limit`` (MiB; ``None``: the default)."""
    if memory_limit is None:
        return DEFAULT_MEMORY_LIMIT_MIB * MIB
    if isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit <= 0:
        raise InvalidArgumentError(f"create_scalar_index(memory_limit=): a positive number of MiB, got {memory_limit!r}")
    return memory_limit * MIB


def comparable(values: pa.Array) -> pa.Array:
    """An array whose Arrow order (``pc.less``) is the index order of `values`' non-null
    values, null where they are: floats as their total-order int64 keys, temporal values
    as their integers, booleans as 0/1; other types as they are."""
    import numpy as np

    t = values.type
    if pa.types.is_floating(t):
        valid = None if not values.null_count else ~np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
        keys = _btree._float_order_key(values.fill_null(0) if values.null_count else values)
        return pa.array(keys, pa.int64(), mask=valid)
    if pa.types.is_temporal(t):
        return values.view(pa.int32() if t.bit_width == 32 else pa.int64())
    if pa.types.is_boolean(t):
        return values.cast(pa.uint8())
    return values


def _key(c: pa.Array, i: int) -> Any:
    s = c[i]
    return s.as_py() if s.is_valid else None


class ExternalSort:
    """Rows ``(values, ids)`` added a batch at a time, kept while they are at most a third of
    `budget` bytes, else spilled as sorted runs under a temporary directory (made in
    `tmp_dir`, default the system's). A context manager: leaving it removes the directory."""

    def __init__(self, dtype: pa.DataType, budget: int, tmp_dir: Optional[str] = None) -> None:
        self.dtype = dtype
        self.budget = budget
        #: the most bytes of rows held (a run): sorting them takes about 2.5 times as much
        self.run_bytes = max(1, budget // 3)
        self.rows = 0
        self._tmp_parent = tmp_dir
        self._dir: Optional[str] = None
        self._values: List[pa.Array] = []
        self._ids: List[pa.Array] = []
        self._held = 0
        #: spilled runs: (path, number of batches, bytes)
        self.runs: List[Tuple[str, int, int]] = []

    def __enter__(self) -> "ExternalSort":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Removes the spilled runs (and their directory)."""
        self._values, self._ids = [], []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    @property
    def spilled(self) -> bool:
        return bool(self.runs)

    def add(self, values: pa.Array, ids: pa.Array) -> None:
        if values.type != self.dtype:
            values = values.cast(self.dtype)
        self._values.append(values)
        self._ids.append(ids)
        self.rows += len(values)
        self._held += values.nbytes + ids.nbytes
        if self._held > self.run_bytes:
            self._spill()

    def held(self) -> Tuple[pa.Array, pa.Array]:
        """The rows held in memory (all of them when nothing was spilled), unsorted."""
        if not self._values:
            return pa.array([], self.dtype), pa.array([], pa.uint64())
        return pa.concat_arrays(self._values), pa.concat_arrays(self._ids)

    def _spill(self) -> None:
        values, ids = self.held()
        self._values, self._ids, self._held = [], [], 0
        if not len(values):
            return
        order = _btree.sort_order(values, stable=True)
        values, ids = values.take(order), ids.take(order)
        del order
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="lancepy-sort-", dir=self._tmp_parent)
        path = os.path.join(self._dir, f"run_{len(self.runs)}.arrow")
        schema = pa.schema([pa.field("values", self.dtype), pa.field("ids", pa.uint64())])
        batches = 0
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            for start in range(0, len(values), RUN_BATCH_ROWS):
                n = min(RUN_BATCH_ROWS, len(values) - start)
                writer.write_batch(pa.record_batch([values.slice(start, n), ids.slice(start, n)], schema=schema))
                batches += 1
        self.runs.append((path, batches, values.nbytes + ids.nbytes))

    def merged(self, progress: Progress = None, extra: Sequence[Any] = ()) -> Iterator[Tuple[pa.Array, pa.Array]]:
        """Every row added, sorted, in chunks ``(values, ids)`` (the rows still held are
        spilled as the last run first), merged with the rows of `extra` cursors (already in
        index order: an existing segment's, see :class:`_SegmentCursor`). Each step takes,
        from every run's window, the rows that sort before the smallest window end (ties to
        the earlier run), so at least one window is used up per step."""
        if self._values:
            self._spill()
        cursors = [_RunCursor(path, n) for path, n, _ in self.runs] + list(extra)
        total_bytes = sum(b for _, _, b in self.runs)
        total_batches = sum(n for _, n, _ in self.runs) or 1
        per_batch = max(1, total_bytes // total_batches)
        window = max(1, (self.budget // 4) // (per_batch * max(1, len(cursors))))
        done = 0
        if progress is not None:
            progress(IndexProgress("start", "merge_runs", 0, self.rows, "rows"))
        try:
            while True:
                live = [(r, c) for r, c in enumerate(cursors) if c.fill(window)]
                if not live:
                    break
                ends = [((k := _key(c.keys, len(c.keys) - 1)) is not None, k, r) for r, c in live]
                f_valid, f_key, f_run = min(ends)
                pieces_v, pieces_i = [], []
                for r, c in live:
                    if r == f_run:
                        n = len(c.keys)
                    elif not f_valid:
                        n = c.keys.null_count if r < f_run else 0
                    else:
                        op = pc.less_equal if r < f_run else pc.less
                        n = c.keys.null_count + (pc.sum(op(c.keys, pa.scalar(f_key, c.keys.type))).as_py() or 0)
                    if n:
                        v, i = c.take(n)
                        pieces_v.append(v)
                        pieces_i.append(i)
                values, ids = pa.concat_arrays(pieces_v), pa.concat_arrays(pieces_i)
                del pieces_v, pieces_i
                if len(live) > 1:
                    order = _btree.sort_order(values, stable=True)
                    values, ids = values.take(order), ids.take(order)
                done += len(values)
                yield values, ids
                if progress is not None:
                    progress(IndexProgress("progress", "merge_runs", done, self.rows, "rows"))
        finally:
            for c in cursors:
                c.close()
        if progress is not None:
            progress(IndexProgress("complete", "merge_runs", done, self.rows, "rows"))


class _Window:
    """A merge input's current window of rows (`values`, `ids`, and `keys`, their
    :func:`comparable` form), taken from the front."""

    values: Optional[pa.Array] = None
    ids: Optional[pa.Array] = None
    keys: pa.Array

    def take(self, n: int) -> Tuple[pa.Array, pa.Array]:
        """The first `n` rows of the window, removed from it."""
        assert self.values is not None and self.ids is not None
        out = self.values.slice(0, n), self.ids.slice(0, n)
        self.values, self.ids, self.keys = self.values.slice(n), self.ids.slice(n), self.keys.slice(n)
        return out


class _RunCursor(_Window):
    """A spilled run read a window of batches at a time."""

    def __init__(self, path: str, num_batches: int) -> None:
        self._file = pa.OSFile(path, "rb")  # (read, not mapped: what is read is what is held)
        self._reader = pa.ipc.open_file(self._file)
        self._next = 0
        self._num_batches = num_batches
        self.values: Optional[pa.Array] = None
        self.ids: Optional[pa.Array] = None
        self.keys: pa.Array = pa.array([], pa.int64())

    def fill(self, window: int) -> bool:
        """Reads the next `window` batches when the current ones are used up; whether rows
        remain."""
        if self.values is not None and len(self.values):
            return True
        if self._next >= self._num_batches:
            self.values = None
            return False
        stop = min(self._num_batches, self._next + window)
        batches = [self._reader.get_batch(b) for b in range(self._next, stop)]
        self._next = stop
        self.values = pa.concat_arrays([b.column(0) for b in batches])
        self.ids = pa.concat_arrays([b.column(1) for b in batches])
        self.keys = comparable(self.values)
        return True

    def close(self) -> None:
        self._file.close()


def _loaded(batches: Iterable[Tuple[pa.Array, pa.Array]], progress: Progress) -> Iterator[Tuple[pa.Array, pa.Array]]:
    """`batches`, reporting the ``load_data`` stage (rows read) as they are read."""
    done = 0
    if progress is not None:
        progress(IndexProgress("start", "load_data", 0, None, "rows"))
    for values, ids in batches:
        done += len(values)
        yield values, ids
        if progress is not None:
            progress(IndexProgress("progress", "load_data", done, None, "rows"))
    if progress is not None:
        progress(IndexProgress("complete", "load_data", done, None, "rows"))


def build_segment(
    kind: str,
    base: str,
    dtype: pa.DataType,
    batches: Iterable[Tuple[pa.Array, pa.Array]],
    memory_limit: Any = None,
    storage_options: Any = None,
    progress: Progress = None,
    tmp_dir: Optional[str] = None,
) -> List[Dict[str, Any]]:
    """Writes the files of one BTREE, BITMAP or LABEL_LIST (`kind`) segment under `base`
    from `batches` of ``(values, row addresses)``, sorting in memory when the column can be
    sorted in ``memory_limit`` MiB (:func:`budget_bytes`), else externally (spilling to a temporary
    directory under `tmp_dir`). `progress` hears the ``load_data`` stage (rows read) and,
    when runs were spilled, ``merge_runs`` (rows merged). Returns the files."""
    import numpy as np

    budget = budget_bytes(memory_limit)
    label_list = kind == "LABEL_LIST"
    dtype = dtype.storage_type if isinstance(dtype, pa.ExtensionType) else dtype
    key_type = dtype.value_type if label_list else dtype
    null_lists: List["np.ndarray"] = []

    def flat(source: Iterable[Tuple[pa.Array, pa.Array]]) -> Iterator[Tuple[pa.Array, pa.Array]]:
        for values, ids in source:  # (a LABEL_LIST index is keyed by the lists' elements)
            if values.type != dtype:
                values = values.cast(dtype)
            if values.null_count:
                null_lists.append(np.asarray(ids.filter(values.is_null()).to_numpy(zero_copy_only=False), np.uint64))
            yield _bitmap.flatten(values, ids)

    rows = _loaded(batches, progress)
    with ExternalSort(key_type, budget, tmp_dir) as sorter:
        for values, ids in flat(rows) if label_list else rows:
            sorter.add(values, ids)
        nulls = np.sort(np.concatenate(null_lists)) if null_lists else np.empty(0, np.uint64)
        if not sorter.spilled:
            values, ids = sorter.held()
            sorter.close()
            if kind == "BTREE":
                return _btree.write_segment(base, key_type, values, ids, storage_options)
            return _bitmap.write_flat(base, key_type, values, ids, storage_options, label_list, nulls)
        chunks = sorter.merged(progress)
        if kind == "BTREE":
            return _btree.write_sorted(base, key_type, chunks, storage_options)
        return _bitmap.write_sorted(base, key_type, chunks, storage_options, label_list, nulls)



class _NotInOrder(Exception):
    """An existing segment's rows are not in this build's index order (another writer's
    null or float order): it cannot be merged as a stream."""


class _SortedCursor(_Window):
    """An existing segment's rows in its index order, read a window at a time (subclasses:
    `_rows()`, the next window ``(values, ids)`` or ``None`` at the end), rows of fragments
    not in `live` left out. Checks as it goes that the order is this build's (nulls first,
    then ascending keys), else raises :class:`_NotInOrder`."""

    def __init__(self, dtype: pa.DataType, live: "np.ndarray") -> None:
        self._dtype = dtype
        self._live = live
        self._last: Optional[pa.Scalar] = None  # the last valid key seen
        self.values: Optional[pa.Array] = None
        self.ids: Optional[pa.Array] = None
        self.keys: pa.Array = pa.array([], pa.int64())

    def _rows(self) -> Optional[Tuple[pa.Array, pa.Array]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check(self, keys: pa.Array) -> None:
        nulls = keys.null_count
        if nulls:
            if self._last is not None or not pc.all(keys.slice(0, nulls).is_null()).as_py():
                raise _NotInOrder("nulls after values")
        valid = keys.slice(nulls)
        if not len(valid):
            return
        if len(valid) > 1 and pc.any(pc.less(valid.slice(1), valid.slice(0, len(valid) - 1))).as_py():
            raise _NotInOrder("values out of order")
        if self._last is not None and pc.less(valid[0], self._last).as_py():
            raise _NotInOrder("values out of order between windows")
        self._last = valid[len(valid) - 1]

    def fill(self, window: int) -> bool:
        """Reads the next window when the current rows are used up; whether rows remain.
        (`window`, the spilled runs' unit, is not this cursor's.)"""
        import numpy as np

        if self.values is not None and len(self.values):
            return True
        while (rows := self._rows()) is not None:
            values, ids = rows
            if values.type != self._dtype:
                values = values.cast(self._dtype)
            keys = comparable(values)
            self._check(keys)
            frags = (np.asarray(ids.to_numpy(zero_copy_only=False), np.uint64) >> np.uint64(32)).astype(np.int64)
            keep = np.isin(frags, self._live)
            if not keep.all():
                mask = pa.array(keep)
                values, ids, keys = values.filter(mask), ids.filter(mask), keys.filter(mask)
            if len(values):
                self.values, self.ids, self.keys = values, ids, keys
                return True
        self.values = None
        return False

    def close(self) -> None:
        self.values = self.ids = None


class _SegmentCursor(_SortedCursor):
    """A BTREE segment's rows, `pages` pages at a time."""

    def __init__(self, segment: "_btree.BTreeSegment", dtype: pa.DataType, live: "np.ndarray", pages: int) -> None:
        super().__init__(dtype, live)
        self._segment = segment
        self._pages = max(1, pages)
        self._next = 0
        self._count = len(segment.null_counts)

    def _rows(self) -> Optional[Tuple[pa.Array, pa.Array]]:
        from lancepy._ops.index_file import row_ids_column

        if self._next >= self._count:
            return None
        stop = min(self._count, self._next + self._pages)
        t = pa.concat_tables([self._segment._page(p) for p in range(self._next, stop)])
        self._next = stop
        return t.column("values").combine_chunks(), t.column(row_ids_column(t)).combine_chunks().cast(pa.uint64())


class _BitmapCursor(_SortedCursor):
    """A BITMAP segment's rows (a row per address of each key's bitmap), keys read `keys` at
    a time from its lookup file and their bitmaps decoded a few at a time, until `rows` rows
    (one key's rows at least)."""

    def __init__(self, base: str, dtype: pa.DataType, live: "np.ndarray", keys: int, rows: int, storage_options: Any) -> None:
        from lancepy.file import LanceFileReader

        super().__init__(dtype, live)
        self._reader = LanceFileReader(base + _bitmap.LOOKUP, storage_options)
        self._count = self._reader.num_rows()
        self._next = 0
        self._keys_per_read = max(1, keys)
        self._rows_per_window = max(1, rows)
        self._held_keys: Optional[pa.Array] = None
        self._held_blobs: List[Optional[bytes]] = []

    def _rows(self) -> Optional[Tuple[pa.Array, pa.Array]]:
        import numpy as np

        if not self._held_blobs:
            if self._next >= self._count:
                return None
            n = min(self._keys_per_read, self._count - self._next)
            t = self._reader.read_range(self._next, n, columns=["keys", "bitmaps"]).to_table()
            self._next += n
            self._held_keys = t.column("keys").combine_chunks()
            self._held_blobs = t.column("bitmaps").to_pylist()
        assert self._held_keys is not None
        # Keys decoded one by one while their rows stay under the window (one key at least:
        # a bitmap's serialized size says little of its rows, a run of a million is a few bytes).
        parts: List["np.ndarray"] = []
        rows = 0
        while len(parts) < len(self._held_blobs) and (not parts or rows < self._rows_per_window):
            parts.append(np.asarray(_bitmap.decode([self._held_blobs[len(parts)]]), np.uint64))
            rows += len(parts[-1])
        take = len(parts)
        keys = self._held_keys.slice(0, take)
        self._held_keys, self._held_blobs = self._held_keys.slice(take), self._held_blobs[take:]
        repeat = np.repeat(np.arange(take), [len(a) for a in parts])
        return keys.take(pa.array(repeat, pa.int64())), pa.array(np.concatenate(parts), pa.uint64())


#: The most pages of an existing segment a merge holds at a time (per segment; fewer when
#: the budget asks: see :func:`merge_btree`).
MERGE_PAGES = 64


def merge_btree(
    view: "DatasetView",
    column: str,
    entries: List[Dict[str, Any]],
    fragments: Sequence[int],
    memory_limit: Any = None,
    progress: Progress = None,
) -> Optional[Tuple[str, List[Dict[str, Any]]]]:
    """One new BTREE segment holding the rows of the segments `entries` (those of fragments
    still live) and the rows of `fragments` (appended since), in bounded memory: the new rows
    are sorted as a build sorts them (spilled past ``memory_limit``), and the old segments'
    pages, already in index order, are merged with them a few pages at a time; no segment is
    read whole. Returns the new uuid and files, or ``None`` (nothing written) when a segment
    cannot be streamed (a legacy file, or rows in another order than this build's): then
    :func:`lancepy._ops.btree.extend` merges in memory."""
    segments = [_btree.open_segment(view.uri, e["uuid"], view.storage_options) for e in entries]
    if any(seg.legacy for seg in segments):
        return None
    budget = budget_bytes(memory_limit)
    # (a quarter of the budget for the windows of the segments and of the spilled runs;
    # a page of rows takes ~24 bytes a row for 8-byte values)
    pages = max(1, min(MERGE_PAGES, budget // 4 // (len(segments) + 1) // (_btree.BATCH_SIZE * 24)))

    def cursors(dtype: pa.DataType, live: "np.ndarray") -> List[_SortedCursor]:
        return [_SegmentCursor(seg, dtype, live, pages) for seg in segments]

    def write(base: str, dtype: pa.DataType, chunks: Iterable[Tuple[pa.Array, pa.Array]]) -> List[Dict[str, Any]]:
        return _btree.write_sorted(base, dtype, chunks, view.storage_options)

    return _merge(view, column, fragments, budget, progress, cursors, write, (_btree.PAGE_DATA, _btree.PAGE_LOOKUP))


def merge_bitmap(
    view: "DatasetView",
    column: str,
    entries: List[Dict[str, Any]],
    fragments: Sequence[int],
    memory_limit: Any = None,
    progress: Progress = None,
) -> Optional[Tuple[str, List[Dict[str, Any]]]]:
    """:func:`merge_btree` for BITMAP segments (not LABEL_LIST ones): each old segment's keys
    are read a few at a time and their bitmaps decoded into rows, which merge with the new
    rows into the new segment's bitmaps."""
    budget = budget_bytes(memory_limit)
    rows = max(_btree.BATCH_SIZE, min(MERGE_PAGES * _btree.BATCH_SIZE, budget // 4 // (len(entries) + 1) // 24))

    def cursors(dtype: pa.DataType, live: "np.ndarray") -> List[_SortedCursor]:
        return [
            _BitmapCursor(view.uri.rstrip("/") + f"/_indices/{e['uuid']}/", dtype, live, 256, rows, view.storage_options)
            for e in entries
        ]

    def write(base: str, dtype: pa.DataType, chunks: Iterable[Tuple[pa.Array, pa.Array]]) -> List[Dict[str, Any]]:
        return _bitmap.write_sorted(base, dtype, chunks, view.storage_options)

    return _merge(view, column, fragments, budget, progress, cursors, write, (_bitmap.LOOKUP,))


def _merge(
    view: "DatasetView",
    column: str,
    fragments: Sequence[int],
    budget: int,
    progress: Progress,
    cursors: Callable[[pa.DataType, "np.ndarray"], List[_SortedCursor]],
    write: Callable[[str, pa.DataType, Iterable[Tuple[pa.Array, pa.Array]]], List[Dict[str, Any]]],
    names: Sequence[str],
) -> Optional[Tuple[str, List[Dict[str, Any]]]]:
    """The merge of :func:`merge_btree` / :func:`merge_bitmap`: the rows of `fragments` sorted
    (externally past `budget`) and merged with the old segments' `cursors` into `write`; the
    files `names` of a merge that fails or meets rows out of order are removed."""
    import uuid as _uuid

    import numpy as np

    dtype = _btree._column_type(view, column)
    dtype = dtype.storage_type if isinstance(dtype, pa.ExtensionType) else dtype
    live = np.asarray(sorted(view.fragment_ids), dtype=np.int64)
    uid = str(_uuid.uuid4())
    base = view.uri.rstrip("/") + f"/_indices/{uid}/"
    with ExternalSort(dtype, budget) as sorter:
        batches = _btree.column_batches(view, column, list(fragments)) if fragments else iter(())
        for values, ids in _loaded(batches, progress):
            sorter.add(values, ids)
        try:
            files = write(base, dtype, sorter.merged(progress, extra=cursors(dtype, live)))
        except _NotInOrder:
            view.store.delete([f"_indices/{uid}/{name}" for name in names])
            return None
        except BaseException:
            view.store.delete([f"_indices/{uid}/{name}" for name in names])
            raise
    return uid, files
