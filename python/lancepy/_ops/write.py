"""Writing: the one routine that turns any input into data files and fragments
(:func:`write_fragments`), and the planning of a whole write (:func:`write_to_targets`, modes,
base paths, commit properties) that :func:`lancepy.write_dataset` commits."""

from __future__ import annotations

import datetime
import itertools
import json
import os
import uuid
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import pyarrow as pa

from lancepy import _lancepy
from lancepy._core import blobschema as _blob
from lancepy._core.args import _refuse
from lancepy._core.conform import align_to_schema, to_record_batch_reader
from lancepy._core.paths import PathLike, _local_path, _uri, expand_path
from lancepy._core.schema import lance_fields_for
from lancepy._core.storage import StorageOptions, normalize_storage_options
from lancepy._table import bases as _bases
from lancepy._table import commit as _commit
from lancepy._table.commit import _auto_cleanup_config
from lancepy._table.fragments import (
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    FragmentMetadata,
    mixes_v1_and_v2,
    normalize_storage_version,
)
from lancepy._table.operations import LanceOperation, LanceSchema, Transaction
from lancepy.exceptions import (
    DatasetAlreadyExistsError,
    DatasetNotFoundError,
    EmptyDataError,
    InvalidArgumentError,
    SchemaMismatchError,
    UnsupportedError,
    VersionNotFoundError,
)
from lancepy.file import page_bytes


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
    max_rows_per_group: Optional[int] = None,
) -> List[FragmentMetadata]:
    """Streams `reader` into new data files (memory bounded by a few pages per column) under
    ``{uri}/{data_dir}/`` (``data_dir=""``: straight under `uri`, a plain base path).

    `file_tag` goes into every new data file's name (see lancepy.spark: a job finds the
    files of its failed or discarded task attempts by it). `progress` (pylance's
    ``FragmentWriteProgress`` shape: ``begin(fragment)`` / ``complete(fragment)``) hears
    about each fragment: ``begin`` before its rows are written (no files, no rows yet),
    ``complete`` once its file is written; the stream is then cut into runs of
    `max_rows_per_file` rows, one native write each (a run that `max_bytes_per_file` cuts into
    several fragments announces the later ones with ``begin`` just before ``complete``).
    `max_rows_per_group` is the rows per batch of legacy (v1) files (default 1024).
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
                       max_page_bytes=max_page_bytes, blob_pack_file_size_threshold=blob_pack_file_size_threshold,
                       max_rows_per_group=max_rows_per_group)
        out: List[FragmentMetadata] = []
        try:
            for part in row_runs(reader, max_rows_per_file):
                progress.begin(FragmentMetadata._from_dict({"id": 0, "files": [], "physical_rows": 0}))
                made = _write(uri, part, fields, metadata, max_rows_per_file, version, max_bytes_per_file, **options)
                out.extend(made)
                for i, f in enumerate(made):
                    if i:  # (a run cut by max_bytes_per_file: its later fragments are announced as they complete)
                        progress.begin(FragmentMetadata._from_dict({"id": 0, "files": [], "physical_rows": 0}))
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
            max_rows_per_group,
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


def write_fragments(
    data: Any,
    dataset_uri: Union[str, "os.PathLike[str]", Any],  # (or a dataset: its uri and storage_options)
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
    dataset, the data must have its columns, or some of them in any order (files of just
    those columns, for a ``DataReplacement``, a ``Merge`` or an ``Append`` whose other
    columns read as nulls), and the fragments use its field ids; otherwise
    (a new dataset, or `mode` ``"overwrite"``/``"create"``) field ids are numbered from 0
    and the fragments can be committed with ``LanceOperation.Overwrite(schema, fragments)``.
    A new file (and fragment) starts after `max_rows_per_file` rows or about
    `max_bytes_per_file` bytes. `storage_options` configure an object store (``s3://``,
    ``gs://``, ``az://``; see :func:`lancepy.dataset`). `max_rows_per_group` is the rows
    per batch of legacy (v1) files (the other formats have no row groups). `progress` (pylance's ``FragmentWriteProgress``:
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
    data_storage_version = _legacy_flag(use_legacy_format, data_storage_version)
    for name, value in (
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
    if hasattr(dataset_uri, "uri") and hasattr(dataset_uri, "storage_options"):  # (a dataset)
        if storage_options is None:
            storage_options = dataset_uri.storage_options
        dataset_uri = dataset_uri.uri


    uri = expand_path(os.fspath(dataset_uri))
    options = normalize_storage_options(storage_options)
    store = _lancepy.Store(uri, options)
    reader = to_record_batch_reader(data, schema)
    loaded, reader, fields, metadata, version = _fragment_schema(store, reader, mode, data_storage_version)

    registered = loaded.base_paths if loaded is not None else []
    targets = _target_bases(target_bases, target_all_bases, registered)
    made, _ = write_to_targets(
        store, reader, fields, metadata, targets, max_rows_per_file, version, max_bytes_per_file, progress, options,
        _bases.normalize_base_store_params(base_store_params), external_blobs=external,
        max_page_bytes=page_bytes(reader.schema, data_cache_bytes, max_page_bytes),
        max_rows_per_group=_rows_per_group(max_rows_per_group),
    )
    frags = [FragmentMetadata._from_dict(f) for f in made]
    if not return_transaction:
        return frags

    if loaded is not None:
        return Transaction(loaded.version, LanceOperation.Append(frags))  # type: ignore[return-value]
    latest, _ = _commit.latest_version(store)
    return Transaction(latest, LanceOperation.Overwrite(LanceSchema(fields, metadata), frags))  # type: ignore[return-value]


def _legacy_flag(use_legacy_format: Optional[bool], data_storage_version: Optional[str]) -> Optional[str]:
    """pylance's deprecated `use_legacy_format`: ``True`` asks for ``"legacy"``, ``False``
    for ``"stable"`` (with a ``DeprecationWarning``); ``None`` leaves `data_storage_version`."""
    if use_legacy_format is None:
        return data_storage_version
    import warnings

    warnings.warn("use_legacy_format is deprecated, use data_storage_version instead", DeprecationWarning, stacklevel=3)
    return "legacy" if use_legacy_format else "stable"


def _rows_per_group(value: Optional[int]) -> Optional[int]:
    """`max_rows_per_group` checked (``None`` or 0: pylance's default, 1024)."""
    if value is None or value == 0:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(f"max_rows_per_group must be a positive int, got {value!r}")
    return value


def _fragment_schema(
    store: Any, reader: pa.RecordBatchReader, mode: str, data_storage_version: Optional[str]
) -> Tuple[Any, pa.RecordBatchReader, List[Dict[str, Any]], Dict[str, Any], str]:
    """What new fragments of the dataset at `store` are written with: with `mode` ``"append"``
    and an existing dataset, its schema (the data checked against it and reordered), its
    field ids and its data storage version (unless `data_storage_version` is given);
    otherwise the data's own schema numbered from 0. Returns ``(loaded manifest or None,
    reader, fields, schema metadata, version)``."""
    try:
        loaded = _commit.load_manifest(store) if mode == "append" else None
    except DatasetNotFoundError:
        loaded = None
    if loaded is None:
        version = normalize_storage_version(data_storage_version)
        lance = lance_fields_for(_blob.blob_v2_schema(reader.schema, version))
        return None, reader, lance["fields"], lance["metadata"], version
    _commit.check_feature_flags(loaded, write=True, uri=store.uri)
    fields, metadata = loaded.field_entries, loaded.schema_metadata
    target = loaded.arrow_schema
    names = reader.schema.names
    if len(set(names)) == len(names) and set(names) <= set(target.names) and (
        set(names) < set(target.names) or any(_narrower(reader.schema.field(n).type, target.field(n).type) for n in names)
    ):
        # Some of the dataset's columns, in any order, or a struct with some of its children
        # (as pylance allows): files of just those fields, in the data's order, under the
        # dataset's field ids; the fragments are for a DataReplacement, a Merge, or an Append
        # whose missing columns and struct children read as nulls.
        fields, target = _column_subset(loaded, reader.schema)
    reader = align_to_schema(reader, target)
    # (recorded in the manifest, or inferred from its files where an old one records none)
    version = loaded.data_storage_version
    if data_storage_version is not None:
        version = normalize_storage_version(data_storage_version)
    return loaded, reader, fields, metadata, version


def _subset_append(got: pa.Schema, target: pa.Schema) -> bool:
    """Whether an append of `got` gives some of `target`'s nullable columns (and all of its
    non-nullable ones), or a struct column without some of its children."""
    names = got.names
    if len(set(names)) != len(names) or not set(names) <= set(target.names):
        return False
    if any(f.name not in names and not f.nullable for f in target):
        return False  # (refused by align_to_schema, naming the columns)
    return set(names) < set(target.names) or any(_narrower(got.field(n).type, target.field(n).type) for n in names)


def _narrower(got: pa.DataType, want: pa.DataType) -> bool:
    """Whether `got` is the struct `want` without some of its children (at any struct depth;
    the children present matched by name)."""
    if not (pa.types.is_struct(got) and pa.types.is_struct(want)):
        return False
    names = {want.field(i).name: want.field(i) for i in range(want.num_fields)}
    kids = [got.field(i) for i in range(got.num_fields)]
    if any(k.name not in names for k in kids):
        return False  # (an unexpected child: the cast reports it)
    return len(kids) < len(names) or any(_narrower(k.type, names[k.name].type) for k in kids)


def _column_subset(loaded: Any, data: pa.Schema) -> Tuple[List[Dict[str, Any]], pa.Schema]:
    """The field entries (each field followed by its descendants) and Arrow schema of the
    dataset's top-level columns named in `data`, in its order; a struct column of `data`
    holding some of the struct's children keeps just those (in the data's order). A missing
    child that is not nullable raises :class:`SchemaMismatchError`, as pylance refuses it."""
    entries = loaded.field_entries
    children: Dict[int, List[Dict[str, Any]]] = {}
    for e in entries:
        children.setdefault(int(e.get("parent_id", -1)), []).append(e)
    out: List[Dict[str, Any]] = []

    def walk(e: Dict[str, Any], want: pa.Field, got: pa.DataType, path: str) -> pa.Field:
        out.append(e)
        kids = children.get(int(e.get("id", 0)), [])
        given = [got.field(i) for i in range(got.num_fields)] if pa.types.is_struct(got) else []
        if not (pa.types.is_struct(want.type) and given and all(want.type.get_field_index(g.name) >= 0 for g in given)):
            for c in kids:  # (not a struct given by some of its children: every descendant)
                walk_all(c)
            return want
        names = {g.name for g in given}
        for i in range(want.type.num_fields):
            child = want.type.field(i)
            if child.name not in names and not child.nullable:
                raise SchemaMismatchError(
                    f"the data does not match the dataset schema: the struct column {path!r} lacks its "
                    f"non-nullable field {child.name!r}"
                )
        by_name = {c["name"]: c for c in kids}
        kept = [walk(by_name[g.name], want.type.field(g.name), g.type, f"{path}.{g.name}") for g in given]
        return pa.field(want.name, pa.struct(kept), want.nullable, want.metadata)

    def walk_all(e: Dict[str, Any]) -> None:
        out.append(e)
        for c in children.get(int(e.get("id", 0)), []):
            walk_all(c)

    schema = loaded.arrow_schema
    fields = []
    for name in data.names:
        fields.append(walk(loaded.top_level_field(name).entry, schema.field(name), data.field(name).type, name))
    return out, pa.schema(fields, metadata=schema.metadata)


#: No limit on a single fragment's file but the row address's (32 bits of row offset).
_ONE_FILE_ROWS = 2**32 - 1
_ONE_FILE_BYTES = 2**63 - 1


def create_fragment(
    dataset_uri: Union[str, "os.PathLike[str]"],
    data: Any,
    fragment_id: Optional[int],
    schema: Optional[pa.Schema],
    progress: Any,
    mode: str,
    data_storage_version: Optional[str],
    storage_options: Optional[Dict[str, str]],
    max_rows_per_group: Optional[int] = None,
) -> FragmentMetadata:
    """Writes all of `data` as ONE data file of a new fragment of the dataset at
    `dataset_uri` (which need not exist yet) and returns it, numbered `fragment_id` (0 when
    ``None``; a commit renumbers appended fragments anyway). Schema and field ids as in
    :func:`write_fragments` for `mode`. `progress` hears ``begin`` with the fragment as it will
    be (its id and data file path; no fields or rows yet), then ``complete`` with it written.
    Data without columns or rows raises :class:`~lancepy.exceptions.EmptyDataError`.
    `max_rows_per_group`: rows per batch of a legacy (v1) file."""
    if mode not in ("append", "overwrite", "create"):
        raise InvalidArgumentError(f"mode must be 'append', 'overwrite' or 'create', got {mode!r}")
    if fragment_id is not None and (isinstance(fragment_id, bool) or not isinstance(fragment_id, int) or fragment_id < 0):
        raise InvalidArgumentError(f"fragment_id must be a non-negative int, got {fragment_id!r}")
    if progress is not None:
        for name in ("begin", "complete"):
            if not callable(getattr(progress, name, None)):
                raise InvalidArgumentError(f"progress must have begin(fragment) and complete(fragment) methods; it lacks {name}")
    uri = expand_path(os.fspath(dataset_uri))
    options = normalize_storage_options(storage_options)
    store = _lancepy.Store(uri, options)
    reader = to_record_batch_reader(data, schema)
    if len(reader.schema) == 0:
        raise EmptyDataError("cannot write a fragment of data without columns")
    _, reader, fields, metadata, version = _fragment_schema(store, reader, mode, data_storage_version)
    # The first rows are read before anything is written: no rows, no file.
    batches = iter(reader)
    first = next((b for b in batches if b.num_rows), None)
    if first is None:
        raise EmptyDataError("cannot write a fragment without rows: the data is empty")
    source = pa.RecordBatchReader.from_batches(reader.schema, itertools.chain([first], batches))
    fid = 0 if fragment_id is None else int(fragment_id)
    # (legacy files record file version 0.2, as pylance's)
    major, minor = (0, 2) if version == "0.1" else tuple(int(x) for x in version.split("."))
    name = _new_data_file_name()
    if progress is not None:
        progress.begin(FragmentMetadata._from_dict({
            "id": fid,
            "files": [{"path": name, "fields": [], "column_indices": [], "file_major_version": major,
                       "file_minor_version": minor, "file_size_bytes": None}],
            "physical_rows": None,
        }))
    made = _write(uri, source, fields, metadata, _ONE_FILE_ROWS, version, _ONE_FILE_BYTES, storage_options=options,
                  external_blobs="refuse", max_page_bytes=page_bytes(reader.schema, None, None),
                  max_rows_per_group=_rows_per_group(max_rows_per_group))
    if len(made) != 1 or len(made[0].files) != 1:
        _commit.delete_written(store, [f"data/{d.path}" for f in made for d in f.files])
        raise InvalidArgumentError(f"the data does not fit one fragment (at most {_ONE_FILE_ROWS} rows)")
    frag = made[0]._manifest_json()
    frag["id"] = fid
    if progress is not None:
        # The file goes where `begin` said it would (a progress file may name it).
        try:
            _move_data_file(store, frag["files"][0]["path"], name)
        except BaseException:
            _commit.delete_written(store, [f"data/{frag['files'][0]['path']}", f"data/{name}"])
            raise
        frag["files"][0]["path"] = name
    out = FragmentMetadata._from_dict(frag)
    if progress is not None:
        progress.complete(out)
    return out


def _new_data_file_name() -> str:
    """A new data file name in the form lancepy's writer (and pylance's) gives them: the first
    3 bytes of a random UUID in binary, the other 13 in hex."""
    raw = uuid.uuid4().bytes
    return "".join(f"{b:08b}" for b in raw[:3]) + raw[3:].hex() + ".lance"


def _move_data_file(store: Any, src: str, dst: str) -> None:
    """Renames ``data/{src}`` to ``data/{dst}`` (a copy and a delete on object storage)."""
    local = _local_path(store.uri)
    if local is not None:
        os.replace(os.path.join(local, "data", src), os.path.join(local, "data", dst))
        return
    opts = store.storage_options or None
    _lancepy.copy_object(store.child_uri(f"data/{src}"), store.child_uri(f"data/{dst}"), opts, opts)
    store.delete([f"data/{src}"])


def write_to_targets(
    store: Any, reader: pa.RecordBatchReader, fields: List[Dict[str, Any]], metadata: Dict[str, Any],
    targets: List[Optional[Dict[str, Any]]], max_rows_per_file: int, version: str, max_bytes_per_file: int,
    progress: Any, options: Optional[Dict[str, str]], store_params: Optional[Dict[str, Dict[str, str]]],
    **write_options: Any,
) -> Tuple[List[Dict[str, Any]], List[Any]]:
    """Writes `reader` into new data files of the dataset at `store`: runs of
    `max_rows_per_file` rows to each of `targets` in turn (``None``: the dataset root; a
    registered base: its directory, with its `store_params` options). Returns the new
    fragments (manifest JSON, files carrying their ``base_id``) and the files written
    (for :func:`lancepy._table.commit.commit_transaction` to delete if the commit fails); a write
    failing part-way deletes them itself."""
    runs = [reader] if len(targets) == 1 else row_runs(reader, max_rows_per_file)
    frag_json: List[Dict[str, Any]] = []
    written: List[Any] = []
    new_dirs = _dirs_a_write_creates(store.uri)
    try:
        for i, part in enumerate(runs):
            target = targets[i % len(targets)]
            root, data_dir = (store.uri, "data") if target is None else _bases.base_dir(target)
            root_options = _bases.options_for(root, options, store_params)
            frags = _write(root, part, fields, metadata, max_rows_per_file, version, max_bytes_per_file,
                           storage_options=root_options, data_dir=data_dir, progress=progress, **write_options)
            made = [f._manifest_json() for f in frags]
            if target is None:
                written += [f"data/{d['path']}" for f in made for d in f["files"]]
            else:
                base_store = _lancepy.Store(root, root_options)
                written += [(base_store, f"{data_dir}/{d['path']}" if data_dir else d["path"]) for f in made for d in f["files"]]
                for f in made:
                    for d in f["files"]:
                        d["base_id"] = target["id"]
            frag_json += made
    except BaseException:
        _commit.delete_written(store, written)
        for d in new_dirs:  # a failed write leaves no empty directories behind either
            try:
                os.rmdir(d)
            except OSError:
                break
        raise
    return frag_json, written


#: The directories of a dataset (what :func:`_remove_memory_dataset` removes).
_DATASET_DIRS = ("_versions", "_transactions", "_deletions", "_indices", "_refs", "data")


def _remove_memory_dataset(store: Any) -> None:
    """Deletes the dataset at a ``memory://`` `store`: its manifests first (so that it is
    gone at once), then the rest of its directories."""
    for d in _DATASET_DIRS:
        store.delete([p for p, _, _ in store.list(d)])


def _dirs_a_write_creates(uri: str) -> List[str]:
    """The local directories that writing data files under `uri` would create (its ``data``
    directory, `uri` itself and any missing parents), deepest first; [] off the local disk."""
    local = _local_path(uri)
    if local is None:
        return []
    out = []
    d = os.path.join(os.path.abspath(local), "data")
    while not os.path.exists(d):
        out.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return out


def _transaction_properties(properties: Optional[Dict[str, str]], commit_message: Optional[str]) -> Dict[str, str]:
    """A transaction's properties: `properties`, and `commit_message` under pylance's key."""
    if properties is not None and not isinstance(properties, dict):
        raise InvalidArgumentError(f"transaction_properties must be a dict of str to str, got {type(properties).__name__}")
    out = {str(k): str(v) for k, v in (properties or {}).items()}
    if commit_message is not None:
        if not isinstance(commit_message, str):
            raise InvalidArgumentError(f"commit_message must be a str, got {type(commit_message).__name__}")
        out[COMMIT_MESSAGE_KEY] = commit_message
    return out


#: Where pylance keeps a commit message: a transaction property of this name (pylance's
#: name for the constant; ``COMMIT_MESSAGE_KEY`` is lancepy's earlier one).
LANCE_COMMIT_MESSAGE_KEY = COMMIT_MESSAGE_KEY = "__lance_commit_message"


def _target_bases(target_bases: Optional[List[str]], target_all_bases: Optional[bool],
                  registered: List[Dict[str, Any]]) -> List[Optional[Dict[str, Any]]]:
    """Where new data files go, in turn (``None``: the dataset root), as pylance chooses:
    the bases `target_bases` names, in that order; with `target_all_bases` every registered
    base by id, after the dataset root when it is true; else the dataset root alone."""
    if target_all_bases is not None:
        if target_bases is not None:
            raise InvalidArgumentError("target_all_bases cannot be combined with target_bases")
        ordered: List[Optional[Dict[str, Any]]] = sorted(registered, key=lambda b: int(b.get("id", 0)))
        if not ordered and not target_all_bases:
            raise InvalidArgumentError("target_all_bases=False: the dataset has no registered bases to write to")
        return ([None] if target_all_bases else []) + ordered
    if target_bases is None:
        return [None]
    if isinstance(target_bases, str):
        target_bases = [target_bases]
    if not target_bases:
        raise InvalidArgumentError("target_bases is empty")
    return [_bases.resolve_target_base(registered, t) for t in target_bases]


def _version_asof(uri: str, asof: Any, options: Optional[Dict[str, str]]) -> int:
    """The newest version committed at or before `asof`."""
    if isinstance(asof, str):
        try:
            asof = datetime.datetime.fromisoformat(asof)
        except ValueError:
            raise InvalidArgumentError(f"asof {asof!r} is not an ISO-8601 timestamp") from None
    if isinstance(asof, datetime.datetime):
        cutoff = asof.timestamp()  # naive: local time, as pylance reads it
    elif hasattr(asof, "to_pydatetime"):  # pandas / numpy timestamps
        cutoff = asof.to_pydatetime().timestamp()
    else:
        raise InvalidArgumentError(f"asof must be a datetime or an ISO-8601 string, got {type(asof).__name__}")
    store = _lancepy.Store(uri, options)
    versions, _ = _commit.list_versions(store)
    if not versions:
        _commit.load_manifest(store)  # raises DatasetNotFoundError with the right message
    best = None
    # (Every manifest read in parallel, only its commit time and totals decoded.)
    for v, seconds, nanos, *_ in _lancepy.version_summaries(store):
        if seconds + nanos / 1e9 <= cutoff:
            best = v
    if best is None:
        raise VersionNotFoundError(f"{uri} has no version committed at or before {asof}")
    return best


def write_dataset(
    data_obj: Any,
    uri: Optional[PathLike] = None,
    schema: Optional[pa.Schema] = None,
    mode: str = "create",
    *,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_rows_per_group: int = 1024,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    data_cache_bytes: Optional[int] = None,
    max_page_bytes: Optional[int] = None,
    commit_lock: Any = None,
    progress: Any = None,
    storage_options: StorageOptions = None,
    data_storage_version: Optional[str] = None,
    use_legacy_format: Optional[bool] = None,
    enable_v2_manifest_paths: bool = True,
    enable_stable_row_ids: bool = False,
    auto_cleanup_options: Any = None,
    commit_message: Optional[str] = None,
    transaction_properties: Optional[Dict[str, str]] = None,
    initial_bases: Optional[List[Any]] = None,
    target_bases: Optional[List[str]] = None,
    target_all_bases: Optional[bool] = None,
    base_store_params: Optional[Dict[str, Dict[str, str]]] = None,
    external_blob_mode: str = "reference",
    allow_external_blob_outside_bases: bool = False,
    blob_pack_file_size_threshold: Optional[int] = None,
    namespace_client: Any = None,
    table_id: Optional[List[str]] = None,
    session: Any = None,
) -> Tuple[str, Optional[Dict[str, str]], Optional[Dict[str, Dict[str, str]]], _commit.LoadedManifest]:
    """Writes `data_obj` to `uri` and commits it: :func:`lancepy.write_dataset` without the
    dataset object. Returns (URI, storage options, base store parameters, the new version's
    manifest)."""
    data = data_obj
    if uri is None:
        raise InvalidArgumentError("write_dataset needs a uri (lancepy has no namespace support)")
    if max_rows_per_group <= 0:
        raise InvalidArgumentError("max_rows_per_group must be positive")
    data_storage_version = _legacy_flag(use_legacy_format, data_storage_version)
    _refuse(
        namespace_client=namespace_client,
        table_id=table_id,
        session=session,
    )
    if mode not in ("create", "append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'create', 'append' or 'overwrite', got {mode!r}")
    external = _blob.external_blob_handling(external_blob_mode, allow_external_blob_outside_bases)
    if initial_bases is not None and mode != "create":
        raise InvalidArgumentError(f"initial_bases registers bases of a new dataset: mode must be 'create', not {mode!r}")
    u = _uri(uri)
    options = normalize_storage_options(storage_options)
    store = _lancepy.Store(u, options)
    latest, naming = _commit.latest_version(store)
    if mode == "create" and latest > 0 and not u.startswith("memory://"):
        raise DatasetAlreadyExistsError(f"a dataset already exists at {u} (use mode='append' or 'overwrite')")
    reader = to_record_batch_reader(data, schema)
    if mode == "create" and latest > 0:
        # pylance opens a new, empty memory store on every call, so a create at a memory://
        # URI always starts a new dataset: the one there is replaced (its files removed).
        _remove_memory_dataset(store)
        latest, naming = 0, None
    base = _commit.load_manifest(store, latest) if latest > 0 else None
    if base is not None:
        _commit.check_feature_flags(base, write=True, uri=u)
    if mode == "append" and base is not None:
        fields, metadata = base.field_entries, base.schema_metadata
        if _subset_append(reader.schema, base.arrow_schema):
            # (as pylance writes it: files of the columns and struct children given; the
            # others read as nulls)
            fields, target = _column_subset(base, reader.schema)
            reader = align_to_schema(reader, target)
        else:
            reader = align_to_schema(reader, base.arrow_schema, fill_missing=True)
        version = base.data_storage_version
        if data_storage_version is not None and normalize_storage_version(data_storage_version) != version:
            _refuse_version_mix(version, normalize_storage_version(data_storage_version))
            raise InvalidArgumentError(
                f"the dataset stores {version} data files; cannot append {data_storage_version} files"
            )
        op = "Append"
    else:
        if data_storage_version is None and base is not None:
            # (as pylance: an overwrite keeps the dataset's storage version unless told otherwise)
            version = base.data_storage_version
        else:
            version = normalize_storage_version(data_storage_version)
        lance = lance_fields_for(_blob.blob_v2_schema(reader.schema, version))
        fields, metadata = lance["fields"], lance["metadata"]
        op = "Overwrite"
    registered = _bases.register_initial_bases(initial_bases) if initial_bases else []
    store_params = _bases.normalize_base_store_params(base_store_params)
    targets = _target_bases(target_bases, target_all_bases,
                            registered or (base.base_paths if base is not None else []))
    frag_json, written = write_to_targets(
        store, reader, fields, metadata, targets, max_rows_per_file, version, max_bytes_per_file, progress, options,
        store_params, external_blobs=external, max_page_bytes=page_bytes(reader.schema, data_cache_bytes, max_page_bytes),
        blob_pack_file_size_threshold=blob_pack_file_size_threshold, max_rows_per_group=max_rows_per_group,
    )
    if op == "Append":
        body: Dict[str, Any] = {"fragments": frag_json}
    else:
        body = {"fragments": frag_json, "schema": fields, "schema_metadata": metadata}
        if registered:
            body["initial_bases"] = registered
    if auto_cleanup_options is not None and latest == 0:
        # (as in pylance, only a new dataset takes them; an existing one keeps its config)
        body["config_upsert_values"] = _auto_cleanup_config(auto_cleanup_options)
    txn = _commit.new_transaction(latest, op, body)
    txn["transaction_properties"] = _transaction_properties(transaction_properties, commit_message)
    result = _commit.commit_transaction(
        store,
        txn,
        naming=naming or ("v2" if enable_v2_manifest_paths else "v1"),
        written_files=written,
        data_storage_version=version if op == "Overwrite" else None,
        new_dataset_flags=_commit.FLAG_STABLE_ROW_IDS if enable_stable_row_ids else 0,
        commit_lock=commit_lock,
    )
    return u, options, store_params, result.manifest


def _refuse_version_mix(dataset_version: str, asked: str) -> None:
    """Appending legacy (v1) files to a 2.x dataset, or 2.x files to a legacy one, raises
    (pylance's words)."""
    if mixes_v1_and_v2(dataset_version, asked):
        raise InvalidArgumentError(
            f"Cannot append data files in version {asked} to a dataset with default version {dataset_version}: "
            "V1 and V2 storage versions cannot be mixed"
        )


def merge_transactions(transactions: Any) -> Any:
    """One ``Append`` transaction holding the fragments of `transactions` (all ``Append``
    transactions, or their operations), planned against the oldest of their read versions:
    what :meth:`lancepy.LanceDataset.commit_batch` commits."""
    from lancepy._table.operations import LanceOperation, Transaction

    txns = list(transactions)
    if not txns:
        raise InvalidArgumentError("commit_batch needs at least one transaction")
    for t in txns:
        if not isinstance(t, Transaction):
            raise InvalidArgumentError(f"commit_batch takes Transactions, got {type(t).__name__}")
        if not isinstance(t.operation, LanceOperation.Append):
            raise UnsupportedError(
                f"commit_batch of a {type(t.operation).__name__} transaction: lancepy merges Append transactions only")
    fragments = [f for t in txns for f in t.operation.fragments]
    return Transaction(read_version=min(t.read_version for t in txns), operation=LanceOperation.Append(fragments))


def commit_operation(
    store: Any,
    operation: Any,
    read_version: Optional[int],
    *,
    naming: str = "v2",
    max_retries: int = 20,
    commit_message: Optional[str] = None,
    enable_stable_row_ids: bool = False,
    timeout_s: Optional[float] = None,
    commit_lock: Any = None,
    detached: bool = False,
) -> _commit.LoadedManifest:
    """Commits `operation` (a ``LanceOperation``, or a ``Transaction``, whose read version,
    uuid and properties are used) on top of `read_version` (required but for ``Overwrite``
    and ``Restore``, which default to the latest) of the
    dataset at `store`: :meth:`lancepy.LanceDataset.commit` without the dataset object.
    Returns the new version's manifest."""
    planned: Optional[Transaction] = None
    if isinstance(operation, Transaction):
        planned, operation = operation, operation.operation
        read_version = planned.read_version
    if not isinstance(operation, LanceOperation.BaseOperation):
        raise InvalidArgumentError(f"commit needs a LanceOperation or a Transaction, got {type(operation).__name__}")
    uri = store.uri
    latest, _ = _commit.latest_version(store)
    if read_version is None:
        # (as pylance: an operation that changes existing data must say which version it read)
        if not isinstance(operation, (LanceOperation.Overwrite, LanceOperation.Restore)):
            raise InvalidArgumentError("read_version is required for all operations except Overwrite and Restore")
        read_version = latest
    if latest > 0:
        _commit.check_feature_flags(_commit.load_manifest(store, latest), write=True, uri=uri)
    name, body = operation._to_body(store, read_version)
    txn = _commit.new_transaction(read_version, name, body)
    if planned is not None:
        txn["uuid"] = str(planned.uuid)
    txn["transaction_properties"] = _transaction_properties(
        planned.transaction_properties if planned is not None else None, commit_message
    )
    result = _commit.commit_transaction(
        store,
        txn,
        naming=naming,
        max_retries=max_retries,
        timeout_s=timeout_s,
        # (as in pylance, only a commit that creates the dataset takes it)
        new_dataset_flags=_commit.FLAG_STABLE_ROW_IDS if enable_stable_row_ids else 0,
        commit_lock=commit_lock,
        detached=detached,
    )
    return result.manifest
