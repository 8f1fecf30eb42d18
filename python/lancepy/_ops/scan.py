"""Whole-table reads of one version (a :class:`~lancepy._table.snapshot.DatasetView`) for the
operations that rewrite or join rows (updates, merges, new columns): the rows a filter
keeps, in scan order, with their row addresses, blob columns as their values. Scans with
the public options (limits, search, ordering, batching) are :class:`lancepy.LanceScanner`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

import pyarrow as pa

from lancepy._core.evaluate import _evaluate
from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy._table import lineage
from lancepy.filters import Filter, compile_filter

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.snapshot import DatasetView


#: The system columns a filter may read besides the dataset's: uint64 columns read (or, for
#: the row versions, computed from the row addresses) alongside the scan.
FILTER_SYSTEM_COLUMNS = (ROW_ID, ROW_ADDRESS, *lineage.COLUMNS)


def compile_scan_filter(filter: Any, schema: pa.Schema) -> Tuple[Optional[Filter], Tuple[str, ...]]:
    """The compiled filter and the system columns (``_rowid``, ``_rowaddr``,
    ``_row_created_at_version``, ``_row_last_updated_at_version``) it refers to. Those are
    compiled as uint64 columns the scan reads or computes alongside (:func:`evaluate_on`)."""
    if not isinstance(filter, str) or not any(n in filter for n in FILTER_SYSTEM_COLUMNS):
        return compile_filter(filter, schema), ()
    extended = schema
    for n in FILTER_SYSTEM_COLUMNS:
        if n not in schema.names:
            extended = extended.append(pa.field(n, pa.uint64()))
    flt = compile_filter(filter, extended)
    used = tuple(n for n in FILTER_SYSTEM_COLUMNS if n not in schema.names and (flt.columns is None or n in flt.columns))
    return flt, used


def stored_columns(columns: Optional[Sequence[str]]) -> Optional[List[str]]:
    """A filter's columns (``None``: all) less the system columns, which no file stores."""
    return None if columns is None else [c for c in columns if c not in FILTER_SYSTEM_COLUMNS]


def needs_address(system: Sequence[str]) -> bool:
    """Whether a filter reading the system columns `system` needs the rows' addresses."""
    return ROW_ADDRESS in system or any(n in lineage.COLUMNS for n in system)


def evaluate_on(view: DatasetView, table: pa.Table, flt: Filter, system: Sequence[str]) -> pa.ChunkedArray:
    """`flt`'s mask over `table` (rows of `view`'s version, with ``_rowaddr`` where
    :func:`needs_address`), the row version columns among `system` computed first."""
    versions = [n for n in system if n in lineage.COLUMNS]
    return _evaluate(lineage.with_versions(view, table, versions) if versions else table, flt)


def read_rows(view: DatasetView, columns: Optional[Sequence[str]], filter: Any = None, *,
              with_row_address: bool = False, with_row_id: bool = False, blobs_as_values: bool = False) -> pa.Table:
    """The live rows of `view` that `filter` (SQL text or a pyarrow expression) keeps, in scan
    order: `columns` (top-level names; ``None``: all), then ``_rowaddr`` with
    `with_row_address` and ``_rowid`` with `with_row_id`. `blobs_as_values` reads blob
    columns' values (``large_binary``) instead of their descriptions."""
    schema = view.schema
    flt, system = compile_scan_filter(filter, schema)
    names = list(schema.names) if columns is None else list(columns)
    read: Optional[List[str]] = names
    if flt is not None:
        if flt.columns is None:
            read = None
        else:
            read = list(dict.fromkeys(names + [c for c in flt.columns if c not in FILTER_SYSTEM_COLUMNS]))
    blobs = view.loaded.blob_columns(names) if blobs_as_values else []
    want_address = with_row_address or needs_address(system) or bool(blobs)
    t = pa.table(view.snapshot.scan(read, fragment_ids=None, batch_rows=131072, with_row_id=with_row_id or ROW_ID in system,
                                    with_row_address=want_address))
    if flt is not None:
        t = t.filter(evaluate_on(view, t, flt, system))
    for name in blobs:
        i = t.schema.get_field_index(name)
        values = pa.table(view.snapshot.blob_values(name, t.column(ROW_ADDRESS).combine_chunks(),
                                                    t.column(i).combine_chunks())).column(0)
        field = pa.field(name, pa.large_binary(), t.schema.field(i).nullable, schema.field(name).metadata)
        t = t.set_column(i, field, values)
    return t.select(names + ([ROW_ADDRESS] if with_row_address else []) + ([ROW_ID] if with_row_id else []))


def count_matching(view: DatasetView, filter: Any) -> int:
    """How many live rows of `view` `filter` keeps."""
    flt, system = compile_scan_filter(filter, view.schema)
    if flt is None:
        return view.count_rows()
    read = None if flt.columns is None else [c for c in flt.columns if c not in FILTER_SYSTEM_COLUMNS]
    t = pa.table(view.snapshot.scan(read, fragment_ids=None, batch_rows=131072, with_row_id=ROW_ID in system,
                                    with_row_address=True))
    return t.filter(evaluate_on(view, t, flt, system)).num_rows
