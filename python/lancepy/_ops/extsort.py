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

from lancepy import _lancepy
from lancepy._core.allocator import leanly
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
#: The most batches of a run a merge step takes (fewer when the budget asks): larger steps
#: only hold more, each step's sort costs no less.
MERGE_WINDOW = 256

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

    def _sorted_held(self) -> Tuple[pa.Array, pa.Array]:
        """The rows held, sorted (stable: ties in the order added), and no longer held."""
        values, ids = self.held()
        self._values, self._ids, self._held = [], [], 0
        if len(values):
            order = _btree.sort_order(values, stable=True)
            values, ids = values.take(order), ids.take(order)
        return values, ids

    def _spill(self) -> None:
        values, ids = self._sorted_held()
        if not len(values):
            return
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
        index order: an existing segment's, see :class:`_SegmentCursor`). The rows still held
        are sorted in memory and merged as the last run (no file: they are a run's size at
        most). Each step takes, from every run's window, the rows that sort before the
        smallest window end (ties to the earlier run), so at least one window is used up per
        step."""
        cursors: List[_Window] = [_RunCursor(path, n) for path, n, _ in self.runs]
        total_bytes = sum(b for _, _, b in self.runs)
        total_batches = sum(n for _, n, _ in self.runs)
        if self._values:
            values, ids = self._sorted_held()
            cursors.append(_HeldCursor(values, ids))
            total_bytes += values.nbytes + ids.nbytes
            total_batches += -(-len(values) // RUN_BATCH_ROWS)
        cursors += list(extra)
        total_batches = total_batches or 1
        per_batch = max(1, total_bytes // total_batches)
        window = max(1, min(MERGE_WINDOW, (self.budget // 4) // (per_batch * max(1, len(cursors)))))
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
                if len(live) > 1:  # (the windows' pieces: sorted runs, merged by a run-finding sort)
                    order = _btree.sort_order(values, stable=True, runs=True)
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
    :func:`comparable` form), taken from the front; :meth:`fill` reads the next window
    (subclasses: `_read(window)`, its ``(values, ids, keys or None)`` or ``None`` at the
    end) once this one is used up."""

    def __init__(self) -> None:
        self.values: Optional[pa.Array] = None
        self.ids: Optional[pa.Array] = None
        self.keys: pa.Array = pa.array([], pa.int64())

    def _read(self, window: int) -> Optional[Tuple[pa.Array, pa.Array, Optional[pa.Array]]]:  # pragma: no cover
        raise NotImplementedError

    def fill(self, window: int) -> bool:
        """Reads the next `window` batches' rows when the current ones are used up; whether
        rows remain."""
        if self.values is not None and len(self.values):
            return True
        rows = self._read(window)
        if rows is None:
            self.values = None
            return False
        self.values, self.ids, keys = rows
        self.keys = comparable(self.values) if keys is None else keys
        return True

    def close(self) -> None:
        self.values = self.ids = None

    def take(self, n: int) -> Tuple[pa.Array, pa.Array]:
        """The first `n` rows of the window, removed from it."""
        assert self.values is not None and self.ids is not None
        out = self.values.slice(0, n), self.ids.slice(0, n)
        self.values, self.ids, self.keys = self.values.slice(n), self.ids.slice(n), self.keys.slice(n)
        return out


class _RunCursor(_Window):
    """A spilled run read a window of batches at a time."""

    def __init__(self, path: str, num_batches: int) -> None:
        super().__init__()
        self._file = pa.OSFile(path, "rb")  # (read, not mapped: what is read is what is held)
        self._reader = pa.ipc.open_file(self._file)
        self._next = 0
        self._num_batches = num_batches

    def _read(self, window: int) -> Optional[Tuple[pa.Array, pa.Array, Optional[pa.Array]]]:
        if self._next >= self._num_batches:
            return None
        stop = min(self._num_batches, self._next + window)
        batches = [self._reader.get_batch(b) for b in range(self._next, stop)]
        self._next = stop
        return pa.concat_arrays([b.column(0) for b in batches]), pa.concat_arrays([b.column(1) for b in batches]), None

    def close(self) -> None:
        super().close()
        self._file.close()


class _HeldCursor(_Window):
    """The rows held in memory at the merge (sorted), served a window at a time."""

    def __init__(self, values: pa.Array, ids: pa.Array) -> None:
        super().__init__()
        self._all: Optional[Tuple[pa.Array, pa.Array]] = (values, ids)
        self._next = 0

    def _read(self, window: int) -> Optional[Tuple[pa.Array, pa.Array, Optional[pa.Array]]]:
        if self._all is None or self._next >= len(self._all[0]):
            return None
        n = min(len(self._all[0]) - self._next, window * RUN_BATCH_ROWS)
        at, self._next = self._next, self._next + n
        return self._all[0].slice(at, n), self._all[1].slice(at, n), None

    def close(self) -> None:
        super().close()
        self._all = None


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


def _elements(
    rows: Iterable[Tuple[pa.Array, pa.Array]], dtype: pa.DataType, null_lists: List["np.ndarray"]
) -> Iterator[Tuple[pa.Array, pa.Array]]:
    """A LABEL_LIST index's rows: the elements of the lists `rows` with their row addresses
    (the addresses of null lists appended to `null_lists`)."""
    import numpy as np

    for values, ids in rows:
        if values.type != dtype:
            values = values.cast(dtype)
        if values.null_count:
            null_lists.append(np.asarray(ids.filter(values.is_null()).to_numpy(zero_copy_only=False), np.uint64))
        yield _bitmap.flatten(values, ids)


@leanly
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
    rows = _loaded(batches, progress)
    with ExternalSort(key_type, budget, tmp_dir) as sorter:
        for values, ids in _elements(rows, dtype, null_lists) if label_list else rows:
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
        super().__init__()
        self._dtype = dtype
        self._live = live
        self._last: Optional[pa.Scalar] = None  # the last valid key seen

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

    def _read(self, window: int) -> Optional[Tuple[pa.Array, pa.Array, Optional[pa.Array]]]:
        """The segment's next rows of live fragments, checked (`window`, the spilled runs'
        unit, is not this cursor's)."""
        import numpy as np

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
                return values, ids, keys
        return None


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


#: The most pages of an existing segment a merge holds at a time (per segment; fewer when
#: the budget asks: see :func:`merge_btree`).
MERGE_PAGES = 64


@leanly
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


@leanly
def merge_bitmap(
    view: "DatasetView",
    column: str,
    entries: List[Dict[str, Any]],
    fragments: Sequence[int],
    memory_limit: Any = None,
    progress: Progress = None,
) -> Optional[Tuple[str, List[Dict[str, Any]]]]:
    """:func:`merge_btree` for BITMAP and LABEL_LIST segments, merged key by key: the new
    rows are sorted (spilled past ``memory_limit``) and grouped into each key's set of row
    addresses; the old segments' keys and sets are read a few MiB at a time; each
    key's sets are joined natively (:func:`lancepy._lancepy.row_addr_maps_union`): a
    fragment that one set holds is copied as it is, not decoded, and fragments no longer in
    the dataset are left out. A LABEL_LIST's null lists (8 bytes a row) are held until the
    file is written. Returns ``None`` (nothing written) when a segment's keys are not in this
    build's order: then :func:`lancepy._ops.bitmap.extend` merges in memory."""
    import uuid as _uuid

    import numpy as np

    from lancepy.file import LanceFileReader

    label_list = str(entries[0].get("details_type") or "").endswith("LabelListIndexDetails")
    dtype = _btree._column_type(view, column)
    dtype = dtype.storage_type if isinstance(dtype, pa.ExtensionType) else dtype
    key_type = dtype.value_type if label_list else dtype
    live = sorted(view.fragment_ids)
    kept = set(live)
    # (the sets are copied whole unless a segment covers fragments since removed)
    drop = live if any(not set(e["fragment_ids"]) <= kept for e in entries) else None
    uid = str(_uuid.uuid4())
    base = view.uri.rstrip("/") + f"/_indices/{uid}/"
    null_lists: List["np.ndarray"] = []
    streams: List[_KeyStream] = []
    with ExternalSort(key_type, budget_bytes(memory_limit)) as sorter:
        rows = _loaded(_btree.column_batches(view, column, list(fragments)) if fragments else iter(()), progress)
        for values, ids in _elements(rows, dtype, null_lists) if label_list else rows:
            sorter.add(values, ids)
        try:
            for e in entries:
                reader = LanceFileReader(view.uri.rstrip("/") + f"/_indices/{e['uuid']}/{_bitmap.LOOKUP}", view.storage_options)
                if label_list:
                    old = _bitmap.null_list_rows(reader)
                    null_lists.append(old[np.isin((old >> np.uint64(32)).astype(np.int64), live)])
                streams.append(_LookupStream(reader, key_type))
            streams.append(_SetStream(_bitmap.keyed_sets(sorter.merged(progress), key_type), key_type))
            nulls = np.sort(np.concatenate(null_lists)) if null_lists else np.empty(0, np.uint64)
            files = _bitmap.write_keyed(base, key_type, _merged_sets(streams, drop), view.storage_options, label_list, nulls)
        except _NotInOrder:
            view.store.delete([f"_indices/{uid}/{_bitmap.LOOKUP}"])
            return None
        except BaseException:
            view.store.delete([f"_indices/{uid}/{_bitmap.LOOKUP}"])
            raise
    return uid, files


#: The most keys of an old BITMAP segment a merge reads at a time: fewer when their sets
#: are large (about :data:`MERGE_SET_BYTES` of sets a read).
MERGE_KEYS = 4096
MERGE_SET_BYTES = 4 << 20
#: A serialized empty row-address set (no fragment).
_EMPTY_SET = b"\0\0\0\0"


class _KeyStream:
    """A key-level merge input: distinct keys in index order, each with its serialized set
    of row addresses, a window at a time (`keys`, `cmp` their :func:`comparable` form,
    `blobs`); subclasses give `_next()`, the next window or ``None`` at the end."""

    def __init__(self, dtype: pa.DataType, check: bool) -> None:
        self._dtype = dtype
        self._check_order = check
        self._started = False
        self._last: Optional[pa.Scalar] = None
        self.keys: Optional[pa.Array] = None
        self.cmp: pa.Array = pa.array([], pa.int64())
        self.blobs: List[bytes] = []

    def _next(self) -> Optional[Tuple[pa.Array, List[Optional[bytes]]]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        self.keys = None

    def fill(self) -> bool:
        """Reads the next window when the current one is used up; whether keys remain."""
        while self.keys is None or not len(self.keys):
            window = self._next()
            if window is None:
                self.keys = None
                return False
            keys, blobs = window
            if keys.type != self._dtype:
                keys = keys.cast(self._dtype)
            self.keys, self.cmp = keys, comparable(keys)
            self.blobs = [b if b is not None else _EMPTY_SET for b in blobs]
            if self._check_order:
                self._check(self.cmp)
        return True

    def _check(self, cmp: pa.Array) -> None:
        """Raises :class:`_NotInOrder` unless the keys ascend strictly (the null key first)."""
        nulls = cmp.null_count
        if nulls and (nulls > 1 or self._started or cmp[0].is_valid):
            raise _NotInOrder("a null key after other keys")
        self._started = True
        valid = cmp.slice(nulls)
        if not len(valid):
            return
        if len(valid) > 1 and pc.any(pc.less_equal(valid.slice(1), valid.slice(0, len(valid) - 1))).as_py():
            raise _NotInOrder("keys out of order")
        if self._last is not None and pc.less_equal(valid[0], self._last).as_py():
            raise _NotInOrder("keys out of order between windows")
        self._last = valid[len(valid) - 1]

    def end(self) -> Any:
        """The window's last key (comparable form; ``None``: the null key)."""
        return _key(self.cmp, len(self.cmp) - 1)

    def take_upto(self, end: Any) -> Tuple[pa.Array, pa.Array, List[bytes]]:
        """The window's keys up to `end` (``None``: the null key only), removed from it."""
        assert self.keys is not None
        n = self.cmp.null_count
        if end is not None:
            n += pc.sum(pc.less_equal(self.cmp.slice(n), pa.scalar(end, self.cmp.type))).as_py() or 0
        out = self.keys.slice(0, n), self.cmp.slice(0, n), self.blobs[:n]
        self.keys, self.cmp, self.blobs = self.keys.slice(n), self.cmp.slice(n), self.blobs[n:]
        return out


class _LookupStream(_KeyStream):
    """An old BITMAP / LABEL_LIST segment's keys and sets, up to :data:`MERGE_KEYS` at a time
    (about :data:`MERGE_SET_BYTES` of sets), its order checked as it is read."""

    def __init__(self, reader: Any, dtype: pa.DataType) -> None:
        super().__init__(dtype, check=True)
        self._reader = reader
        self._count = reader.num_rows()
        self._at = 0
        self._per_read = min(MERGE_KEYS, 64)

    def _next(self) -> Optional[Tuple[pa.Array, List[Optional[bytes]]]]:
        if self._at >= self._count:
            return None
        n = min(self._per_read, self._count - self._at)
        t = self._reader.read_range(self._at, n, columns=["keys", "bitmaps"]).to_table()
        self._at += n
        blobs = t.column("bitmaps")
        # (the next read sized by this one's bytes a key: a few large sets, or many small ones)
        per_key = max(1, blobs.nbytes // max(1, n))
        self._per_read = max(1, min(MERGE_KEYS, MERGE_SET_BYTES // per_key))
        return t.column("keys").combine_chunks(), blobs.to_pylist()


class _SetStream(_KeyStream):
    """The new rows' keys and sets (:func:`lancepy._ops.bitmap.keyed_sets`)."""

    def __init__(self, chunks: Iterator[Tuple[pa.Array, List[bytes]]], dtype: pa.DataType) -> None:
        super().__init__(dtype, check=False)
        self._chunks = chunks

    def _next(self) -> Optional[Tuple[pa.Array, List[Optional[bytes]]]]:
        return next(self._chunks, None)  # type: ignore[arg-type]

    def close(self) -> None:
        super().close()
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


def _merged_sets(streams: List[_KeyStream], live: Optional[List[int]]) -> Iterator[Tuple[pa.Array, List[bytes]]]:
    """The keys of every stream, each once, in index order, with the union of their sets
    (fragments not in `live` left out, unless it is ``None``); keys whose set is left empty
    are dropped. Each step takes from every window the keys up to the smallest window end,
    so every key's sets meet in one step and one window at least is used up."""
    import numpy as np

    try:
        while True:
            active = [s for s in streams if s.fill()]
            if not active:
                return
            ends = [s.end() for s in active]
            end = None if any(e is None for e in ends) else min(ends)
            parts = [p for p in (s.take_upto(end) for s in active) if len(p[0])]
            keys = pa.concat_arrays([p[0] for p in parts])
            blobs = [b for p in parts for b in p[2]]
            if len(parts) > 1:
                order = _btree.sort_order(keys, stable=True)
                keys, cmp = keys.take(order), pa.concat_arrays([p[1] for p in parts]).take(order)
                blobs = [blobs[i] for i in order.to_pylist()]
                prev, nxt = cmp.slice(0, len(cmp) - 1), cmp.slice(1)
                same = pc.or_(pc.fill_null(pc.equal(nxt, prev), False), pc.and_(nxt.is_null(), prev.is_null()))
                starts = np.flatnonzero(~np.concatenate([[False], np.asarray(same.to_numpy(zero_copy_only=False), bool)]))
            else:
                starts = np.arange(len(keys))
            offsets = np.append(starts, len(keys))
            sets = _lancepy.row_addr_maps_union(blobs, offsets.tolist(), live)
            keep = [i for i, b in enumerate(sets) if b != _EMPTY_SET]
            yield keys.take(pa.array(starts[keep], pa.int64())), [sets[i] for i in keep]
    finally:
        for s in streams:
            s.close()


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
