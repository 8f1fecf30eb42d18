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

import copy
import gc
import json
import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import pyarrow as pa

# The public names of pylance's ``lance.fragment`` that live in lower layers, re-exported.
from lancepy._core.iostats import owner_tracker, track_io
from lancepy._core.conform import align_to_schema, to_record_batch_reader  # noqa: F401
from lancepy._core.schema import lance_fields_for, schema_differences  # noqa: F401
from lancepy._ops import fragment_ops as _fragment_ops
from lancepy._ops import mutations as _mutations
from lancepy._ops import take as _take_ops
from lancepy._ops.write import _write, create_fragment, row_runs, write_fragments  # noqa: F401
from lancepy._table.fragments import (  # noqa: F401
    DEFAULT_DATA_STORAGE_VERSION,
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    DataFile,
    DeletionFile,
    FragmentMetadata,
    RowDatasetVersionMeta,
    RowIdMeta,
    normalize_storage_version,
)
from lancepy.arrow_dataset import ArrowFragment, FragmentArrowMembers
from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError, SchemaMismatchError, UnsupportedError

if TYPE_CHECKING:
    from lancepy.dataset import LanceDataset, LanceSchema

__all__ = [
    "FragmentMetadata",
    "DataFile",
    "DeletionFile",
    "RowIdMeta",
    "RowDatasetVersionMeta",
    "LanceFragment",
    "FragmentSession",
    "write_fragments",
]


@track_io(owner_tracker)
class LanceFragment(FragmentArrowMembers, ArrowFragment):
    """One fragment of an open dataset version."""

    def __init__(
        self, dataset: "LanceDataset", fragment_id: Optional[int], *, fragment: Optional[FragmentMetadata] = None
    ) -> None:
        self._ds = self._version_of(dataset)
        self._meta_value: Optional[FragmentMetadata] = fragment
        if fragment is None:
            if fragment_id is None:
                raise InvalidArgumentError("LanceFragment needs a fragment_id or fragment=")
            if int(fragment_id) not in self._ds._fragment_id_set():
                raise InvalidArgumentError(f"fragment {fragment_id} does not exist in version {dataset.version}")
            self._id = int(fragment_id)
        else:
            self._id = fragment.id

    @staticmethod
    def _version_of(dataset: "LanceDataset") -> "LanceDataset":
        """The dataset a fragment of `dataset` reads: the version it was made from, even if
        `dataset` moves on later (as pylance's), without default scan options (a fragment's
        scans ignore them, as pylance's)."""
        pinned = dataset._pinned()
        if pinned._default_scan_options:
            pinned = copy.copy(pinned)
            pinned._default_scan_options = None
        return pinned

    @classmethod
    def _of_version(cls, version: "LanceDataset", fragment_ids: Iterable[int]) -> List["LanceFragment"]:
        """Fragments `fragment_ids`, taken from the manifest of `version` (a dataset from
        :meth:`_version_of`): no membership check per fragment (``get_fragments`` of 10,000
        fragments made 20,000 tracked calls for them)."""
        out = []
        # (thousands of small objects at once: the cyclic collector, run on every 700
        # allocations, would walk the process's objects again and again meanwhile)
        collecting = gc.isenabled()
        gc.disable()
        try:
            for fid in fragment_ids:
                frag = cls.__new__(cls)
                frag._ds, frag._meta_value, frag._id = version, None, int(fid)
                out.append(frag)
        finally:
            if collecting:
                gc.enable()
        return out

    def __reduce__(self) -> Any:
        # The dataset pickles as its URI, version and options; the fragment as its id there.
        return LanceFragment, (self._ds, self._id)

    @staticmethod
    def create_from_file(filename: str, dataset: "LanceDataset", fragment_id: int) -> FragmentMetadata:
        """A fragment made of an existing data file: `filename` (relative to the dataset's
        ``data/`` directory, e.g. written with :class:`lancepy.file.LanceFileWriter`) must hold
        the dataset's schema, columns in the dataset's order. Nothing is written or
        committed; commit the fragment with ``LanceOperation.Append`` (which numbers it anew)
        or ``Rewrite``. A file of another schema raises
        :class:`~lancepy.exceptions.SchemaMismatchError`, a missing one
        :class:`~lancepy.exceptions.NotFoundError`."""
        return _fragment_ops.fragment_from_file(filename, dataset._view, fragment_id)

    @staticmethod
    def create(
        dataset_uri: Union[str, "os.PathLike[str]"],
        data: Any,
        fragment_id: Optional[int] = None,
        schema: Optional[pa.Schema] = None,
        max_rows_per_group: Optional[int] = 1024,
        progress: Any = None,
        mode: str = "append",
        *,
        data_storage_version: Optional[str] = None,
        use_legacy_format: Optional[bool] = None,
        storage_options: Optional[Dict[str, str]] = None,
        namespace_client: Any = None,
        table_id: Optional[List[str]] = None,
        session: Any = None,
    ) -> FragmentMetadata:
        """Writes `data` as one data file of a new fragment of the dataset at `dataset_uri`
        (which need not exist yet) without committing, and returns the fragment (id
        `fragment_id`, default 0). Commit it with ``LanceOperation.Append`` or ``Overwrite``.

        `schema` is the schema of `data`. With `mode` ``"append"`` and an existing dataset
        the data must match its schema and gets its field ids; otherwise (``"create"``,
        ``"overwrite"``, or no dataset yet) field ids are numbered from 0. `progress`
        (``begin(fragment)`` / ``complete(fragment)``) hears ``begin`` with the fragment's id
        and data file path before any row is written (``physical_rows`` ``None``), then
        ``complete``. `max_rows_per_group` is the rows per batch of a legacy (v1) file (``None``
        or 0: 1024). `data_storage_version` as in :func:`lancepy.write_dataset`;
        `use_legacy_format` is deprecated (``True`` asks for the legacy format).
        Data without columns or rows raises :class:`~lancepy.exceptions.EmptyDataError` (an
        ``OSError`` too, as pylance raises). Namespaces and sessions raise
        :class:`~lancepy.exceptions.NotSupportedError`."""
        import warnings

        for name, value in (("namespace_client", namespace_client), ("table_id", table_id), ("session", session)):
            if value is not None:
                raise UnsupportedError(f"LanceFragment.create({name}=...) is not supported by lancepy")
        if max_rows_per_group is not None and (
            isinstance(max_rows_per_group, bool) or not isinstance(max_rows_per_group, int) or max_rows_per_group < 0
        ):
            raise InvalidArgumentError(
                f"max_rows_per_group must be a non-negative int or None, got {max_rows_per_group!r}"
            )
        if use_legacy_format is not None:
            warnings.warn(
                "use_legacy_format is deprecated, use data_storage_version instead", DeprecationWarning, stacklevel=2
            )
            data_storage_version = "legacy" if use_legacy_format else "stable"
        return create_fragment(
            dataset_uri, data, fragment_id, schema, progress, mode, data_storage_version, storage_options,
            max_rows_per_group=max_rows_per_group or None,
        )

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
        from lancepy._ops.scan import compile_scan_filter

        flt, system = compile_scan_filter(predicate, self._ds.schema)
        if flt is None:
            raise InvalidArgumentError("delete needs a predicate; use 'true' to delete every row")
        return self._delete_addresses(_mutations._matching_addresses(self._ds._view, flt, [self.fragment_id], system))

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

        store = self._ds._view.store
        sizes = {p: size for p, size, _ in store.list("data")}
        problems: List[str] = []
        checked = {"data_files": 0, "deletion_files": 0}
        _validate_fragment(
            store, self._ds._view.snapshot, self._meta, sizes, problems, checked, self._ds._view.storage_options
        )
        if problems:
            raise CorruptFileError(f"{self._ds.uri} fragment {self.fragment_id} is damaged: " + "; ".join(problems))

    def _delete_addresses(self, addresses: Any) -> Optional[FragmentMetadata]:
        if len(addresses) == 0:
            return self._meta
        for fid, frag_json in self._ds._view.snapshot.delete_rows(addresses, self._ds.version):
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
        return self._take(indices, columns, False)

    def _take(self, indices: Any, columns: Any, with_row_address: bool) -> pa.Table:
        return _take_ops.take_in_fragment(self._ds._view, self.fragment_id, indices, columns, with_row_address)

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
        up with the fragment's others; `columns` may name ``_rowid`` and ``_rowaddr``, null
        for deleted rows) to a batch, table or dict of new columns. Batches hold
        at most `batch_size` rows (default: the whole fragment in one batch). Returns this
        fragment with one new data file and the dataset's schema extended by the new columns
        (field ids from ``max_field_id + 1``); commit them with
        ``LanceOperation.Merge(fragments, schema)``. `value_func` may also be a dict of new
        column names to SQL expressions over the dataset's columns, or precomputed values: an
        iterator of record batches of `reader_schema` (or a reader or table) holding one
        row per physical row. A :func:`~lancepy.udf.batch_udf` with a checkpoint file is
        refused (checkpoints are for :meth:`LanceDataset.add_columns`)."""
        from lancepy._core.schema import ROW_ADDRESS, ROW_ID, _as_table

        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0
        ):
            raise InvalidArgumentError(f"batch_size must be a positive int, got {batch_size!r}")
        if isinstance(value_func, dict):
            if columns is not None:
                raise InvalidArgumentError("merge_columns: columns= applies to functions, not to SQL expressions")
            return _fragment_ops.sql_columns(self._ds._view, self.fragment_id, value_func, batch_size)
        if isinstance(value_func, (pa.Table, pa.RecordBatch)):
            return self._merge_precomputed(pa.Table.from_batches(value_func.to_batches(), value_func.schema).to_reader(),
                                           reader_schema)
        if not callable(value_func) and (reader_schema is not None or isinstance(value_func, pa.RecordBatchReader)):
            return self._merge_precomputed(value_func, reader_schema)
        if reader_schema is not None:
            raise InvalidArgumentError("merge_columns: reader_schema= goes with an iterator of precomputed batches, not a function")
        if not callable(value_func):
            raise UnsupportedError(
                f"merge_columns with a {type(value_func).__name__}: only a function batch -> new columns "
                "or a dict of SQL expressions is supported"
            )
        from lancepy.udf import BatchUDF

        if isinstance(value_func, BatchUDF):
            if value_func.cache is not None:
                raise InvalidArgumentError(
                    "A checkpoint file cannot be used with LanceFragment.merge_columns (a fragment's columns are "
                    "computed in one call); use LanceDataset.add_columns, or a batch_udf without checkpoint_file")
            call = value_func._call  # (each result checked against the function's output schema)
        else:
            call = value_func
        ds = self._ds
        cols = list(columns) if columns is not None else ds.schema.names
        missing = [c for c in cols if c not in ds.schema.names and c not in (ROW_ID, ROW_ADDRESS)]
        if missing:
            raise ColumnNotFoundError(f"merge_columns: no columns {missing} in the dataset")
        phys = self.physical_rows
        src = pa.table(
            ds._view.snapshot.scan(
                [c for c in cols if c not in (ROW_ID, ROW_ADDRESS)],
                fragment_ids=[self.fragment_id],
                batch_rows=batch_size or max(phys, 1),
                include_deleted=True,
                with_row_id=ROW_ID in cols,
                with_row_address=ROW_ADDRESS in cols,
            )
        ).select(cols)
        if isinstance(value_func, BatchUDF) and value_func.output_schema is None and phys:
            call(src.slice(0, 1).to_batches()[0])  # as pylance: the schema of a one-row sample, checked below
        outs = [_as_table(call(b)) for b in src.to_batches()] if phys else []
        if not outs:
            raise InvalidArgumentError(f"fragment {self.fragment_id} has no rows to compute columns for")
        new = pa.concat_tables([t.combine_chunks() for t in outs])
        if new.num_rows != phys:
            raise InvalidArgumentError(
                f"value_func returned {new.num_rows} rows for fragment {self.fragment_id}, which has {phys}"
            )
        return _fragment_ops.add_columns_file(ds._view, self.fragment_id, new)

    def _merge_precomputed(self, batches: Any, reader_schema: Optional[pa.Schema]) -> Tuple[FragmentMetadata, "LanceSchema"]:
        """:meth:`merge_columns` of new columns given as batches (an iterator of record
        batches of `reader_schema`, or a ``RecordBatchReader``): one value per physical row."""
        if isinstance(batches, pa.RecordBatchReader):
            if reader_schema is not None and not batches.schema.equals(reader_schema):
                raise SchemaMismatchError(f"merge_columns: the reader's schema {batches.schema} is not reader_schema {reader_schema}")
            reader_schema = batches.schema
        if not isinstance(reader_schema, pa.Schema):
            raise InvalidArgumentError(f"merge_columns: reader_schema must be a pyarrow.Schema, got {type(reader_schema).__name__}")
        try:
            new = pa.Table.from_batches(list(batches), schema=reader_schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise SchemaMismatchError(f"merge_columns: the batches do not match reader_schema: {e}") from None
        if new.num_rows != self.physical_rows:
            raise InvalidArgumentError(
                f"merge_columns: {new.num_rows} rows given for fragment {self.fragment_id}, which has {self.physical_rows}")
        return _fragment_ops.add_columns_file(self._ds._view, self.fragment_id, new.combine_chunks())

    def merge(
        self, data_obj: Any, left_on: str, right_on: Optional[str] = None, schema: Optional[pa.Schema] = None
    ) -> Tuple[FragmentMetadata, "LanceSchema"]:
        """Adds the columns of `data_obj` to this fragment by a left join of the fragment's
        column `left_on` (a column, ``_rowid`` or ``_rowaddr``) with the data's column
        `right_on` (default: `left_on`), without committing: returns the fragment with one
        new data file and the dataset's schema extended by the new columns. Rows without a
        match get nulls; where the data repeats a key, its last row is used. Commit with
        ``LanceOperation.Merge(fragments, schema)``. A key column missing on either side
        raises :class:`~lancepy.exceptions.ColumnNotFoundError`; a data column the dataset
        has already, :class:`~lancepy.exceptions.InvalidArgumentError`."""
        return _fragment_ops.merge(self._ds._view, self.fragment_id, data_obj, left_on, right_on, schema)

    def update_columns(
        self,
        data_obj: Any,
        left_on: str = "_rowid",
        right_on: Optional[str] = None,
        schema: Optional[pa.Schema] = None,
        *,
        with_offsets: bool = False,
    ) -> Union[Tuple[FragmentMetadata, List[int]], Tuple[FragmentMetadata, List[int], bytes]]:
        """Replaces values of existing columns of this fragment without committing: the
        fragment's rows are joined on `left_on` (``_rowid`` by default, ``_rowaddr`` or a
        column) with the rows of `data_obj` on `right_on` (default: `left_on`); a matched row
        takes the data's values of its other columns (the last matching row where keys
        repeat), other rows keep theirs. Writes one data file with the updated columns (the
        old files stop serving them) and returns ``(fragment, field ids modified)``, plus,
        with `with_offsets`, the matched physical row offsets as a portable roaring bitmap.
        Commit with ``LanceOperation.Update(updated_fragments=..., fields_modified=...)``.
        A column the dataset lacks raises :class:`~lancepy.exceptions.ColumnNotFoundError`
        ("does not exist"); a metadata column (``_rowid``, ``_rowaddr``, ...) or the join
        column among those to update, :class:`~lancepy.exceptions.InvalidArgumentError`."""
        return _fragment_ops.update_columns(
            self._ds._view, self.fragment_id, data_obj, left_on, right_on, schema, with_offsets
        )

    def open_session(
        self, columns: Optional[List[str]] = None, with_row_address: Optional[bool] = None
    ) -> "FragmentSession":
        """A session for repeated :meth:`FragmentSession.take` calls with the same `columns`
        (all by default), optionally with each row's ``_rowaddr``."""
        return FragmentSession(self, columns, with_row_address)

    def __repr__(self) -> str:
        return f"LanceFragment(id={self.fragment_id}, physical_rows={self._meta.physical_rows})"


class FragmentSession:
    """Repeated takes from one fragment with a fixed projection (pylance's
    ``FragmentSession``): :meth:`take` returns the rows at positions among the fragment's
    live rows."""

    def __init__(self, fragment: LanceFragment, columns: Optional[List[str]], with_row_address: bool) -> None:
        self._fragment = fragment
        self._columns = None if columns is None else list(columns)
        self._with_row_address = bool(with_row_address)

    def take(self, indices: Any) -> pa.Table:
        """The rows at `indices` (positions among the fragment's live rows), in that order."""
        return self._fragment._take(indices, self._columns, self._with_row_address)
