"""Projections as pylance accepts them: dataset columns, nested field paths (``"struct.x"``)
and the system columns ``_rowid``, ``_rowaddr``, ``_rowoffset``, ``_row_created_at_version``
and ``_row_last_updated_at_version``, returned in the order asked
(a name may repeat). Scans and takes read the top-level columns a projection needs and call
:meth:`Projection.apply` on what they read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy._table import lineage
from lancepy.exceptions import ColumnNotFoundError

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.snapshot import DatasetView

ROW_OFFSET = "_rowoffset"
SYSTEM_COLUMNS = (ROW_ID, ROW_ADDRESS, ROW_OFFSET, *lineage.COLUMNS)


def _resolve_path(schema: pa.Schema, name: str) -> Optional[Tuple[str, List[str]]]:
    """``(top-level column, struct field names below it)`` for a dotted path into structs,
    or None when `name` names no field. A column whose own name holds dots wins."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        top = ".".join(parts[:cut])
        if top not in schema.names:
            continue
        t = schema.field(top).type
        rest = parts[cut:]
        ok = True
        for p in rest:
            if not pa.types.is_struct(t) or t.get_field_index(p) < 0:
                ok = False
                break
            t = t.field(p).type
        if ok:
            return top, rest
    return None


class Projection:
    """A list of output names resolved against a dataset schema."""

    def __init__(self, names: Sequence[str], schema: pa.Schema) -> None:
        self.names = list(names)
        self.read: List[str] = []
        self._paths: Dict[str, Tuple[str, List[str]]] = {}
        unknown = []
        for n in self.names:
            if n in SYSTEM_COLUMNS:
                continue
            if n in schema.names:
                top = n
            else:
                path = _resolve_path(schema, n)
                if path is None:
                    unknown.append(n)
                    continue
                self._paths[n] = path
                top = path[0]
            if top not in self.read:
                self.read.append(top)
        if unknown:
            raise ColumnNotFoundError(f"columns {unknown} do not exist; the dataset has {schema.names}")
        self.row_id = ROW_ID in self.names
        self.row_offset = ROW_OFFSET in self.names
        self.row_versions = [n for n in self.names if n in lineage.COLUMNS]
        self.row_address = ROW_ADDRESS in self.names or self.row_offset or bool(self.row_versions)
        #: The system columns a read must return for :meth:`apply`.
        self.needs = {n for n, on in ((ROW_ID, self.row_id), (ROW_ADDRESS, self.row_address)) if on}

    @staticmethod
    def needed(names: Sequence[str], schema: pa.Schema) -> bool:
        """Whether `names` asks for more than a list of distinct top-level columns."""
        return len(set(names)) != len(names) or any(n not in schema.names for n in names)

    def apply(self, table: pa.Table, view: "DatasetView", offsets: Optional[pa.Array] = None) -> pa.Table:
        """The projection's columns from `table` (which holds :attr:`read` and the system
        columns asked for). `offsets` are the rows' offsets when the caller knows them (a
        take by offset); otherwise they are computed from the row addresses."""
        cols: List[pa.ChunkedArray] = []
        given = offsets is not None  # (a take's offsets: pylance marks that column not null)
        fields: List[pa.Field] = []
        for n in self.names:
            if n == ROW_OFFSET:
                if offsets is None:
                    offsets = row_offsets(view, table.column(ROW_ADDRESS))
                col = offsets if isinstance(offsets, pa.ChunkedArray) else pa.chunked_array([offsets])
                fields.append(pa.field(n, pa.uint64(), nullable=not given))
            elif n in lineage.COLUMNS:
                col = pa.chunked_array([lineage.versions_at(view, table.column(ROW_ADDRESS), lineage.COLUMNS[n])])
                fields.append(pa.field(n, pa.uint64(), nullable=True))
            elif n in self._paths:
                top, rest = self._paths[n]
                col = table.column(top)
                f = table.schema.field(top)
                for p in rest:
                    col = pc.struct_field(col, p) if col.num_chunks else pa.chunked_array([], f.type.field(p).type)
                    f = f.type.field(p)
                fields.append(pa.field(n, f.type, f.nullable, f.metadata))
            else:
                col = table.column(n)
                fields.append(table.schema.field(n))
            cols.append(col)
        return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def row_offsets(view: "DatasetView", addresses: Any) -> pa.Array:
    """Each row address's offset in the dataset (its position in an unfiltered scan of this
    version, deleted rows not counted), as uint64. Computed from the fragments' row counts
    and deletion vectors, which are kept per version."""
    table = view.state.get("row_offset_table")
    if table is None:
        base = 0
        table = {}
        rows = view.fragment_rows()
        for fid in view.fragment_ids:
            deleted = np.sort(pa.table(view.snapshot.deleted_rows(fid)).column(0).to_numpy().astype(np.int64))
            table[fid] = (base, deleted)
            base += rows[fid][1]
        view.state["row_offset_table"] = table
    addr = addresses.to_numpy() if isinstance(addresses, pa.ChunkedArray) else np.asarray(addresses)
    addr = addr.astype(np.uint64)
    frag = (addr >> np.uint64(32)).astype(np.int64)
    local = (addr & np.uint64(0xFFFFFFFF)).astype(np.int64)
    out = np.empty(len(addr), dtype=np.uint64)
    for fid in np.unique(frag):
        sel = frag == fid
        b, deleted = table[int(fid)]
        out[sel] = b + local[sel] - np.searchsorted(deleted, local[sel])
    return pa.array(out, pa.uint64())
