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
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import pyarrow as pa

from lancepy import _lancepy
from lancepy import blob as _blob
from lancepy.file import page_bytes
from lancepy.exceptions import (
    ColumnNotFoundError,
    DatasetNotFoundError,
    InvalidArgumentError,
    SchemaMismatchError,
    UnsupportedError,
)

if TYPE_CHECKING:
    from lancepy.dataset import LanceDataset, LanceSchema

__all__ = ["FragmentMetadata", "DataFile", "DeletionFile", "LanceFragment", "write_fragments"]

DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024
#: pylance's default: 90 GiB.
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024**3
DEFAULT_DATA_STORAGE_VERSION = "2.2"
_VERSION_ALIASES = {"stable": "2.2", "2.0": "2.0", "2.1": "2.1", "2.2": "2.2"}


def normalize_storage_version(version: Optional[str]) -> str:
    """``"2.0"``, ``"2.1"`` or ``"2.2"`` from a user's spelling (``"stable"`` = 2.2)."""
    if version is None:
        return DEFAULT_DATA_STORAGE_VERSION
    v = str(version).strip().lower()
    if v in _VERSION_ALIASES:
        return _VERSION_ALIASES[v]
    if v in ("legacy", "0.1", "0.2", "next", "2.3"):
        raise UnsupportedError(f"data_storage_version {version!r}: lancepy writes 2.0, 2.1 and 2.2 data files")
    raise InvalidArgumentError(f"unknown data_storage_version {version!r}; use '2.0', '2.1', '2.2' or 'stable'")


@dataclass(frozen=True)
class DataFile:
    """One data file of a fragment (a view of the manifest entry; pylance's fields)."""

    path: str
    fields: List[int]
    column_indices: Optional[List[int]] = None
    file_major_version: int = 0
    file_minor_version: int = 0
    file_size_bytes: Optional[int] = None
    base_id: Optional[int] = None
    """The base path the file lives under (``None``: the dataset root)."""

    @classmethod
    def _from_dict(cls, f: Dict[str, Any]) -> "DataFile":
        """From a manifest entry's JSON form."""
        return cls(
            path=f.get("path", ""),
            fields=list(f.get("fields", [])),
            column_indices=list(f.get("column_indices", [])),
            file_major_version=f.get("file_major_version", 0),
            file_minor_version=f.get("file_minor_version", 0),
            file_size_bytes=f.get("file_size_bytes", 0),
            base_id=f.get("base_id"),
        )

    def _to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "path": self.path,
            "fields": list(self.fields),
            "column_indices": list(self.column_indices if self.column_indices is not None else range(len(self.fields))),
            "file_major_version": self.file_major_version,
            "file_minor_version": self.file_minor_version,
        }
        if self.file_size_bytes is not None:
            out["file_size_bytes"] = self.file_size_bytes
        if self.base_id is not None:
            out["base_id"] = self.base_id
        return out


@dataclass(frozen=True)
class DeletionFile:
    """The deletion file of a fragment (pylance's fields, in pylance's order)."""

    read_version: int
    id: int
    file_type: str
    """``"array"`` (Arrow IPC, ``.arrow``) or ``"bitmap"`` (roaring, ``.bin``)."""
    num_deleted_rows: int
    base_id: Optional[int]
    """The base path the file lives under (``None``: the dataset root)."""

    def path(self, fragment_id: int, base_uri: Optional[str] = None) -> str:
        """Path relative to the root of its base (the dataset root if `base_id` is ``None``),
        or under `base_uri` when given."""
        ext = "bin" if self.file_type == "bitmap" else "arrow"
        rel = f"_deletions/{fragment_id}-{self.read_version}-{self.id}.{ext}"
        return rel if base_uri is None else f"{base_uri.rstrip('/')}/{rel}"

    def _to_dict(self) -> Dict[str, Any]:
        if self.file_type not in ("array", "bitmap"):
            raise InvalidArgumentError(f"deletion file_type must be 'array' or 'bitmap', got {self.file_type!r}")
        out: Dict[str, Any] = {
            "file_type": 1 if self.file_type == "bitmap" else 0,
            "read_version": self.read_version,
            "id": self.id,
            "num_deleted_rows": self.num_deleted_rows,
        }
        if self.base_id is not None:
            out["base_id"] = self.base_id
        return out


_DATA_FILE_KEYS = ("path", "fields", "column_indices", "file_major_version", "file_minor_version", "file_size_bytes", "base_id")
_SEQUENCE_KEYS = ("row_id_sequence", "last_updated_at_version_sequence", "created_at_version_sequence")


class FragmentMetadata:
    """The manifest entry of one fragment (``lance.table.DataFragment``).

    Plain data: picklable and convertible to/from JSON, so it can travel from the task that
    wrote a fragment to the process that commits it. Constructed like pylance's
    (``FragmentMetadata(id, files, physical_rows, deletion_file)``); row-id and
    row-version metadata and overlays cannot be given (they raise
    :class:`~lancepy.exceptions.NotSupportedError`).
    """

    __slots__ = ("_data",)

    def __init__(
        self,
        id: int,
        files: List[DataFile],
        physical_rows: int,
        deletion_file: Optional[DeletionFile] = None,
        row_id_meta: Any = None,
        created_at_version_meta: Any = None,
        last_updated_at_version_meta: Any = None,
        overlays: Optional[List[Any]] = None,
    ) -> None:
        for name, value in (
            ("row_id_meta", row_id_meta),
            ("created_at_version_meta", created_at_version_meta),
            ("last_updated_at_version_meta", last_updated_at_version_meta),
            ("overlays", overlays or None),
        ):
            if value is not None:
                raise UnsupportedError(f"FragmentMetadata({name}=...) is not supported by lancepy")
        if not all(isinstance(f, DataFile) for f in files):
            raise InvalidArgumentError("FragmentMetadata files must be DataFile objects")
        data: Dict[str, Any] = {"id": int(id), "files": [f._to_dict() for f in files], "physical_rows": int(physical_rows)}
        if deletion_file is not None:
            data["deletion_file"] = deletion_file._to_dict()
        self._data = data

    @classmethod
    def _from_dict(cls, data: Dict[str, Any]) -> "FragmentMetadata":
        """Wraps a manifest entry (its JSON form) without copying."""
        out = cls.__new__(cls)
        out._data = data
        return out

    @property
    def id(self) -> int:
        """Fragment id (assigned at commit time for new fragments)."""
        return int(self._data.get("id", 0))

    @property
    def physical_rows(self) -> int:
        """Rows stored, deleted ones included."""
        return int(self._data.get("physical_rows", 0))

    @property
    def num_deletions(self) -> int:
        """Rows marked deleted."""
        d = self._data.get("deletion_file")
        return int(d.get("num_deleted_rows", 0)) if d else 0

    @property
    def num_rows(self) -> int:
        """Live rows."""
        return self.physical_rows - self.num_deletions

    @property
    def files(self) -> List[DataFile]:
        """The data files."""
        return [DataFile._from_dict(f) for f in self._data.get("files", [])]

    def data_files(self) -> List[DataFile]:
        """The data files (pylance's older spelling of :attr:`files`)."""
        return self.files

    @property
    def deletion_file(self) -> Optional[DeletionFile]:
        """The deletion file, if any."""
        d = self._data.get("deletion_file")
        if not d:
            return None
        return DeletionFile(
            read_version=d.get("read_version", 0),
            id=d.get("id", 0),
            file_type="bitmap" if d.get("file_type", 0) in (1, "BITMAP_ARROW_ARRAY", "bitmap") else "array",
            num_deleted_rows=d.get("num_deleted_rows", 0),
            base_id=d.get("base_id"),
        )

    def to_json(self) -> Dict[str, Any]:
        """A JSON-able dict in pylance's layout (``FragmentMetadata.from_json`` of either
        library reads it). lancepy's stable-row-id sequences ride along under their
        protobuf names (pylance ignores them)."""
        d = self._data
        deletion = self.deletion_file
        out: Dict[str, Any] = {
            "id": self.id,
            "files": [{k: f.get(k) for k in _DATA_FILE_KEYS} for f in d.get("files", [])],
            "overlays": [],
            "physical_rows": self.physical_rows,
            "deletion_file": None
            if deletion is None
            else {
                "read_version": deletion.read_version,
                "id": deletion.id,
                "file_type": deletion.file_type,
                "num_deleted_rows": deletion.num_deleted_rows,
                "base_id": deletion.base_id,
            },
            "row_id_meta": None,
            "created_at_version_meta": None,
            "last_updated_at_version_meta": None,
        }
        for key in _SEQUENCE_KEYS:
            if d.get(key) is not None:
                out[key] = d[key]
        return json.loads(json.dumps(out))

    def _manifest_json(self) -> Dict[str, Any]:
        """A copy of the manifest entry (the JSON form of ``DataFragment``)."""
        return json.loads(json.dumps(self._data))

    @staticmethod
    def from_json(json_data: Union[str, Dict[str, Any]]) -> "FragmentMetadata":
        """Inverse of :meth:`to_json` (accepts the dict or its JSON text)."""
        data = json.loads(json_data) if isinstance(json_data, str) else json_data
        if not isinstance(data, dict) or "files" not in data:
            raise InvalidArgumentError("fragment metadata must be a dict with a 'files' entry")
        data = dict(data)
        # pylance's JSON (FragmentMetadata.to_json there): the same fields, plus its own
        # row-id / version metadata and overlays, and deletion file types as text.
        for key in ("overlays", "row_id_meta", "created_at_version_meta", "last_updated_at_version_meta"):
            if data.get(key):
                raise UnsupportedError(f"fragment metadata with {key} is not supported by lancepy")
            data.pop(key, None)
        deletion = data.get("deletion_file")
        if isinstance(deletion, dict) and isinstance(deletion.get("file_type"), str):
            kind = deletion["file_type"].lower()
            if kind not in ("array", "bitmap"):
                raise InvalidArgumentError(f"unknown deletion file type {deletion['file_type']!r}")
            data["deletion_file"] = dict(deletion, file_type=1 if kind == "bitmap" else 0)
        return FragmentMetadata._from_dict(data)

    def __getstate__(self) -> str:
        return json.dumps(self._data)

    def __setstate__(self, state: str) -> None:
        self._data = json.loads(state)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FragmentMetadata) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"FragmentMetadata(id={self.id}, physical_rows={self.physical_rows}, files={[f.path for f in self.files]})"


def _lancepy_dataset_reader(ds: Any) -> pa.RecordBatchReader:
    """A lancepy dataset's rows, streamed, with its blob columns as their values (still
    marked ``lance-encoding:blob``, so that a copy stores them as blobs again)."""
    blobs = {n for n in ds.schema.names if _blob.blob_field_kind(ds._loaded.manifest, n) is not None}
    reader = ds.scanner(blob_handling="all_binary").to_reader()
    if not blobs:
        return reader
    schema = pa.schema(
        [f.with_metadata({**(f.metadata or {}), b"lance-encoding:blob": b"true"}) if f.name in blobs else f
         for f in reader.schema],
        metadata=reader.schema.metadata,
    )
    return pa.RecordBatchReader.from_batches(schema, (pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in reader))


def to_record_batch_reader(data: Any, schema: Optional[pa.Schema] = None) -> pa.RecordBatchReader:
    """Anything tabular (pyarrow tables/batches/readers, lists, iterators or generators of
    batches, pandas, dicts, lists of dicts, datasets, Arrow PyCapsule producers) as a
    ``RecordBatchReader`` of valid batches of `schema` (cast to it) or of the input's own
    schema: the one conversion step of every write (see :mod:`lancepy._conform`)."""
    from lancepy._conform import conform

    return conform(data, schema)


def _describe(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def _same_type(a: pa.DataType, b: pa.DataType) -> bool:
    if a == b:
        return True
    if pa.types.is_fixed_size_list(a) and pa.types.is_fixed_size_list(b):
        return a.list_size == b.list_size and _same_type(a.value_type, b.value_type)
    return False


def schema_differences(
    got: pa.Schema, target: pa.Schema, compatible: Callable[[pa.DataType, pa.DataType], bool] = _same_type
) -> List[str]:
    """How `got` differs from `target` (columns matched by name, in any order), in words:
    missing and unexpected columns, and columns whose types are not `compatible`."""
    missing = [n for n in target.names if n not in got.names]
    extra = [n for n in got.names if n not in target.names]
    wrong = [
        f"{f.name}: {got.field(f.name).type} (dataset has {f.type})"
        for f in target
        if f.name in got.names and not compatible(got.field(f.name).type, f.type)
    ]
    parts = []
    if missing:
        parts.append(f"missing columns {missing}")
    if extra:
        parts.append(f"unexpected columns {extra}")
    if wrong:
        parts.append("different types: " + "; ".join(wrong))
    return parts


def align_to_schema(reader: pa.RecordBatchReader, target: pa.Schema) -> pa.RecordBatchReader:
    """Checks that `reader`'s columns are `target`'s (any order) and reorders them.

    Raises :class:`SchemaMismatchError` naming the difference before anything is written.
    """
    got = reader.schema
    # Blob-v2 columns are written from binary values (stored as descriptions + sidecars).
    target = _blob.writable_schema(target, got)
    parts = schema_differences(got, target)
    if parts or len(set(got.names)) != len(got.names):
        raise SchemaMismatchError(
            "the data does not match the dataset schema: " + ", ".join(parts or ["duplicate column names"])
            + f". Dataset schema: [{_describe(target)}]; data schema: [{_describe(got)}]"
        )
    if got.names == target.names:
        return reader
    names = target.names

    def reorder() -> Iterator[pa.RecordBatch]:
        for b in reader:
            yield pa.RecordBatch.from_arrays([b.column(n) for n in names], names=names)

    out_schema = pa.schema([got.field(n) for n in names], metadata=got.metadata)
    return pa.RecordBatchReader.from_batches(out_schema, reorder())


def _write(
    uri: str,
    reader: pa.RecordBatchReader,
    fields: List[Dict[str, Any]],
    metadata: Dict[str, Any],
    max_rows_per_file: int,
    version: str,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    *,
    file_tag: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
    data_dir: str = "data",
    external_blobs: str = "refuse",
    max_page_bytes: Optional[int] = None,
    blob_pack_file_size_threshold: Optional[int] = None,
    progress: Any = None,
) -> List[FragmentMetadata]:
    """Streams `reader` into new data files (memory bounded by a few pages per column) under
    ``{uri}/{data_dir}/`` (``data_dir=""``: straight under `uri`, a plain base path).

    `file_tag` goes into every new data file's name (see lancepy.spark: a job finds the
    files of its failed or discarded task attempts by it). `progress` (pylance's
    ``FragmentWriteProgress`` shape: ``begin(fragment)`` / ``complete(fragment)``) hears
    about each fragment: ``begin`` before its rows are written (no files, no rows yet),
    ``complete`` once its file is written; the stream is then cut into runs of
    `max_rows_per_file` rows, one native write each.
    """
    if max_rows_per_file <= 0:
        raise InvalidArgumentError("max_rows_per_file must be positive")
    if max_bytes_per_file <= 0:
        raise InvalidArgumentError("max_bytes_per_file must be positive")
    if progress is not None:
        for name in ("begin", "complete"):
            if not callable(getattr(progress, name, None)):
                raise InvalidArgumentError(f"progress must have begin(fragment) and complete(fragment) methods; it lacks {name}")
        options = dict(file_tag=file_tag, storage_options=storage_options, data_dir=data_dir, external_blobs=external_blobs,
                       max_page_bytes=max_page_bytes, blob_pack_file_size_threshold=blob_pack_file_size_threshold)
        out: List[FragmentMetadata] = []
        try:
            for part in row_runs(reader, max_rows_per_file):
                progress.begin(FragmentMetadata._from_dict({"id": 0, "files": [], "physical_rows": 0}))
                made = _write(uri, part, fields, metadata, max_rows_per_file, version, max_bytes_per_file, **options)
                out.extend(made)
                for f in made:
                    progress.complete(f)
        except BaseException:
            # the runs written before the failure: removed, as a failed single write leaves none
            prefix = f"{data_dir}/" if data_dir else ""
            try:
                _lancepy.Store(uri, storage_options).delete([prefix + d.path for f in out for d in f.files])
            except Exception:  # noqa: BLE001 - best effort; the producer's error is the one to see
                pass
            raise
        return out
    # An exception raised by the producer (a generator, a scanner) reaches the native writer as
    # an Arrow stream error; it is re-raised as itself, not as a wrapped message.
    failures: List[BaseException] = []

    def tapped() -> Iterator[pa.RecordBatch]:
        try:
            yield from reader
        except BaseException as e:
            failures.append(e)
            raise

    source = pa.RecordBatchReader.from_batches(reader.schema, tapped())
    try:
        text = _lancepy.write_fragments(
            uri, source, json.dumps(fields), json.dumps(metadata), max_rows_per_file, version, max_bytes_per_file,
            file_tag, storage_options, data_dir, external_blobs, max_page_bytes, blob_pack_file_size_threshold,
        )
    except Exception:
        if failures:
            raise failures[0] from None
        raise
    return [FragmentMetadata._from_dict(f) for f in json.loads(text)]


def row_runs(reader: pa.RecordBatchReader, rows: int) -> Iterator[pa.RecordBatchReader]:
    """`reader` cut into consecutive readers of `rows` rows each (the last may be shorter),
    streamed: each run must be read before the next is asked for."""
    if rows <= 0:
        raise InvalidArgumentError("max_rows_per_file must be positive")
    batches = iter(reader)
    carry: List[pa.RecordBatch] = []

    def run() -> Iterator[pa.RecordBatch]:
        # Up to `rows` rows; what is left of a batch waits in `carry`.
        left = rows
        while left > 0:
            if carry:
                b = carry.pop()
            else:
                b = next(batches, None)
                if b is None:
                    return
            if b.num_rows > left:
                carry.append(b.slice(left))
                b = b.slice(0, left)
            left -= b.num_rows
            yield b

    while True:
        if not carry:
            first = next(batches, None)
            if first is None:
                return
            carry.append(first)
        if carry[0].num_rows == 0:
            carry.pop()
            continue
        yield pa.RecordBatchReader.from_batches(reader.schema, run())


def lance_fields_for(schema: pa.Schema, first_id: int = 0) -> Dict[str, Any]:
    """Lance fields (with ids from `first_id`) and schema metadata for an Arrow schema."""
    return json.loads(_lancepy.schema_to_lance(schema, first_id))


def write_fragments(
    data: Any,
    dataset_uri: Union[str, "os.PathLike[str]", "LanceDataset"],
    schema: Optional[pa.Schema] = None,
    *,
    return_transaction: bool = False,
    mode: str = "append",
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_rows_per_group: Optional[int] = 1024,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    data_cache_bytes: Optional[int] = None,
    max_page_bytes: Optional[int] = None,
    progress: Any = None,
    data_storage_version: Optional[str] = None,
    use_legacy_format: Optional[bool] = None,
    storage_options: Optional[Dict[str, str]] = None,
    enable_stable_row_ids: bool = False,
    target_bases: Optional[List[str]] = None,
    target_all_bases: Optional[bool] = None,
    initial_bases: Optional[List[Any]] = None,
    base_store_params: Optional[Dict[str, Dict[str, str]]] = None,
    external_blob_mode: str = "reference",
    allow_external_blob_outside_bases: bool = False,
    namespace_client: Any = None,
    table_id: Optional[List[str]] = None,
    session: Any = None,
) -> List[FragmentMetadata]:
    """Writes `data` as new fragments of the dataset at `dataset_uri` without committing.

    `data` is streamed: a reader or generator of any length is written in the memory of a
    few pages per column. `schema`, when given, is the schema the data is checked against
    (columns reordered to it). With `mode` ``"append"`` (the default) and an existing
    dataset, the data must match its schema and the fragments use its field ids; otherwise
    (a new dataset, or `mode` ``"overwrite"``/``"create"``) field ids are numbered from 0
    and the fragments can be committed with ``LanceOperation.Overwrite(schema, fragments)``.
    A new file (and fragment) starts after `max_rows_per_file` rows or about
    `max_bytes_per_file` bytes. `storage_options` configure an object store (``s3://``,
    ``gs://``, ``az://``; see :func:`lancepy.dataset`). `max_rows_per_group` only applies
    to the legacy format and is ignored. `progress` (pylance's ``FragmentWriteProgress``:
    ``begin(fragment)`` / ``complete(fragment)``) hears about every fragment written.
    With `return_transaction` a :class:`lancepy.dataset.Transaction` is returned instead of
    the fragments: ``LanceOperation.Append`` against the latest version when appending to an
    existing dataset, ``LanceOperation.Overwrite`` otherwise; pass it to
    :meth:`lancepy.LanceDataset.commit`. `external_blob_mode`, `allow_external_blob_outside_bases`,
    `target_bases`, `target_all_bases` and `base_store_params` (bases registered in an
    existing dataset) as in :func:`lancepy.write_dataset`. Stable row ids, new bases
    (`initial_bases`), namespaces and sessions are not supported: giving one raises
    :class:`~lancepy.exceptions.NotSupportedError`.
    """
    for name, value in (
        ("use_legacy_format", use_legacy_format),
        ("enable_stable_row_ids", enable_stable_row_ids or None),
        ("initial_bases", initial_bases),
        ("namespace_client", namespace_client),
        ("table_id", table_id),
        ("session", session),
    ):
        if value is not None:
            raise UnsupportedError(f"{name}={value!r} is not supported by lancepy")
    if mode not in ("append", "overwrite", "create"):
        raise InvalidArgumentError(f"mode must be 'append', 'overwrite' or 'create', got {mode!r}")
    external = _blob.external_blob_handling(external_blob_mode, allow_external_blob_outside_bases)
    if hasattr(dataset_uri, "uri") and hasattr(dataset_uri, "_storage_options"):
        if storage_options is None:
            storage_options = dataset_uri._storage_options  # type: ignore[union-attr]
        dataset_uri = dataset_uri.uri  # type: ignore[union-attr]
    from lancepy import commit as _commit
    from lancepy._storage import normalize_storage_options

    from lancepy._paths import expand_path

    uri = expand_path(os.fspath(dataset_uri))
    options = normalize_storage_options(storage_options)
    store = _lancepy.Store(uri, options)
    reader = to_record_batch_reader(data, schema)
    try:
        loaded = _commit.load_manifest(store) if mode == "append" else None
    except DatasetNotFoundError:
        loaded = None
    if loaded is not None:
        _commit.check_feature_flags(loaded, write=True, uri=uri)
        fields = loaded.manifest.get("fields", [])
        metadata = loaded.manifest.get("schema_metadata", {})
        target = pa.schema(_lancepy.lance_to_schema(json.dumps(fields), json.dumps(metadata)))
        reader = align_to_schema(reader, target)
        version = (loaded.manifest.get("data_format") or {}).get("version") or DEFAULT_DATA_STORAGE_VERSION
        if data_storage_version is not None:
            version = normalize_storage_version(data_storage_version)
    else:
        version = normalize_storage_version(data_storage_version)
        lance = lance_fields_for(_blob.blob_v2_schema(reader.schema, version))
        fields, metadata = lance["fields"], lance["metadata"]
    from lancepy import bases as _bases
    from lancepy.dataset import _target_bases, write_to_targets

    registered = (loaded.manifest.get("base_paths") or []) if loaded is not None else []
    targets = _target_bases(target_bases, target_all_bases, registered)
    made, _ = write_to_targets(
        store, reader, fields, metadata, targets, max_rows_per_file, version, max_bytes_per_file, progress, options,
        _bases.normalize_base_store_params(base_store_params), external_blobs=external,
        max_page_bytes=page_bytes(reader.schema, data_cache_bytes, max_page_bytes),
    )
    frags = [FragmentMetadata._from_dict(f) for f in made]
    if not return_transaction:
        return frags
    from lancepy.dataset import LanceOperation, LanceSchema, Transaction

    if loaded is not None:
        return Transaction(int(loaded.manifest.get("version", 0)), LanceOperation.Append(frags))  # type: ignore[return-value]
    latest, _ = _commit.latest_version(store)
    return Transaction(latest, LanceOperation.Overwrite(LanceSchema(fields, metadata), frags))  # type: ignore[return-value]


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
        from lancepy.cli import _validate_fragment
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
        return pa.table(self._ds._snapshot.take_addresses(picked, self._ds._plain_columns(columns), False, False))

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
        from lancepy.dataset import LanceSchema, _as_table

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
        src = pa.table(ds._snapshot.scan(cols, [self.fragment_id], 0, None, batch_size or max(phys, 1), False, False, True))
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
