"""One file of a scalar index, in either file format its footer names.

pylance writes scalar index files (``page_data.lance``, ``page_lookup.lance``,
``bitmap_page_lookup.lance``, ...) as Lance 2.x files; pylance before 0.21 wrote BTREE
index files in the legacy (v1) file format (footer version 0.1/0.2), where the page lookup's
``page_idx`` names a *batch* of ``page_data.lance`` (each page was written as one batch) and
the row ids column is ``row_ids`` rather than ``ids``. pylance 14 still reads those files, so
lancepy reads them too: :class:`IndexFile` opens either kind (the native reader dispatches on
the footer) and answers the questions the index readers ask.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import pyarrow as pa

from lancepy import _lancepy
from lancepy._core.paths import expand_path
from lancepy._core.storage import normalize_storage_options
from lancepy.exceptions import CorruptFileError


class IndexFile:
    """An open index file: ``legacy`` when it is a legacy (v1) file."""

    def __init__(self, path: str, storage_options: Any = None) -> None:
        self.path = path
        self._reader = _lancepy.FileReader(
            expand_path(path), normalize_storage_options(storage_options), allow_legacy=True
        )
        offsets = self._reader.batch_offsets
        #: a legacy file's batch offsets (0 first, the row count last); None for 2.x files
        self.batch_offsets: Optional[list] = list(offsets) if offsets is not None else None

    @property
    def legacy(self) -> bool:
        return self.batch_offsets is not None

    def num_rows(self) -> int:
        return int(self._reader.num_rows)

    def schema(self) -> pa.Schema:
        return pa.schema(self._reader.schema())

    def schema_metadata(self) -> Dict[bytes, bytes]:
        """The schema's metadata, keys and values as bytes (as pyarrow gives them)."""
        return {k.encode(): v.encode() for k, v in self._reader.schema_metadata().items()}

    def read_all(self) -> pa.Table:
        return self.read_range(0, self.num_rows())

    def read_range(self, start: int, num_rows: int) -> pa.Table:
        return pa.table(self._reader.read_range(start, num_rows, None))

    def batch_range(self, batch: int) -> Tuple[int, int]:
        """``(first row, number of rows)`` of a legacy file's batch `batch`."""
        offsets = self.batch_offsets
        if offsets is None or not 0 <= batch < len(offsets) - 1:
            raise CorruptFileError(f"{self.path}: no batch {batch} (the file has {max(0, len(offsets or [0]) - 1)})")
        return offsets[batch], offsets[batch + 1] - offsets[batch]


def row_ids_column(table: pa.Table) -> str:
    """The row id column of a BTREE ``page_data.lance``: ``ids`` (pylance ≥ 0.21) or
    ``row_ids`` (older pylance's legacy files)."""
    return "ids" if "ids" in table.column_names or "row_ids" not in table.column_names else "row_ids"
