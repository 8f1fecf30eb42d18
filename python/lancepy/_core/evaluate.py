"""Evaluating compiled filters and expressions over Arrow tables, and gathering a native scan
stream's batches into tables big enough to evaluate a filter over at once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, List, Optional

import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError
from lancepy.filters import Filter
from lancepy.filters import evaluate as evaluate_expression

if TYPE_CHECKING:  # pragma: no cover
    pass


# Rows a filtered scan gathers before evaluating the filter once over all of them.
FILTER_BATCH_ROWS = 65536


def _stream_tables(stream: Any, min_rows: int) -> Iterator[pa.Table]:
    """The batches of a native scan stream as tables of at least half `min_rows` rows (the
    last may hold fewer): evaluating a filter costs a fixed ~0.1 ms per call, and a scan
    over many small fragments gives one small batch per fragment. A coalescing stream
    (``coalesce=True``) hands out batches just short of its batch size (whole fragments'
    rows): those pass as they are, not joined in pairs."""
    min_rows = max(min_rows // 2, 1)
    pending: List[pa.Table] = []
    held = 0
    while (b := stream.next_batch()) is not None:
        t = pa.table(b)
        if t.num_columns == 0 or (not pending and t.num_rows >= min_rows):
            # (Tables without columns are passed on as they are: concatenating them loses
            # their row counts.)
            yield t
            continue
        pending.append(t)
        held += t.num_rows
        if held >= min_rows:
            yield pa.concat_tables(pending).combine_chunks()
            pending, held = [], 0
    if pending:
        yield pending[0] if len(pending) == 1 else pa.concat_tables(pending).combine_chunks()


def _evaluate(table: pa.Table, flt: Filter) -> pa.ChunkedArray:
    """A boolean mask (nulls count as false) of `flt` over `table`."""
    try:
        mask = evaluate_expression(table, flt.expression)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidArgumentError(f"Invalid user input: cannot evaluate filter {flt.text!r}: {e}") from None
    return pc.fill_null(mask, False)


def _filtered(table: pa.Table, flt: Filter) -> pa.Table:
    """The rows of `table` where `flt` is true (NULL counts as false), in order: one Acero
    filter node, which costs less than evaluating a mask and filtering by it where the
    table is a few rows (an indexed point query's)."""
    try:
        from pyarrow import acero
    except ImportError:  # pragma: no cover - pyarrow without Acero
        acero = None
    if acero is None or table.num_columns == 0:
        return table.filter(_evaluate(table, flt))
    plan = acero.Declaration.from_sequence([
        acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
        acero.Declaration("filter", acero.FilterNodeOptions(flt.expression)),
    ])
    try:
        return plan.to_table(use_threads=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidArgumentError(f"Invalid user input: cannot evaluate filter {flt.text!r}: {e}") from None


def _evaluate_values(table: pa.Table, expr: Any, target: Optional[pa.DataType]) -> pa.Array:
    try:
        col = evaluate_expression(table, expr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidArgumentError(f"cannot evaluate expression {expr}: {e}") from None
    if col.num_chunks == 0:
        col = pa.chunked_array([], type=col.type)
    if target is not None and col.type != target:
        col = col.cast(target)
    arr = col.combine_chunks()
    if len(arr) != table.num_rows:  # a scalar expression
        arr = pa.array([arr[0].as_py() if len(arr) else None] * table.num_rows, type=arr.type)
    return arr
