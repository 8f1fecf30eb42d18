"""Scan planning and execution (the operations layer's side of :class:`lancepy.LanceScanner`):
columns and computed columns, filters (evaluated over coalesced batches of the native scan
stream, or answered by a scalar index), late materialization, ordering, limits and offsets,
batching, vector / full-text / hybrid search, blob values, and the plan's description
(``explain_plan`` / ``analyze_plan``).

A :class:`ScanPlan` is one scan of one :class:`~lancepy._table.snapshot.DatasetView`: the
public :class:`lancepy.LanceScanner` checks pylance's arguments, builds the plan and
delegates every read to it."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.compute as pc

from lancepy import _lancepy
from lancepy import blob as _blob
from lancepy import vector as _vector
from lancepy._ops import fts_search as _fts
from lancepy._ops import hybrid as _hybrid
from lancepy._ops import ivf as _ivf_defaults
from lancepy._ops import scalar_query as _scalar_query
from lancepy._ops.projection import SYSTEM_COLUMNS, Projection
from lancepy._ops.scan import compile_scan_filter as _compile_scan_filter
from lancepy._core.evaluate import FILTER_BATCH_ROWS, _evaluate, _filtered, _stream_tables
from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy._table import lineage
from lancepy.exceptions import InvalidArgumentError, UnsupportedError
from lancepy.filters import Filter, compile_expression

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.snapshot import DatasetView


def _run_starts(values: pa.Array) -> List[int]:
    """Positions where a new run of equal values starts in `values` (non-empty)."""
    if len(values) < 2:
        return [0]
    changed = pc.not_equal(values.slice(1), values.slice(0, len(values) - 1))
    return [0] + [int(i) + 1 for i in pc.indices_nonzero(changed).to_pylist()]


def scan_columns(columns: Any, full_text_query: Any) -> Any:
    """`columns` less ``_score`` (the column a full-text search adds; the plan puts it
    where `columns` asks, see :meth:`ScanPlan.set_full_text`)."""
    if full_text_query is None or not isinstance(columns, (list, tuple)) or _fts.SCORE not in columns:
        return columns
    return [c for c in columns if c != _fts.SCORE]


def default_batch_size() -> int:
    """Rows per batch when a scan names none: ``LANCE_DEFAULT_BATCH_SIZE`` (as pylance reads
    it) or 8192."""
    text = os.environ.get("LANCE_DEFAULT_BATCH_SIZE")
    if text is None:
        return 8192
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidArgumentError(f"LANCE_DEFAULT_BATCH_SIZE must be a positive integer, got {text!r}")
    return value


@dataclass
class ColumnOrdering:
    """One key of a scan's `order_by`: a column, ascending or not, nulls first or last."""

    column_name: str
    ascending: bool = True
    nulls_first: bool = False


#: pyarrow 25 sorts with a null placement per key (and deprecates the global one).
_PER_KEY_NULL_PLACEMENT = int(pa.__version__.split(".")[0]) >= 25


def _check_pandas_options(options: Dict[str, Any]) -> None:
    """`to_pandas`'s keywords are ``pyarrow.Table.to_pandas``'s (as in pylance): every one
    is passed on; an unknown one is a ``TypeError`` before anything is read, not after."""
    import inspect

    known = set(inspect.signature(pa.Table.to_pandas).parameters) - {"self"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"to_pandas() got unexpected keyword argument(s) {unknown}; pyarrow's are {sorted(known)}")


class ScanPlan:
    """One scan of one dataset version: its options, checked against the version's schema
    (the constructor's, then the ``set_*`` methods'), and the reads that carry it out."""

    def __init__(self, view: DatasetView, columns: Any, filter: Any, limit: Optional[int], offset: Optional[int],
                 with_row_id: bool, with_row_address: bool, batch_size: Optional[int],
                 fragment_ids: Optional[List[int]]) -> None:
        self._view = view
        schema = view.schema
        self._computed: Optional[Dict[str, Any]] = None
        self._projection: Optional[Projection] = None
        self._rrf_k = _hybrid.DEFAULT_RRF_K  # (a hybrid search's, see _set_rrf_k)
        if isinstance(columns, dict):
            self._computed = {n: compile_expression(e, schema).expression if isinstance(e, str) else e for n, e in columns.items()}
            self._columns: Optional[List[str]] = None
        elif columns is None:
            self._columns = None
        elif len(set(columns)) != len(list(columns)):
            dup = sorted({c for c in columns if list(columns).count(c) > 1})
            raise InvalidArgumentError(f"duplicate column names in the projection: {dup} (a take may repeat them; a scan may not)")
        elif Projection.needed(list(columns), schema):
            # System columns, nested paths or repeats: read the top-level columns they need.
            self._projection = Projection(list(columns), schema)
            self._columns = self._projection.read
        else:
            self._columns = list(columns)
        self._filter, filter_system = _compile_scan_filter(filter, schema)
        self._filter_system = filter_system
        if offset is not None and offset < 0:
            raise InvalidArgumentError(f"Offset must be non-negative, got {offset}")
        if limit is not None and limit < 0:
            raise InvalidArgumentError(f"Limit must be non-negative, got {limit}")
        self._limit = limit
        self._offset = offset or 0
        # Row ids / addresses read for the filter or the projection but not appended at the end.
        self._hidden_columns = set()
        # (the row versions a filter reads are computed from the row addresses)
        self._filter_versions = [n for n in filter_system if n in lineage.COLUMNS]
        for name, asked in ((ROW_ID, with_row_id), (ROW_ADDRESS, with_row_address)):
            wanted = (name in filter_system or (name == ROW_ADDRESS and bool(self._filter_versions))
                      or (self._projection is not None and name in self._projection.needs))
            if wanted and not asked:
                self._hidden_columns.add(name)
        self._with_row_id = with_row_id or ROW_ID in self._hidden_columns
        self._with_row_address = with_row_address or ROW_ADDRESS in self._hidden_columns
        self._batch_size = batch_size or default_batch_size()
        self._order: List[ColumnOrdering] = []
        self._fragment_ids = fragment_ids
        self._nearest: Optional[_vector.NearestQuery] = None
        self._fts: Optional[_fts.FtsQuery] = None  # (full_text_query=; searched as nearest= is)
        self._score_at: Optional[int] = None  # (where columns= puts _score)
        self._prefilter = False
        self._late: Union[bool, List[str], None] = None
        # Blob columns returned as their values (blob_handling="all_binary"), and whether the
        # row addresses that finds them were added by the scan, not asked for.
        self._blob_values: List[str] = []
        self._read_ahead: Optional[int] = None
        self._include_deleted = False
        self._strict_batches = False
        self._batch_bytes: Optional[int] = None
        self._index_segments: Optional[List[Any]] = None
        self._fast_search = False
        self._use_scalar_index = True
        self._no_scoring_column = False
        self._rows_scanned = 0  # rows read before filtering (what analyze_plan reports)

    def set_batching(self, strict: bool, batch_size_bytes: Optional[int]) -> None:
        if batch_size_bytes is not None:
            if not isinstance(batch_size_bytes, int) or isinstance(batch_size_bytes, bool) or batch_size_bytes <= 0:
                raise InvalidArgumentError(f"batch_size_bytes must be a positive int, got {batch_size_bytes!r}")
            if strict:
                raise InvalidArgumentError("batch_size_bytes cannot be combined with strict_batch_size=True")
        self._strict_batches = strict
        self._batch_bytes = batch_size_bytes

    def set_read_ahead(self, batch_readahead: Optional[int]) -> None:
        """Batches (scan tasks) read ahead of the one a stream hands out."""
        if batch_readahead is None:
            return
        if isinstance(batch_readahead, bool) or not isinstance(batch_readahead, int) or batch_readahead < 0:
            raise InvalidArgumentError(f"batch_readahead must be a non-negative integer, got {batch_readahead!r}")
        self._read_ahead = batch_readahead

    def set_include_deleted(self, include_deleted_rows: Optional[bool]) -> None:
        """Deleted rows are read too, with a null row id (pylance's rule: only with row ids)."""
        if not include_deleted_rows:
            return
        if not self._with_row_id:
            raise InvalidArgumentError("include_deleted_rows is set but with_row_id is false")
        if self._nearest is not None:
            raise InvalidArgumentError("Cannot include deleted rows in a nearest-neighbour search (include_deleted_rows with nearest=)")
        self._include_deleted = True
        self._late = False  # (late columns are taken by address, which skips deleted rows)

    def set_blob_handling(self, blob_handling: Optional[str]) -> None:
        if blob_handling not in (None, "blobs_descriptions", "all_descriptions", "all_binary"):
            raise InvalidArgumentError(
                f"blob_handling must be 'all_binary', 'blobs_descriptions' or 'all_descriptions', got {blob_handling!r}"
            )
        if blob_handling != "all_binary":
            return
        if self._computed is not None or self._nearest is not None:
            raise UnsupportedError("blob_handling='all_binary' with computed columns or nearest= is not supported")
        names = self._columns if self._columns is not None else list(self._view.schema.names)
        self._blob_values = self._view.loaded.blob_columns(names)
        if self._blob_values and not self._with_row_address:
            self._with_row_address = True
            self._hidden_columns.add(ROW_ADDRESS)

    def set_late_materialization(self, late: Union[bool, List[str], None]) -> None:
        if late is None or isinstance(late, bool):
            self._late = late
            return
        if isinstance(late, str) or not all(isinstance(c, str) for c in late):
            raise InvalidArgumentError(f"late_materialization must be a bool or a list of column names, got {late!r}")
        unknown = [c for c in late if c not in self._view.schema.names]
        if unknown:
            from lancepy.exceptions import ColumnNotFoundError

            raise ColumnNotFoundError(f"late_materialization names columns {unknown} that do not exist")
        self._late = list(late)

    def _late_columns(self) -> List[str]:
        """Projected columns a filtered scan reads only for the rows that pass the filter."""
        if self._filter is None or self._filter.columns is None or self._late is False or self._filter_system:
            return []
        projected = self._columns if self._columns is not None else list(self._view.schema.names)
        used = set(self._filter.columns)
        late = [c for c in projected if c not in used]
        if isinstance(self._late, list):
            late = [c for c in late if c in self._late]
        return late

    #: A batch whose share of passing rows is at most this takes its late columns row by row
    #: (random access); above it, the late columns of the batch's rows are scanned, then
    #: picked: a take of 5% of a fragment's rows costs about what a scan of all of them does
    #: (benches/RESULTS.md, "Filtered scans").
    _TAKE_FRACTION = 0.05

    #: Rows of the filter's columns a stream reads first to judge the share of rows that
    #: pass (`_few_pass`): enough for the 5% threshold (a standard error of about 0.25
    #: points), small enough that the probe costs little next to the scan it steers.
    _PROBE_ROWS = 8192

    def _late_filtered(self, late: List[str]) -> Iterator[pa.Table]:
        """A filtered scan that reads the filter's columns (and the projected columns not in
        `late`) first, evaluates the filter per batch, and reads the `late` columns for the
        passing rows only: by row address when few pass, else by scanning the batch's rows.
        Offset and limit are applied before the late columns are read."""
        s = self._view.snapshot
        early = [c for c in (self._read_columns() or list(self._view.schema.names)) if c not in late]
        stored = self._json_stored()
        stream = s.scan_stream(
            early,
            fragment_ids=self._fragment_ids,
            batch_rows=max(self._batch_size, 65536),
            with_row_id=self._with_row_id,
            with_row_address=True,
            read_ahead=self._read_ahead,
            coalesce=True,
            json_stored=stored,
        )
        for t, scanned in self._filtered_stream(stream, stored):
            values = self._late_values(t.column(ROW_ADDRESS).combine_chunks(), late, scanned)
            for name in late:
                t = t.append_column(values.schema.field(name), values.column(name))
            if not self._with_row_address:
                t = t.drop_columns([ROW_ADDRESS])
            yield self._finish(t)

    def _few_pass(self, late: List[str]) -> bool:
        """Whether at most `_TAKE_FRACTION` of the first `_PROBE_ROWS` rows pass the filter (a
        stream's guess at the whole scan, from a read of the filter's columns only)."""
        s = self._view.snapshot
        early = [c for c in (self._read_columns() or list(self._view.schema.names)) if c not in late]
        stored = self._json_stored()
        probe = pa.table(s.scan(early, fragment_ids=self._fragment_ids, limit=self._PROBE_ROWS, batch_rows=self._PROBE_ROWS,
                                json_stored=stored))
        if probe.num_rows == 0:
            return True
        passed = pc.sum(self._evaluate(probe, self._scan_filter(stored)).cast(pa.int64())).as_py() or 0
        return passed <= probe.num_rows * self._TAKE_FRACTION

    def _late_table(self, late: List[str]) -> pa.Table:
        """A whole filtered scan with late columns: the early columns of every row are read and
        filtered; then the late columns are taken for the passing rows if few pass, else
        scanned for all rows (the same order) and filtered the same way. Both reads run in
        parallel over fragments."""
        s = self._view.snapshot
        early = [c for c in (self._read_columns() or list(self._view.schema.names)) if c not in late]
        stored = self._json_stored()
        t = pa.table(s.scan(
            early,
            fragment_ids=self._fragment_ids,
            with_row_id=self._with_row_id,
            with_row_address=True,
            coalesce=True,
            json_stored=stored,
        ))
        mask = self._evaluate(t, self._scan_filter(stored))
        scanned = t.num_rows
        self._rows_scanned += scanned
        t = t.filter(mask).slice(self._offset)
        if stored:
            t = _json_text(t)
        if t.num_rows <= scanned * self._TAKE_FRACTION:
            values = pa.table(s.take_addresses(t.column(ROW_ADDRESS).combine_chunks(), columns=late))
        else:
            values = pa.table(s.scan(late, fragment_ids=self._fragment_ids, coalesce=True))
            values = values.filter(mask).slice(self._offset)
        for name in late:
            t = t.append_column(values.schema.field(name), values.column(name))
        if not self._with_row_address:
            t = t.drop_columns([ROW_ADDRESS])
        return self._finish(t)

    def _late_values(self, addr: pa.Array, late: List[str], scanned: int) -> pa.Table:
        """Columns `late` at row addresses `addr` (ascending within each fragment), in that order."""
        s = self._view.snapshot
        if len(addr) <= scanned * self._TAKE_FRACTION:
            return pa.table(s.take_addresses(addr, columns=late))
        frag = pc.shift_right(addr, 32)
        offsets = pc.bit_wise_and(addr, 0xFFFFFFFF)
        starts = _run_starts(frag)
        parts = []
        for start, end in zip(starts, starts[1:] + [len(addr)]):
            offs = offsets.slice(start, end - start)
            lo, hi = offs[0].as_py(), offs[len(offs) - 1].as_py()
            # The fragment's physical rows lo..hi (deleted ones too, so offsets index them).
            block = pa.table(s.scan(
                late,
                fragment_ids=[frag[start].as_py()],
                offset=lo,
                limit=hi - lo + 1,
                include_deleted=True,
            ))
            parts.append(block.take(pc.subtract(offs, lo)))
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)

    def set_nearest(self, nearest: Dict[str, Any], prefilter: bool) -> None:
        if isinstance(nearest, dict) and nearest.get("k") is None and self._limit is not None:
            # (as pylance: without k, the scan's limit is the number of neighbours)
            nearest = dict(nearest, k=self._limit + self._offset)
        self._nearest = _vector.parse_nearest(nearest, self._view.schema)
        self._prefilter = prefilter

    def set_full_text(self, full_text_query: Any, prefilter: bool, columns: Any = None) -> None:
        """`full_text_query` (see :mod:`lancepy._ops.fts_search`): searched like `nearest`;
        `columns` (the scan's own) may name ``_score``, which then goes where it names it."""
        if full_text_query is None:
            return
        if isinstance(columns, (list, tuple)) and _fts.SCORE in columns:
            self._score_at = list(columns).index(_fts.SCORE)
        if self._computed is not None or self._order:
            raise UnsupportedError("full_text_query with computed columns or order_by is not supported")
        self._fts = _fts.parse(self._view, full_text_query)
        self._prefilter = prefilter

    def set_rrf_k(self, rrf_k: Any) -> None:
        """`rrf_k` of a hybrid search (``nearest`` and ``full_text_query``; see
        :mod:`lancepy._ops.hybrid`); refused without both."""
        if rrf_k is not None and (self._nearest is None or self._fts is None):
            raise InvalidArgumentError("rrf_k= fuses a hybrid search: give both nearest= and full_text_query=")
        self._rrf_k = _hybrid.check_rrf_k(rrf_k)

    def _search(self) -> pa.Table:
        t = self._place_score(self._search_unplaced())
        return t

    def _place_score(self, t: pa.Table) -> pa.Table:
        if self._score_at is None or _fts.SCORE not in t.column_names:
            return t
        names = [n for n in t.column_names if n != _fts.SCORE]
        names.insert(self._score_at, _fts.SCORE)
        return t.select(names)

    def _search_unplaced(self) -> pa.Table:
        t = self._search_raw()
        if self._computed is not None:
            # (as pylance: the expressions, then the scores and the system columns asked for)
            return self._computed_columns(t, ("_distance", _fts.SCORE, ROW_ID, ROW_ADDRESS))
        if self._projection is None and not self._no_scoring_column:
            return t.drop_columns([n for n in self._hidden_columns if n in t.column_names])
        scored = [n for n in ("_distance", _fts.SCORE, _hybrid.RELEVANCE) if n in t.column_names
                  and (not self._no_scoring_column or (n == _fts.SCORE and self._score_at is not None))]
        if self._projection is not None:
            out = self._projection.apply(t, self._view)
        else:
            out = t.select(self._columns if self._columns is not None else list(self._view.schema.names))
        for n in scored + [n for n in (ROW_ID, ROW_ADDRESS) if n in t.column_names and n not in self._hidden_columns]:
            out = out.append_column(t.schema.field(n), t.column(n))
        return out

    def _search_raw(self) -> pa.Table:
        if self._fts is not None and self._nearest is not None:
            return _hybrid.search(
                self._view, self._nearest, self._fts, rrf_k=self._rrf_k,
                columns=self._columns, flt=self._filter, prefilter=self._prefilter, limit=self._limit,
                offset=self._offset, with_row_id=self._with_row_id, with_row_address=self._with_row_address,
                fragment_ids=self._fragment_ids, evaluate=self._evaluate, index_segments=self._index_segments,
                fast_search=self._fast_search,
            )
        if self._fts is not None:
            return _fts.search(
                self._view, self._fts, columns=self._columns, flt=self._filter, prefilter=self._prefilter,
                limit=self._limit, offset=self._offset,
                with_row_id=self._with_row_id, with_row_address=self._with_row_address,
                fragment_ids=self._fragment_ids, evaluate=self._evaluate,
            )
        return _vector.search(
            self._view, self._nearest, columns=self._columns, flt=self._filter, prefilter=self._prefilter,
            limit=self._limit, offset=self._offset, with_row_id=self._with_row_id,
            with_row_address=self._with_row_address, fragment_ids=self._fragment_ids, evaluate=self._evaluate,
            index_segments=self._index_segments, fast_search=self._fast_search,
        )

    def set_order(self, order_by: Optional[Sequence[Any]]) -> None:
        """`order_by`: column names (ascending, nulls last) or :class:`ColumnOrdering`-like
        objects (``column_name``, ``ascending``, ``nulls_first``)."""
        self._order = []
        if not order_by:
            return
        if isinstance(order_by, (str, ColumnOrdering)):
            order_by = [order_by]
        names = self._view.schema.names
        for o in order_by:
            key = ColumnOrdering(o) if isinstance(o, str) else ColumnOrdering(
                getattr(o, "column_name"), bool(getattr(o, "ascending", True)), bool(getattr(o, "nulls_first", False))
            )
            if key.column_name not in names:
                from lancepy.exceptions import ColumnNotFoundError

                raise ColumnNotFoundError(f"cannot order by {key.column_name!r}: the dataset has {names}")
            self._order.append(key)
        if len({k.nulls_first for k in self._order}) > 1 and not _PER_KEY_NULL_PLACEMENT:
            raise UnsupportedError(
                "order_by with nulls first for some columns and last for others needs pyarrow >= 25"
            )

    def _evaluate(self, table: pa.Table, flt: Filter) -> pa.ChunkedArray:
        """`flt`'s mask over `table`, the row version columns it reads computed first (from
        the rows' addresses, which the scan then reads)."""
        if self._filter_versions:
            table = lineage.with_versions(self._view, table, self._filter_versions)
        return _evaluate(table, flt)

    def _read_columns(self) -> Optional[List[str]]:
        extra = [c for c in ((self._filter.columns if self._filter is not None else []) or []) if c not in SYSTEM_COLUMNS]
        if self._filter is not None and self._filter.columns is None:
            return None
        extra = extra + [k.column_name for k in getattr(self, "_order", [])]
        if self._columns is None:
            return None
        return list(dict.fromkeys(self._columns + extra))

    def _json_stored(self) -> bool:
        """Whether the filter reads its JSON columns through JSON functions only
        (``json_get_int(j, 'k') > 3``), so that the scan reads them as stored JSONB, which
        the functions select from directly, and only the rows kept get their JSON text."""
        return self._filter is not None and self._filter.stored is not None

    def _scan_filter(self, json_stored: bool) -> Filter:
        """The filter to evaluate over a scan read with (or without) `json_stored`."""
        assert self._filter is not None
        return self._filter.stored if json_stored and self._filter.stored is not None else self._filter

    def _ordered_table(self) -> pa.Table:
        t = self._scan_table()
        if self._filter is not None:
            t = t.filter(self._evaluate(t, self._filter))
        def placement(k: ColumnOrdering) -> str:
            return "at_start" if k.nulls_first else "at_end"

        if _PER_KEY_NULL_PLACEMENT:
            keys = [(k.column_name, "ascending" if k.ascending else "descending", placement(k)) for k in self._order]
            indices = pc.sort_indices(t, sort_keys=keys)
        else:
            keys2 = [(k.column_name, "ascending" if k.ascending else "descending") for k in self._order]
            indices = pc.sort_indices(t, sort_keys=keys2, null_placement=placement(self._order[0]))
        t = t.take(indices)
        t = t.slice(self._offset, self._limit) if self._limit is not None else t.slice(self._offset)
        return self._finish(t)

    def _output_names(self, table_names: List[str]) -> List[str]:
        names = self._columns if self._columns is not None else [n for n in self._view.schema.names]
        extra = [n for n in (ROW_ID, ROW_ADDRESS) if n in table_names and n not in self._hidden_columns]
        return list(names) + extra

    def _computed_columns(self, table: pa.Table, kept: Sequence[str]) -> pa.Table:
        """The projection's expressions over `table`, then those of the `kept` columns it has
        (not hidden, not named by an expression)."""
        import pyarrow.dataset as pads

        cols = dict(self._computed or {})
        for n in kept:
            if n in table.column_names and n not in cols and n not in self._hidden_columns:
                cols[n] = pc.field(n)
        return pads.dataset(table).to_table(columns=cols)

    def _finish(self, table: pa.Table) -> pa.Table:
        if self._blob_values:
            s = self._view.snapshot
            addresses = table.column(ROW_ADDRESS).combine_chunks()
            for name in self._blob_values:
                i = table.schema.get_field_index(name)
                values = pa.table(s.blob_values(name, addresses, table.column(i).combine_chunks())).column(0)
                field = pa.field(name, pa.large_binary(), table.schema.field(i).nullable, self._view.schema.field(name).metadata)
                table = table.set_column(i, field, values)
        if self._computed is not None:
            return self._computed_columns(table, (ROW_ID, ROW_ADDRESS))
        if self._projection is not None:
            out = self._projection.apply(table, self._view)
            for n in (ROW_ID, ROW_ADDRESS):
                if n in table.column_names and n not in self._hidden_columns:
                    out = out.append_column(table.schema.field(n), table.column(n))
            return out
        return table.select(self._output_names(table.column_names))

    def _scan_table(self, offset: int = 0, limit: Optional[int] = None, batch_rows: int = 131072,
                    json_stored: bool = False) -> pa.Table:
        """The scan's columns and rows (before filtering), read at once (`json_stored`: JSON
        columns as stored JSONB)."""
        return pa.table(
            self._view.snapshot.scan(
                self._read_columns(),
                fragment_ids=self._fragment_ids,
                offset=offset,
                limit=limit,
                batch_rows=batch_rows,
                with_row_id=self._with_row_id,
                with_row_address=self._with_row_address,
                include_deleted=self._include_deleted,
                json_stored=json_stored,
            )
        )

    def to_table(self) -> pa.Table:
        """Every row of the scan as a ``pyarrow.Table``."""
        if self._nearest is not None or self._fts is not None:
            return self._search()
        if self._order:
            return self._ordered_table()
        if self._filter is None:
            t = self._scan_table(offset=self._offset, limit=self._limit)
            self._rows_scanned += t.num_rows
            return self._finish(t)
        hit = self._index_prefilter()
        if hit is not None:
            return self._finish(self._indexed_rows(hit, self._read_columns()).slice(self._offset, self._limit))
        late = self._late_columns()
        if late and self._limit is None:
            return self._late_table(late)
        if late and (self._late is not None or self._few_pass(late)):  # a limited scan streams
            parts = list(self._late_filtered(late))
            return pa.concat_tables(parts) if parts else self._finish(self._empty())
        if self._limit is None:
            stored = self._json_stored()
            t = self._scan_table(json_stored=stored)
            self._rows_scanned += t.num_rows
            t = t.filter(self._evaluate(t, self._scan_filter(stored))).slice(self._offset)
            return self._finish(_json_text(t) if stored else t)
        batches = list(self.to_batches())
        if not batches:
            return self._finish(self._empty())
        return pa.Table.from_batches(batches)

    def _index_prefilter(self) -> Optional[_scalar_query.IndexPrefilter]:
        """The BTREE-index prefilter of this filtered scan, or ``None`` to scan every row
        (``use_scalar_index=False``, deleted rows asked for, or no index answers the filter)."""
        if not self._use_scalar_index or self._include_deleted or self._filter is None or self._filter_versions:
            return None
        return _scalar_query.plan(self._view, self._filter, self._fragment_ids)

    def _indexed_rows(self, hit: _scalar_query.IndexPrefilter, columns: Optional[List[str]]) -> pa.Table:
        """The rows passing the filter, in scan order: of a covered fragment, its candidate
        rows (taken by address; not filtered again when the index answered the whole filter
        exactly); runs of other fragments scanned. Offset and limit not applied. (One take
        per fragment: a take of several fragments at once cost more, measured at 10M rows:
        it decodes every fragment where these use the snapshot's kept small columns for
        some, and its parallel decoding waits on the slowest fragment on a busy machine.)"""
        s = self._view.snapshot
        order = self._fragment_ids
        if order is None:
            order = _scalar_query.fragment_order(self._view)
        rows = dict(with_row_id=self._with_row_id, with_row_address=self._with_row_address)
        parts: List[pa.Table] = []
        run: List[int] = []

        def add(t: pa.Table, exact: bool) -> None:
            self._rows_scanned += t.num_rows
            if t.num_rows:
                parts.append(t if exact else _filtered(t, self._filter))

        for fid in order + [None]:
            if fid is not None and fid not in hit.candidates:
                run.append(fid)
                continue
            if run:
                add(pa.table(s.scan(columns, fragment_ids=run, batch_rows=131072, **rows)), False)
                run = []
            if fid is not None and len(hit.candidates[fid]):
                taken = s.take_addresses(pa.array(hit.candidates[fid], pa.uint64()), columns=columns, **rows)
                add(pa.table(taken), hit.exact)
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return pa.table(s.scan(columns, fragment_ids=order[:1], limit=0, batch_rows=1, **rows))
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def _indexed_count(self, hit: _scalar_query.IndexPrefilter) -> int:
        """Rows passing a filter the index answered exactly: the candidates of the covered
        fragments (no row read) and the rows of the others that pass it."""
        order = self._fragment_ids
        if order is None:
            order = _scalar_query.fragment_order(self._view)
        n = sum(len(hit.candidates[f]) for f in order if f in hit.candidates)
        rest = [f for f in order if f not in hit.candidates]
        if rest:
            t = pa.table(self._view.snapshot.scan(self._filter.columns, fragment_ids=rest, batch_rows=131072))
            n += _filtered(t, self._filter).num_rows if t.num_rows else 0
        return n

    def _empty(self) -> pa.Table:
        return self._scan_table(limit=0, batch_rows=1)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The rows as record batches, decoded as the iterator advances (an ordered scan is
        read and sorted first; a nearest-neighbour search runs first). With
        ``strict_batch_size`` every batch but the last has exactly ``batch_size`` rows; with
        ``batch_size_bytes`` batches hold about that many bytes (at least one row)."""
        if self._batch_bytes is not None:
            for b in self._batches():
                per_row = b.nbytes / b.num_rows if b.num_rows else 0
                rows = max(1, int(self._batch_bytes // per_row)) if per_row else max(b.num_rows, 1)
                for start in range(0, b.num_rows, rows):
                    yield b.slice(start, rows)
            return
        if not self._strict_batches:
            yield from self._batches()
            return
        pending: List[pa.RecordBatch] = []
        held = 0
        for b in self._batches():
            pending.append(b)
            held += b.num_rows
            if held >= self._batch_size:
                t = pa.Table.from_batches(pending).combine_chunks()
                cut = held - held % self._batch_size
                yield from t.slice(0, cut).to_batches(max_chunksize=self._batch_size)
                pending, held = t.slice(cut).to_batches(), held - cut
        if held:
            yield from pa.Table.from_batches(pending).combine_chunks().to_batches()

    def _batches(self) -> Iterator[pa.RecordBatch]:
        if self._nearest is not None or self._fts is not None:
            yield from self._search().to_batches(max_chunksize=self._batch_size)
            return
        if self._order:
            yield from self._ordered_table().to_batches(max_chunksize=self._batch_size)
            return
        s = self._view.snapshot
        if self._filter is None:
            stream = s.scan_stream(
                self._read_columns(),
                fragment_ids=self._fragment_ids,
                offset=self._offset,
                limit=self._limit,
                batch_rows=self._batch_size,
                with_row_id=self._with_row_id,
                with_row_address=self._with_row_address,
                include_deleted=self._include_deleted,
                read_ahead=self._read_ahead,
            )
            while True:
                b = stream.next_batch()
                if b is None:
                    return
                for batch in self._finish(pa.table(b)).to_batches():
                    yield batch
            return
        hit = self._index_prefilter()
        if hit is not None:
            t = self._indexed_rows(hit, self._read_columns()).slice(self._offset, self._limit)
            yield from self._finish(t).to_batches(max_chunksize=self._batch_size)
            return
        late = self._late_columns()
        if late and self._late is None and not self._few_pass(late):
            late = []  # most rows pass (judged on the first batch): one read of every column is cheaper
        if late:
            for t in self._late_filtered(late):
                yield from t.to_batches(max_chunksize=self._batch_size)
            return
        stored = self._json_stored()
        stream = s.scan_stream(
            self._read_columns(),
            fragment_ids=self._fragment_ids,
            batch_rows=max(self._batch_size, 65536),
            with_row_id=self._with_row_id,
            with_row_address=self._with_row_address,
            include_deleted=self._include_deleted,
            read_ahead=self._read_ahead,
            coalesce=True,
            json_stored=stored,
        )
        for t, _ in self._filtered_stream(stream, stored):
            yield from self._finish(t).to_batches(max_chunksize=self._batch_size)

    def _filtered_stream(self, stream: Any, json_stored: bool = False) -> Iterator[Any]:
        """The rows of `stream`'s batches that pass the filter, after the scan's offset and
        limit, as ``(table, rows the batch had before filtering)``; empty results skipped.
        With `json_stored`, the stream's JSON columns are stored JSONB (see
        :meth:`_json_stored`): the filter reads them so, and the rows kept get their text."""
        skip, remaining = self._offset, self._limit
        if remaining is not None and remaining <= 0:
            return
        flt = self._scan_filter(json_stored)
        for t in _stream_tables(stream, FILTER_BATCH_ROWS):
            scanned = t.num_rows
            self._rows_scanned += scanned
            t = t.filter(self._evaluate(t, flt))
            if json_stored:
                t = _json_text(t)
            if skip:
                cut = min(skip, t.num_rows)
                t, skip = t.slice(cut), skip - cut
            if remaining is not None:
                t = t.slice(0, remaining)
                remaining -= t.num_rows
            if t.num_rows:
                yield t, scanned
            if remaining is not None and remaining <= 0:
                return

    def _copy(self) -> "ScanPlan":
        """A copy whose options can change without changing this plan's."""
        new = object.__new__(ScanPlan)
        new.__dict__.update(self.__dict__)  # (not copy.copy: that goes through __getstate__)
        new._hidden_columns = set(self._hidden_columns)
        return new

    def __getstate__(self) -> Dict[str, Any]:
        # (A pickled scanner pickles its dataset as a URI and version; the plan is bound to
        # that dataset's view again when it is unpickled: see `rebind`.)
        return {k: v for k, v in self.__dict__.items() if k != "_view"}

    def rebind(self, view: DatasetView) -> None:
        """Binds an unpickled plan to `view` (its dataset's version)."""
        self._view = view

    def to_pandas(self, *, blob_mode: str = "lazy", **kwargs: Any) -> Any:
        """The rows as a ``pandas.DataFrame`` (needs pandas). `blob_mode` says what blob
        columns hold: ``"lazy"`` (default) a :class:`~lancepy.blob.BlobFile` per value
        (``None`` for a null), ``"bytes"`` the values, ``"descriptions"`` what
        :meth:`to_table` returns. `kwargs` go to ``pyarrow.Table.to_pandas``."""
        if blob_mode not in ("lazy", "bytes", "descriptions"):
            raise InvalidArgumentError(f"blob_mode must be 'lazy', 'bytes' or 'descriptions', got {blob_mode!r}")
        _check_pandas_options(kwargs)
        names = self._columns if self._columns is not None else list(self._view.schema.names)
        blobs = self._view.loaded.blob_columns(names) if self._computed is None else []
        if not blobs or blob_mode == "descriptions":
            return self.to_table().to_pandas(**kwargs)
        scan = self._copy()
        if blob_mode == "bytes":
            scan.set_blob_handling("all_binary")
            return scan.to_table().to_pandas(**kwargs)
        scan._with_row_address = True
        table = scan.to_table()
        addresses = table.column(ROW_ADDRESS).to_pylist()
        files = {
            c: _blob.open_blob_files(self._view.store.uri, self._view.loaded, self._view.storage_options, c, addresses,
                                     table.column(c).to_pylist(), _blob.DEFAULT_BLOB_BUFFER_SIZE,
                                     self._view.base_store_params)
            for c in blobs
        }
        order = table.column_names if self._with_row_address else [c for c in table.column_names if c != ROW_ADDRESS]
        rest = table.drop_columns(blobs + ([] if self._with_row_address else [ROW_ADDRESS]))
        df = rest.to_pandas(**kwargs)
        for c in blobs:
            df.insert(order.index(c), c, files[c])
        return df

    def projected_schema(self) -> pa.Schema:
        """The schema of what the scan returns."""
        if self._nearest is not None or self._fts is not None:
            return self._search().schema
        return self._finish(self._empty()).schema

    def explain_plan(self, verbose: bool = False) -> str:
        """How lancepy will run this scan, as an indented tree of steps (lancepy's own steps,
        not pylance's DataFusion operators). `verbose` adds the fragment ids read."""
        return "\n".join(self._plan_lines(verbose))

    def analyze_plan(self, count_rows: bool = False) -> str:
        """Runs the scan (:meth:`to_table`, or :meth:`count_rows` when `count_rows` is true)
        and returns :meth:`explain_plan`'s tree with the time taken, the rows returned and the
        reads it made (requests to storage and their bytes, bytes copied out of mapped files;
        counted for this run alone, on every thread working for it, whatever other threads
        read meanwhile)."""
        tracker = _lancepy.IoTracker()
        self._rows_scanned = 0
        t0 = time.perf_counter()
        with tracker:
            rows = self.count_rows() if count_rows else self.to_table().num_rows
        elapsed = time.perf_counter() - t0
        io = tracker.counts()
        metrics = {"output_rows": rows, "rows_scanned": self._rows_scanned, "bytes_read": io["bytes"] + io["mapped_bytes"], "iops": io["requests"], "requests": io["requests"]}
        lines = self._plan_lines(True, counting=count_rows, metrics=metrics)
        head = (
            f"Analyze: elapsed={elapsed * 1e3:.3f} ms, output_rows={rows}, io_requests={io['requests']}, "
            f"io_bytes={io['bytes']}, mapped_bytes={io['mapped_bytes']}"
        )
        return "\n".join([head] + ["  " + line for line in lines])

    def _plan_lines(self, verbose: bool, counting: bool = False, metrics: Optional[Dict[str, int]] = None) -> List[str]:
        """The steps :meth:`to_table` (or :meth:`count_rows`) takes, outermost first. With
        `metrics` (an analyzed run), the read step carries the run's I/O (``bytes_read``:
        bytes fetched from storage or copied out of mapped files; ``iops`` and ``requests``:
        read requests) and a vector search step its output rows."""
        read_metrics = "" if metrics is None else (
            f", metrics=[output_rows={metrics['output_rows']}, "
            + ("" if counting else f"rows_scanned={metrics['rows_scanned']}, ")
            + f"bytes_read={metrics['bytes_read']}, iops={metrics['iops']}, requests={metrics['requests']}]")
        steps: List[str] = []
        if counting:
            steps.append("Count")
        names = self._columns if self._columns is not None else list(self._view.schema.names)
        if counting:
            pass
        elif self._computed is not None:
            steps.append("Project: " + ", ".join(f"{k} := {v}" for k, v in self._computed.items()))
        else:
            steps.append(f"Project: {names}")
        frags = self._fragment_ids if self._fragment_ids is not None else self._view.loaded.fragment_ids
        where = f"uri={self._view.uri}, version={self._view.version}, fragments={len(frags)}"
        if verbose:
            where += f" {list(frags)}"
        extra = "".join(f", {n}=true" for n, on in (("row_id", self._with_row_id), ("row_addr", self._with_row_address)) if on)
        if self._fts is not None and self._nearest is not None:
            if self._limit is not None or self._offset:
                steps.append(f"Slice: offset={self._offset}, limit={self._limit} (best _relevance_score first)")
            q = self._nearest
            vector_line = (f"NearestNeighbours: column={q.column}, k={q.k}, metric={q.metric}; "
                           + _vector.search_plan(self._view, q, self._fragment_ids, self._index_segments, self._fast_search))
            steps.extend(_hybrid.plan_lines(self._rrf_k, vector_line,
                                            _fts.plan_lines(self._view, self._fts, self._filter, self._prefilter)))
            steps.append(f"LanceRead: {where}, projection={names} (the fused rows, taken by address){extra}{read_metrics}")
        elif self._fts is not None:
            if self._limit is not None or self._offset:
                steps.append(f"Slice: offset={self._offset}, limit={self._limit} (best scores first, ties by row id)")
            steps.extend(_fts.plan_lines(self._view, self._fts, self._filter, self._prefilter))
            steps.append(f"LanceRead: {where}, projection={names} (the matched rows, taken by address){extra}{read_metrics}")
        elif self._nearest is not None:
            q = self._nearest
            lo = q.nprobes if q.nprobes is not None else (q.minimum_nprobes or _ivf_defaults.DEFAULT_NPROBES)
            hi = q.nprobes if q.nprobes is not None else q.maximum_nprobes
            steps.append(f"NearestNeighbours: column={q.column}, k={q.k}, metric={q.metric}, use_index={q.use_index}, "
                         f"minimum_nprobes={lo}, maximum_nprobes={'None' if hi is None else f'Some({hi})'}, "
                         f"refine_factor={q.refine_factor}" + (f", {'pre' if self._prefilter else 'post'}filter" if self._filter else ""))
            search = _vector.search_plan(self._view, q, self._fragment_ids, self._index_segments, self._fast_search)
            if metrics is not None:
                knn = f"KNNVectorDistance: metric={q.metric}"
                search = search.replace(knn, f"{knn}, metrics=[output_rows={metrics['output_rows']}]", 1)
            steps.append(search)
            if self._filter is not None:
                steps.append(f"Filter: {self._filter.text}")
            steps.append(f"LanceRead: {where}, projection=[{q.column}]{extra}{read_metrics}")
        else:
            if self._order:
                steps.append("Sort: " + ", ".join(f"{k.column_name} {'asc' if k.ascending else 'desc'}" for k in self._order) + " (whole scan read first)")
            if self._limit is not None or self._offset:
                steps.append(f"Slice: offset={self._offset}, limit={self._limit}")
            hit = self._index_prefilter() if not self._order else None
            late = self._late_columns() if not (self._order or counting or hit) else []
            if late and self._limit is not None and self._late is None and not self._few_pass(late):
                late = []  # a limited scan streams: late columns when the first rows say few pass
            if late:
                steps.append(f"LateMaterialize: {late} for the rows that pass (taken by row address when at most "
                             f"{self._TAKE_FRACTION:.0%} pass, else scanned and masked)")
            if self._filter is not None:
                steps.append(f"Filter: {self._filter.text} (Arrow compute, per batch)")
            if hit is not None:
                steps.append(f"ScalarIndexQuery: query={hit.query} (candidate rows of fragments "
                             f"{sorted(hit.candidates)} taken by address; other fragments scanned)")
            read = self._read_columns() or list(self._view.schema.names)
            if counting:
                read = list(self._filter.columns or read) if self._filter is not None else []
            early = [c for c in read if c not in late]
            pushed = "" if self._filter is not None or self._order else f", offset={self._offset}, limit={self._limit} (pushed down)"
            steps.append(f"LanceRead: {where}, projection=[{', '.join(early)}]{extra}"
                         f"{', row_addr=true (for the late columns)' if late else ''}"
                         f"{pushed}{read_metrics}")
        return [("  " * i) + line for i, line in enumerate(steps)]

    def count_rows(self) -> int:
        """Rows the scan returns."""
        if self._nearest is not None or self._fts is not None:
            return self._search().num_rows
        if self._include_deleted:
            return self.to_table().num_rows  # (deleted rows counted, as the scan returns them)
        s = self._view.snapshot
        if self._filter is None:
            n = s.count_rows(self._fragment_ids)
            n = max(n - self._offset, 0)
            return n if self._limit is None else min(n, self._limit)
        hit = self._index_prefilter()
        if hit is not None:
            n = self._indexed_count(hit) if hit.exact else self._indexed_rows(hit, self._filter.columns).num_rows
            n = max(n - self._offset, 0)
            return n if self._limit is None else min(n, self._limit)
        cols = self._filter.columns
        total, skip, remaining = 0, self._offset, self._limit
        stored = self._json_stored()
        flt = self._scan_filter(stored)
        if self._filter_versions:
            cols = None if cols is None else [c for c in cols if c not in lineage.COLUMNS]
        stream = s.scan_stream(cols, fragment_ids=self._fragment_ids, batch_rows=131072, coalesce=True, json_stored=stored,
                               with_row_address=bool(self._filter_versions))
        for t in _stream_tables(stream, 131072):
            total += pc.sum(self._evaluate(t, flt).cast(pa.int64())).as_py() or 0
        total = max(total - skip, 0)
        return total if remaining is None else min(total, remaining)


def _json_text(t: pa.Table) -> pa.Table:
    """`t` with its stored JSON columns (JSONB, read for a filter: see
    ``ScanPlan._json_stored``) as the JSON text scans return."""
    if t.num_columns == 0:
        return t
    return pa.table(_lancepy.json_columns_as_text(t))
