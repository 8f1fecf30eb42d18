"""Fragments: the units a dataset is made of, and writing them without committing.

A fragment is a set of rows stored in one or more data files (one per group of columns),
plus an optional deletion file. :func:`write_fragments` writes new data files and returns
their :class:`FragmentMetadata` without creating a version; a driver then commits them all
at once (this is how distributed writes work: each Spark task writes fragments, the driver
commits)::

    frags = lancepy.fragment.write_fragments(table, "data.lance")     # in each task
    payload = [f.to_json() for f in frags]                             # or pickle them
    frags = [FragmentMetadata.from_json(p) for p in payload]           # on the driver
    lancepy.LanceDataset.commit("data.lance", lancepy.LanceOperation.Append(frags), read_version=v)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import pyarrow as pa

# The public names of pylance's ``lance.fragment`` that live in lower layers, re-exported.
from lancepy._core.conform import align_to_schema, to_record_batch_reader  # noqa: F401
from lancepy._core.schema import lance_fields_for, schema_differences  # noqa: F401
from lancepy._ops.write import _write, row_runs, write_fragments  # noqa: F401
from lancepy._table.fragments import (  # noqa: F401
    DEFAULT_DATA_STORAGE_VERSION,
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    DataFile,
    DeletionFile,
    FragmentMetadata,
    normalize_storage_version,
)
from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:
    from lancepy.dataset import LanceDataset, LanceSchema

__all__ = ["FragmentMetadata", "DataFile", "DeletionFile", "LanceFragment", "write_fragments"]


class LanceFragment:
    """One fragment of an open dataset version."""

    def __init__(
        self, dataset: "LanceDataset", fragment_id: Optional[int], *, fragment: Optional[FragmentMetadata] = None
    ) -> None:
        # The version it was made from, even if `dataset` moves on later (as pylance's).
        self._ds = dataset._pinned()
        self._meta_value: Optional[FragmentMetadata] = fragment
        if fragment is None:
            if fragment_id is None:
                raise InvalidArgumentError("LanceFragment needs a fragment_id or fragment=")
            if int(fragment_id) not in self._ds._fragment_id_set():
                raise InvalidArgumentError(f"fragment {fragment_id} does not exist in version {dataset.version}")
            self._id = int(fragment_id)
        else:
            self._id = fragment.id

    @property
    def _meta(self) -> FragmentMetadata:
        """This fragment's manifest entry (looked up in the version's manifest on first use)."""
        if self._meta_value is None:
            self._meta_value = self._ds._fragment_metadata(self._id)
        return self._meta_value

    @property
    def fragment_id(self) -> int:
        """The fragment's id."""
        return self._id

    def delete(self, predicate: str) -> Optional[FragmentMetadata]:
        """Marks this fragment's rows matching `predicate` (SQL text or a pyarrow expression)
        deleted: writes a new deletion file and returns the updated fragment (``None`` if no
        row is left), for a :class:`~lancepy.LanceOperation.Delete` the caller commits. Nothing
        is committed here. A predicate that matches no row returns the fragment unchanged."""
        from lancepy.filters import compile_filter

        flt = compile_filter(predicate, self._ds.schema)
        if flt is None:
            raise InvalidArgumentError("delete needs a predicate; use 'true' to delete every row")
        return self._delete_addresses(self._ds._matching_addresses(flt, [self.fragment_id]))

    def delete_rows(self, offsets: Iterable[int]) -> Optional[FragmentMetadata]:
        """Marks the rows at `offsets` (physical row offsets inside this fragment, 0-based)
        deleted, as :meth:`delete` does for a predicate. Offsets of rows already deleted are
        accepted; an offset past the fragment's rows raises
        :class:`~lancepy.exceptions.IndexOutOfRangeError`."""
        from lancepy.exceptions import IndexOutOfRangeError

        offs = [int(o) for o in offsets]
        bad = [o for o in offs if not 0 <= o < self._meta.physical_rows]
        if bad:
            raise IndexOutOfRangeError(
                f"row offset {bad[0]} is outside fragment {self.fragment_id} ({self._meta.physical_rows} rows)"
            )
        return self._delete_addresses(pa.array([(self.fragment_id << 32) | o for o in offs], pa.uint64()))

    def validate(self) -> None:
        """Checks this fragment only (unlike :meth:`LanceDataset.validate`): its data files
        exist with the recorded sizes, their footers and metadata read, they hold the
        fragment's rows and mapped columns, and its deletion file reads and matches the
        manifest. Raises :class:`~lancepy.exceptions.CorruptFileError` listing every problem."""
        from lancepy._table.validate import _validate_fragment
        from lancepy.exceptions import CorruptFileError

        store = self._ds._store
        sizes = {p: size for p, size, _ in store.list("data")}
        problems: List[str] = []
        checked = {"data_files": 0, "deletion_files": 0}
        _validate_fragment(store, self._ds._snapshot, self._meta._data, sizes, problems, checked, self._ds._storage_options)
        if problems:
            raise CorruptFileError(f"{self._ds.uri} fragment {self.fragment_id} is damaged: " + "; ".join(problems))

    def _delete_addresses(self, addresses: Any) -> Optional[FragmentMetadata]:
        if len(addresses) == 0:
            return self._meta
        for fid, frag_json in self._ds._snapshot.delete_rows(addresses, self._ds.version):
            if fid == self.fragment_id:
                return None if frag_json is None else FragmentMetadata._from_dict(json.loads(frag_json))
        return self._meta

    @property
    def metadata(self) -> FragmentMetadata:
        """The manifest entry."""
        return self._meta

    @property
    def schema(self) -> pa.Schema:
        """The dataset's schema (every fragment of a version has it)."""
        return self._ds.schema

    @property
    def physical_rows(self) -> int:
        """Rows stored, deleted ones included."""
        return self._ds._snapshot_rows()[self.fragment_id][0]

    @property
    def num_deletions(self) -> int:
        """Rows marked deleted."""
        phys, live = self._ds._snapshot_rows()[self.fragment_id]
        return phys - live

    def count_rows(self, filter: Any = None) -> int:
        """Live rows (matching `filter`)."""
        return self._ds.scanner(filter=filter, fragments=[self]).count_rows()

    def data_files(self) -> List[DataFile]:
        """The data files."""
        return self._meta.files

    def deletion_file(self) -> Optional[str]:
        """The path of the deletion file relative to the dataset root (as pylance
        returns it), or ``None``."""
        d = self._meta.deletion_file
        return None if d is None else d.path(self.fragment_id)

    def scanner(
        self,
        *,
        columns: Union[List[str], Dict[str, str], None] = None,
        batch_size: Optional[int] = None,
        filter: Any = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        batch_readahead: int = 16,
        blob_handling: Optional[str] = None,
        order_by: Optional[List[Any]] = None,
        use_scalar_index: Optional[bool] = None,
        io_buffer_size: Optional[int] = None,
        late_materialization: Union[bool, List[str], None] = None,
        include_deleted_rows: Optional[bool] = None,
        batch_size_bytes: Optional[int] = None,
        strict_batch_size: Optional[bool] = None,
    ) -> Any:
        """A scanner over this fragment only; the parameters are
        :meth:`lancepy.LanceDataset.scanner`'s."""
        args = {k: v for k, v in locals().items() if k != "self"}
        return self._ds.scanner(fragments=[self], **args)

    def to_batches(
        self,
        *,
        columns: Union[List[str], Dict[str, str], None] = None,
        batch_size: Optional[int] = None,
        filter: Any = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        batch_readahead: int = 16,
        blob_handling: Optional[str] = None,
        order_by: Optional[List[Any]] = None,
        use_scalar_index: Optional[bool] = None,
        io_buffer_size: Optional[int] = None,
        late_materialization: Union[bool, List[str], None] = None,
        include_deleted_rows: Optional[bool] = None,
        batch_size_bytes: Optional[int] = None,
        strict_batch_size: Optional[bool] = None,
    ) -> Iterator[pa.RecordBatch]:
        """The fragment's live rows as batches; the parameters are :meth:`scanner`'s."""
        args = {k: v for k, v in locals().items() if k != "self"}
        return self.scanner(**args).to_batches()

    def to_table(
        self,
        columns: Union[List[str], Dict[str, str], None] = None,
        filter: Any = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        blob_handling: Optional[str] = None,
        order_by: Optional[List[Any]] = None,
        use_scalar_index: Optional[bool] = None,
        io_buffer_size: Optional[int] = None,
        late_materialization: Union[bool, List[str], None] = None,
        include_deleted_rows: Optional[bool] = None,
        batch_size_bytes: Optional[int] = None,
        strict_batch_size: Optional[bool] = None,
    ) -> pa.Table:
        """The fragment's live rows; the parameters are :meth:`scanner`'s."""
        args = {k: v for k, v in locals().items() if k != "self"}
        return self.scanner(**args).to_table()

    def to_pandas(
        self,
        columns: Union[List[str], Dict[str, str], None] = None,
        filter: Any = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        batch_size: Optional[int] = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        blob_mode: str = "lazy",
        order_by: Optional[List[Any]] = None,
    ) -> Any:
        """The fragment's live rows as a ``pandas.DataFrame`` (needs pandas); `blob_mode` as
        in :meth:`lancepy.LanceScanner.to_pandas`."""
        args = {k: v for k, v in locals().items() if k not in ("self", "blob_mode")}
        return self.scanner(**args).to_pandas(blob_mode=blob_mode)

    def head(self, num_rows: int) -> pa.Table:
        """The first `num_rows` live rows of the fragment."""
        return self.scanner(limit=num_rows).to_table()

    def take(self, indices: Any, columns: Union[List[str], Dict[str, str], None] = None) -> pa.Table:
        """Rows at positions (among live rows) of this fragment."""
        addresses = self._ds.scanner(columns=[], fragments=[self], with_row_address=True).to_table().column("_rowaddr")
        picked = addresses.take(pa.array(indices, pa.int64())).combine_chunks()
        # by address: with stable row ids, _take_rows would read these as row ids
        return pa.table(self._ds._snapshot.take_addresses(picked, columns=self._ds._plain_columns(columns)))

    def merge_columns(
        self,
        value_func: Any,
        columns: Optional[List[str]] = None,
        batch_size: Optional[int] = None,
        reader_schema: Optional[pa.Schema] = None,
    ) -> Tuple[FragmentMetadata, "LanceSchema"]:
        """Computes new columns for this fragment without committing them (a worker's step
        of a distributed backfill): `value_func` maps each batch of the `columns` (all by
        default) over every physical row (deleted rows included, so the new data file lines
        up with the fragment's others) to a batch, table or dict of new columns. Batches hold
        at most `batch_size` rows (default: the whole fragment in one batch). Returns this
        fragment with one new data file and the dataset's schema extended by the new columns
        (field ids from ``max_field_id + 1``); commit them with
        ``LanceOperation.Merge(fragments, schema)``. SQL expressions (a dict) and readers of
        precomputed values as `value_func`, and `reader_schema`, are not supported: they
        raise :class:`~lancepy.exceptions.NotSupportedError`."""
        from lancepy._core.schema import _as_table
        from lancepy._table.operations import LanceSchema

        if reader_schema is not None:
            raise UnsupportedError("merge_columns(reader_schema=...): readers of precomputed values are not supported")
        if isinstance(value_func, dict) or not callable(value_func):
            raise UnsupportedError(
                f"merge_columns with a {type(value_func).__name__}: only a function batch -> new columns is supported"
            )
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0):
            raise InvalidArgumentError(f"batch_size must be a positive int, got {batch_size!r}")
        ds = self._ds
        cols = list(columns) if columns is not None else ds.schema.names
        missing = [c for c in cols if c not in ds.schema.names]
        if missing:
            raise ColumnNotFoundError(f"merge_columns: no columns {missing} in the dataset")
        phys = self.physical_rows
        src = pa.table(ds._snapshot.scan(
            cols,
            fragment_ids=[self.fragment_id],
            batch_rows=batch_size or max(phys, 1),
            include_deleted=True,
        ))
        outs = [_as_table(value_func(b)) for b in src.to_batches()] if phys else []
        if not outs:
            raise InvalidArgumentError(f"fragment {self.fragment_id} has no rows to compute columns for")
        new = pa.concat_tables([t.combine_chunks() for t in outs])
        if new.num_rows != phys:
            raise InvalidArgumentError(f"value_func returned {new.num_rows} rows for fragment {self.fragment_id}, which has {phys}")
        new_schema = pa.schema([pa.field(f.name, f.type, True, f.metadata) for f in new.schema])
        clash = [n for n in new_schema.names if n in ds.schema.names]
        if clash:
            raise InvalidArgumentError(f"columns {clash} already exist in the dataset")
        new = pa.Table.from_arrays(list(new.columns), schema=new_schema)
        lance = lance_fields_for(new_schema, ds.max_field_id + 1)
        made = _write(ds.uri, new.to_reader(), lance["fields"], lance["metadata"], max(phys, 1), ds.data_storage_version,
                      storage_options=ds._storage_options)
        if len(made) != 1:
            raise InvalidArgumentError("internal error: expected one data file for the fragment")
        own = self._meta._manifest_json()
        meta = FragmentMetadata._from_dict({**own, "files": own["files"] + made[0]._manifest_json()["files"]})
        m = ds._loaded.manifest
        schema = LanceSchema(m.get("fields", []) + lance["fields"], m.get("schema_metadata", {}))
        return meta, schema

    def __repr__(self) -> str:
        return f"LanceFragment(id={self.fragment_id}, physical_rows={self._meta.physical_rows})"
