"""Statistics of a dataset version (``ds.stats``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List

from lancepy.exceptions import UnsupportedError

if TYPE_CHECKING:  # pragma: no cover
    from lancepy.dataset import LanceDataset


class LanceStats:
    """``ds.stats``: statistics about one dataset version."""

    def __init__(self, ds: LanceDataset) -> None:
        self._ds = ds

    def dataset_stats(self, max_rows_per_group: int = 1024) -> Dict[str, int]:
        """``{"num_deleted_rows", "num_fragments", "num_small_files"}`` (fragments with
        fewer than `max_rows_per_group` physical rows are small), as pylance reports."""
        rows = self._ds._snapshot_rows()
        return {
            "num_deleted_rows": sum(phys - live for phys, live in rows.values()),
            "num_fragments": len(rows),
            "num_small_files": sum(1 for phys, _ in rows.values() if phys < max_rows_per_group),
        }

    def index_stats(self, index_name: str) -> Dict[str, Any]:
        """Statistics of index `index_name` (see :meth:`LanceDataset.index_statistics`)."""
        return self._ds.index_statistics(index_name)

    def data_stats(self) -> DataStatistics:
        """Bytes on disk of every field (struct and list parents hold none themselves),
        summed over the data files of this version; reads each data file's metadata."""
        from lancepy.file import LanceFileReader

        ds = self._ds
        loaded = ds._view.loaded
        totals: Dict[int, int] = {}
        for frag in loaded.fragments:
            for df in frag.files:
                if df.base_id is not None:
                    raise UnsupportedError("data_stats of data files under other base paths is not supported")
                reader = LanceFileReader(ds._view.store.child_uri(f"data/{df.path}"), ds._view.storage_options)
                columns = reader.file_statistics().columns
                for fid, col in zip(df.fields, df.column_indices or []):
                    if fid >= 0 and 0 <= col < len(columns):
                        totals[fid] = totals.get(fid, 0) + columns[col].size_bytes
        return DataStatistics([FieldStatistics(f.id, totals.get(f.id, 0)) for f in loaded.fields])


@dataclass
class FieldStatistics:
    """Bytes one field takes in the data files (its pages' buffers)."""

    id: int
    bytes_on_disk: int


@dataclass
class DataStatistics:
    """:meth:`LanceStats.data_stats`: every field of the schema, in schema order."""

    fields: List[FieldStatistics]
