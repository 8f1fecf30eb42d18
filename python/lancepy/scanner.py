"""Scans: :class:`LanceScanner`, what :meth:`LanceDataset.scanner` builds: pylance's
signatures and argument checks over a :class:`~lancepy._ops.scan_plan.ScanPlan`, which plans
and runs the scan (columns, filters, late materialization, ordering, limits and offsets,
vector and full-text search, and ``explain_plan`` / ``analyze_plan``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence

import pyarrow as pa

from lancepy._ops.scan_plan import ColumnOrdering, ScanPlan, scan_columns
from lancepy._core.args import _refuse
from lancepy._core.iostats import owner_tracker, track_io
from lancepy.arrow_dataset import ArrowScanner, ScannerArrowMembers
from lancepy.exceptions import InvalidArgumentError, UnsupportedError
from lancepy.fragment import LanceFragment

if TYPE_CHECKING:  # pragma: no cover
    from lancepy.dataset import LanceDataset

__all__ = ["ColumnOrdering", "LanceScanner", "slice_rows"]


@track_io(owner_tracker)
class LanceScanner(ScannerArrowMembers, ArrowScanner):
    """A configured read of one dataset version.

    Without a filter, offset and limit are applied natively and only the rows needed are
    read. With a filter, the filter's columns are read along with the projection, the
    filter runs in Arrow's C++ kernels, and the projection is applied after.
    """

    def __init__(self, ds: LanceDataset, columns: Any, filter: Any, limit: Optional[int], offset: Optional[int],
                 with_row_id: bool, with_row_address: bool, batch_size: Optional[int], fragments: Optional[Sequence[Any]]) -> None:
        self._ds = ds
        ids = None if fragments is None else [f.fragment_id if isinstance(f, LanceFragment) else int(f) for f in fragments]
        self._plan = ScanPlan(ds._view, columns, filter, limit, offset, with_row_id, with_row_address, batch_size, ids)

    def __setstate__(self, state: Any) -> None:
        super().__setstate__(state)
        self._plan.rebind(self._ds._view)

    @classmethod
    def _from_options(cls, ds: LanceDataset, o: Dict[str, Any]) -> "LanceScanner":
        """The scanner of :meth:`LanceDataset.scanner` over `ds` (a pinned version): `o` is
        that method's arguments by name, ``default_scan_options`` already applied; options
        lancepy does not build are refused here."""
        _refuse(
            scan_stats_callback=o["scan_stats_callback"],
            row_addr_allowlist=o["row_addr_allowlist"],
            row_addr_blocklist=o["row_addr_blocklist"],
        )
        scanner = cls(ds, scan_columns(o["columns"], o["full_text_query"]), o["filter"], o["limit"], o["offset"],
                      bool(o["with_row_id"]), bool(o["with_row_address"]), o["batch_size"], o["fragments"])
        plan = scanner._plan
        plan.set_order(o["order_by"])
        plan.set_late_materialization(o["late_materialization"])
        plan.set_blob_handling(o["blob_handling"])
        if o["nearest"] is not None:
            if o["order_by"]:
                raise UnsupportedError("order_by together with nearest= (results come nearest first)")
            plan.set_nearest(o["nearest"], bool(o["prefilter"]))
            plan._fast_search = bool(o["fast_search"])
        plan.set_include_deleted(o["include_deleted_rows"])
        plan.set_full_text(o["full_text_query"], bool(o["prefilter"]), o["columns"])
        plan.set_rrf_k(o["rrf_k"])
        plan._use_scalar_index = o["use_scalar_index"] is not False
        plan._no_scoring_column = bool(o["disable_scoring_autoprojection"])
        plan.set_read_ahead(o["batch_readahead"])
        plan.set_batching(bool(o["strict_batch_size"]), o["batch_size_bytes"])
        if o["index_segments"] is not None:
            if o["nearest"] is None:
                raise InvalidArgumentError("index_segments= restricts a vector search: give nearest= too")
            if isinstance(o["index_segments"], (str, bytes)):
                raise InvalidArgumentError("index_segments takes a list of segment uuids")
            plan._index_segments = list(o["index_segments"])
        return scanner


    def to_table(self) -> pa.Table:
        """Every row of the scan as a ``pyarrow.Table``."""
        return self._plan.to_table()

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The rows as record batches, decoded as the iterator advances (an ordered scan is
        read and sorted first; a nearest-neighbour search runs first). With
        ``strict_batch_size`` every batch but the last has exactly ``batch_size`` rows; with
        ``batch_size_bytes`` batches hold about that many bytes (at least one row)."""
        # (A generator of its own: every step runs with the dataset's I/O tracker current.)
        yield from self._plan.to_batches()

    def count_rows(self) -> int:
        """Rows the scan returns."""
        return self._plan.count_rows()

    def to_pandas(self, *, blob_mode: str = "lazy", **kwargs: Any) -> Any:
        """The rows as a ``pandas.DataFrame`` (needs pandas). `blob_mode` says what blob
        columns hold: ``"lazy"`` (default) a :class:`~lancepy.blob.BlobFile` per value
        (``None`` for a null), ``"bytes"`` the values, ``"descriptions"`` what
        :meth:`to_table` returns. `kwargs` go to ``pyarrow.Table.to_pandas``."""
        return self._plan.to_pandas(blob_mode=blob_mode, **kwargs)

    def head(self, num_rows: int) -> pa.Table:
        """The first `num_rows` rows of the scan."""
        if num_rows < 0:
            raise InvalidArgumentError(f"num_rows must be non-negative, got {num_rows}")
        out: List[pa.RecordBatch] = []
        remaining = num_rows
        for b in self.to_batches():
            if remaining <= 0:
                break
            out.append(b.slice(0, remaining))
            remaining -= min(b.num_rows, remaining)
        return pa.Table.from_batches(out, schema=self.projected_schema)

    @property
    def dataset_schema(self) -> pa.Schema:
        """The schema of the dataset being scanned."""
        return self._ds._schema

    def to_reader(self) -> pa.RecordBatchReader:
        """A ``pyarrow.RecordBatchReader`` over the scan."""
        schema = self.projected_schema
        return pa.RecordBatchReader.from_batches(schema, self.to_batches())

    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of what the scan returns."""
        return self._plan.projected_schema()

    def explain_plan(self, verbose: bool = False) -> str:
        """How lancepy will run this scan, as an indented tree of steps (lancepy's own steps,
        not pylance's DataFusion operators). `verbose` adds the fragment ids read."""
        return self._plan.explain_plan(verbose)

    def analyze_plan(self, count_rows: bool = False) -> str:
        """Runs the scan (:meth:`to_table`, or :meth:`count_rows` when `count_rows` is true)
        and returns :meth:`explain_plan`'s tree with the time taken, the rows returned and the
        reads it made (requests to storage and their bytes, bytes copied out of mapped files;
        counted for this run alone, on every thread working for it, whatever other threads
        read meanwhile)."""
        return self._plan.analyze_plan(count_rows)


def slice_rows(ds: Any, start: int, end: int, columns: Any = None) -> pa.Table:
    """See :meth:`LanceDataset.slice`: rows `start` to `end` in scan order, one offset/limit scan."""
    for name, value in (("start", start), ("end", end)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidArgumentError(f"{name} must be an int, got {value!r}")
    if start < 0:
        raise InvalidArgumentError(f"start must be non-negative, got {start}")
    if end < start:
        raise InvalidArgumentError(f"end ({end}) must be >= start ({start})")
    return ds.scanner(columns=columns, offset=start, limit=end - start).to_table()
