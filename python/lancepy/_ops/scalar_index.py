"""Scalar indices: :meth:`LanceDataset.create_scalar_index` (argument checks as pylance 14
makes them, the build, the commit). lancepy builds BTREE indices (:mod:`lancepy._ops.btree`),
BITMAP and LABEL_LIST indices (:mod:`lancepy._ops.bitmap`) and INVERTED / FTS indices
(:mod:`lancepy._ops.inverted`);
the other scalar index types pylance knows raise :class:`NotSupportedError` (a
``NotImplementedError``) for now."""

from __future__ import annotations

import time
from enum import Enum
import uuid as _uuid
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

import pyarrow as pa

from lancepy import _lancepy
from lancepy._ops import bitmap as _bitmap
from lancepy._ops import btree as _btree
from lancepy._ops import extsort as _extsort
from lancepy._core.schema import is_json_field
from lancepy._ops import fts_analyzer as _fts_analyzer
from lancepy._ops import json_index as _json_index
from lancepy._table import commit as _commit
from lancepy._table.commit import commit_on
from lancepy.exceptions import IndexAlreadyExistsError, InvalidArgumentError, NotSupportedError

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.snapshot import DatasetView

#: The scalar index types pylance 14 accepts, in its order.
PYLANCE_SCALAR_TYPES = (
    "BTREE",
    "BITMAP",
    "NGRAM",
    "ZONEMAP",
    "LABEL_LIST",
    "INVERTED",
    "FTS",
    "BLOOMFILTER",
    "RTREE",
    "MINHASHLSH",
)
#: The ones lancepy builds.
BUILT_TYPES = ("BTREE", "BITMAP", "LABEL_LIST", "INVERTED", "FTS")
#: pylance's INVERTED/FTS keyword options (named parameters of lancepy's
#: ``create_scalar_index``; ``None`` = pylance's default).
FTS_OPTIONS = (
    "with_position",
    "block_size",
    "memory_limit",
    "num_workers",
    "base_tokenizer",
    "language",
    "max_token_length",
    "lower_case",
    "stem",
    "remove_stop_words",
    "custom_stop_words",
    "ascii_folding",
    "min_ngram_length",
    "max_ngram_length",
    "prefix_only",
    "analyzer",
    "split_identifiers",
    "split_on_numerics",
    "preserve_original",
    "index_operators",
)


class DocumentGranularity(str, Enum):
    """The unit one full-text-search document is (pylance's ``lance.query.DocumentGranularity``):
    a row, or each element of the deepest list of the indexed column."""

    ROW = "row"
    LIST_ELEMENT = "list_element"


def _resolve_column(view: "DatasetView", column: str) -> Tuple[str, int, pa.DataType]:
    """The column's path as the schema spells it, its field id and type; matched exactly,
    else ignoring case (as pylance looks it up). KeyError when there is no such column."""
    path, field_id, field = _resolve_field(view, column)
    return path, field_id, field.type


def _resolve_field(view: "DatasetView", column: str) -> Tuple[str, int, pa.Field]:
    """:func:`_resolve_column`, with the column's Arrow field."""
    ids = view.loaded.field_ids_by_path
    path = column if column in ids else next((p for p in ids if p.lower() == column.lower()), None)
    if path is None:
        raise KeyError(f"{column} not found in schema")
    parts = path.split(".")
    field = view.schema.field(parts[0])
    for part in parts[1:]:
        if not pa.types.is_struct(field.type):
            raise KeyError(f"{column} not found in schema")
        field = field.type.field(part)
    return path, ids[path], field


def create_scalar_index(
    view: "DatasetView",
    column: Union[str, List[str]],
    index_type: Any,
    name: Optional[str] = None,
    *,
    replace: bool = True,
    train: bool = True,
    fragment_ids: Optional[List[int]] = None,
    index_uuid: Optional[str] = None,
    progress_callback: Optional[Callable[[Any], None]] = None,
    format_version: Optional[Union[int, str]] = None,
    document_granularity: Any = DocumentGranularity.ROW,
    **fts_options: Any,
) -> "DatasetView":
    """See :meth:`LanceDataset.create_scalar_index`. `fts_options`: the values of the
    :data:`FTS_OPTIONS` keywords (``None`` = not given)."""
    unknown = sorted(set(fts_options) - set(FTS_OPTIONS))
    if unknown:
        raise InvalidArgumentError(f"create_scalar_index: unknown options {unknown}")
    if progress_callback is not None and not callable(progress_callback):
        raise InvalidArgumentError(f"create_scalar_index(progress_callback=): a callable, got {progress_callback!r}")
    if isinstance(column, (list, tuple)):
        if len(column) != 1:
            raise NotImplementedError("Scalar indices currently only support a single column")
        column = column[0]
    if not isinstance(column, str):
        raise InvalidArgumentError(f"create_scalar_index: column must be a column name, got {column!r}")
    json_config = None
    if not isinstance(index_type, str):
        index_type, json_config = _from_config(index_type)
    kind = index_type.upper()
    if json_config is not None:
        kind, json_path, json_dtype = _json_index.parse_config(json_config)
    if kind not in PYLANCE_SCALAR_TYPES:
        raise NotSupportedError(
            'Only "BTREE", "BITMAP", "NGRAM", "ZONEMAP", "LABEL_LIST", "INVERTED", "BLOOMFILTER", "RTREE" or '
            f'"MINHASHLSH" are supported for scalar columns.  Received {kind}'
        )
    if kind not in BUILT_TYPES:
        raise NotSupportedError(
            f"create_scalar_index(index_type={index_type!r}): lancepy builds BTREE, BITMAP, LABEL_LIST and INVERTED scalar indices only (for now); "
            f"it reads the other kinds pylance writes"
        )
    # (memory_limit: the INVERTED build's budget, and the sort's of the other kinds)
    given = [k for k in FTS_OPTIONS if fts_options.get(k) is not None and k != "memory_limit"
             and not (k == "max_token_length" and fts_options[k] == _fts_analyzer.DEFAULT_PARAMS[k])]
    if kind in ("INVERTED", "FTS"):
        return _create_inverted(view, column, name, replace, train, index_uuid, progress_callback, format_version,
                                document_granularity, fragment_ids, fts_options)
    if given:
        raise NotSupportedError(
            f"create_scalar_index({', '.join(k + '=' for k in given)}): INVERTED/FTS options, not options of a {kind} index"
        )
    if format_version is not None:
        raise NotSupportedError(f"create_scalar_index(format_version=): an INVERTED/FTS option, not an option of a {kind} index")
    if str(getattr(document_granularity, "value", document_granularity)).lower() != "row":
        raise NotSupportedError(
            f"create_scalar_index(document_granularity={document_granularity!r}): an INVERTED/FTS option, "
            f"not an option of a {kind} index"
        )
    if fragment_ids is not None:
        raise InvalidArgumentError(
            f"{kind} distributed indexing uses create_index_uncommitted(..., index_type=\"{kind}\", fragment_ids=...)"
        )
    memory_limit = fts_options.get("memory_limit")
    _extsort.budget_bytes(memory_limit)  # (checked before anything is read)
    path, field_id, field = _resolve_field(view, column)
    dtype = field.type
    if json_config is not None:
        _json_index.check_column(view, field, path)
    elif kind == "LABEL_LIST":
        if not _bitmap.is_list(dtype) or not _btree.indexable(dtype.value_type):
            raise TypeError(f"LABEL_LIST index column {column} must be a list of scalars (got {dtype})")
    elif not _btree.indexable(dtype):
        raise TypeError(
            f"BTREE/BITMAP index column {column} must be int, float, bool, str, large_str, binary, large_binary, "
            f"decimal, fixed-size-binary, or temporal (got {dtype})"
        )
    name = name if name is not None else f"{path}_idx"
    existing = [e for e in view.index_entries() if e["name"] == name]
    if existing and not replace:
        raise IndexAlreadyExistsError(
            f"Index name '{name}' already exists, please specify a different name or use replace=True"
        )
    uid = str(_uuid.UUID(str(index_uuid))) if index_uuid is not None else str(_uuid.uuid4())
    fragments = list(view.fragment_ids) if train else []
    read_version = view.version
    if kind != "BTREE":
        _bitmap.check_addresses(view)
    builder = _btree if kind == "BTREE" else _bitmap
    names = [_btree.PAGE_DATA, _btree.PAGE_LOOKUP] if kind == "BTREE" else [_bitmap.LOOKUP]
    written = [f"_indices/{uid}/{n}" for n in names]
    details_type_url = _bitmap.LABEL_LIST_DETAILS_TYPE_URL if kind == "LABEL_LIST" else builder.DETAILS_TYPE_URL
    details_value: List[int] = []
    index_version = {"BITMAP": _bitmap.INDEX_VERSION, "LABEL_LIST": _bitmap.LABEL_LIST_INDEX_VERSION}.get(
        kind, _btree.index_version(view) if kind == "BTREE" else 0
    )
    try:
        # (the column a scan batch at a time, sorted in memory when it fits memory_limit,
        # else externally: lancepy._ops.extsort)
        if json_config is not None:  # (the values at the path, typed by the first one found)
            key, batches = _json_index.typed_batches(view, path, json_path, fragments, json_dtype)
            dtype = key.dtype
            details_value = _json_index.details_bytes(json_path, details_type_url)
            details_type_url, index_version = _json_index.DETAILS_TYPE_URL, _json_index.INDEX_VERSION
        else:
            batches = _btree.column_batches(view, path, fragments) if fragments else iter(())
        files = _extsort.build_segment(
            kind, view.uri.rstrip("/") + f"/_indices/{uid}/", dtype, batches, memory_limit, view.storage_options,
            progress_callback,
        )
    except BaseException:
        _commit.delete_written(view.store, written)
        raise
    entry = {
        "uuid": {"uuid": list(_uuid.UUID(uid).bytes)},
        "fields": [field_id],
        "name": name,
        "dataset_version": read_version,
        "fragment_bitmap": list(_lancepy.fragment_bitmap(fragments)),
        "index_details": {"type_url": details_type_url, "value": details_value},
        "index_version": index_version,
        "created_at": int(time.time() * 1000),
        "base_id": None,
        "files": files,
        "covering_fields": [],
    }
    removed = _removed_entries(view, name) if existing else []
    return commit_on(view, "CreateIndex", {"new_indices": [entry], "removed_indices": removed}, written=written,
                     read_version=read_version)


def _from_config(config: Any) -> Tuple[str, Optional[Dict[str, Any]]]:
    """``(index type name, JSON index parameters or None)`` of an ``IndexConfig`` (lancepy's
    or one of the same shape): ``"json"`` with its parameters, or a built-in type by name
    with no parameters."""
    index_type, parameters = getattr(config, "index_type", None), getattr(config, "parameters", None)
    if not isinstance(index_type, str):
        raise InvalidArgumentError(f"create_scalar_index: index_type must be a name or an IndexConfig, got {config!r}")
    if index_type.lower() == "json":
        return index_type, parameters if parameters is not None else {}
    if parameters:
        raise NotSupportedError(
            f"create_scalar_index(IndexConfig({index_type!r}, {parameters!r})): lancepy takes parameters for "
            "'json' indices only; give the others by name with keyword options"
        )
    return index_type, None


def _removed_entries(view: "DatasetView", name: str) -> List[Dict[str, Any]]:
    """Every segment named `name`, in the JSON form a CreateIndex transaction carries."""
    import json

    section = view.loaded.index_section
    entries = json.loads(_lancepy.index_section_to_json(section))["indices"] if section is not None else []
    return [e for e in entries if e.get("name") == name]


def _create_inverted(
    view: "DatasetView", column: str, name: Optional[str], replace: bool, train: bool, index_uuid: Optional[str],
    progress_callback: Any, format_version: Any, document_granularity: Any, fragment_ids: Any, options: Dict[str, Any],
) -> "DatasetView":
    """An INVERTED (full-text search) index of a string column, in pylance 14's format
    (:mod:`lancepy._ops.inverted`)."""
    from lancepy._ops import inverted as _inverted

    if options.get("num_workers") not in (None, 1):
        raise NotSupportedError("create_scalar_index(num_workers=): lancepy builds the INVERTED index with one worker")
    memory_limit = options.get("memory_limit")
    if memory_limit is not None and (isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit <= 0):
        raise InvalidArgumentError(f"create_scalar_index(memory_limit=): a positive number of MiB, got {memory_limit!r}")
    if format_version is not None and str(format_version) != str(_inverted.FORMAT_VERSION):
        raise NotSupportedError(f"create_scalar_index(format_version={format_version!r}): lancepy writes INVERTED format 2 only")
    if str(getattr(document_granularity, "value", document_granularity)).lower() != "row":
        raise NotSupportedError(f"create_scalar_index(document_granularity={document_granularity!r}): lancepy indexes rows only")
    if fragment_ids is not None:
        raise NotSupportedError("create_scalar_index(fragment_ids=): distributed INVERTED builds are not built in lancepy")
    params = _fts_analyzer.check_params({k: v for k, v in options.items() if k not in ("memory_limit", "num_workers")})
    path, field_id, field = _resolve_field(view, column)
    dtype = field.type
    is_json = is_json_field(field)
    texts = dtype.value_type if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) else dtype
    if not (is_json or pa.types.is_string(texts) or pa.types.is_large_string(texts)):
        raise TypeError(
            f"INVERTED index column {column} must be string, large string, a list of them, or JSON (got {dtype})"
        )
    if params.get("lance_tokenizer") is None:  # (pylance infers it from the column)
        params = dict(params, lance_tokenizer="json" if is_json else "text")
    name = name if name is not None else f"{path}_idx"
    existing = [e for e in view.index_entries() if e["name"] == name]
    if existing and not replace:
        raise IndexAlreadyExistsError(
            f"Index name '{name}' already exists, please specify a different name or use replace=True"
        )
    uid = str(_uuid.UUID(str(index_uuid))) if index_uuid is not None else str(_uuid.uuid4())
    fragments = list(view.fragment_ids) if train else []
    read_version = view.version
    names: List[str] = []
    try:
        # (documents are row addresses, or stable row ids where the dataset keeps them, as pylance;
        # the column is read a scan batch at a time, partitions written as the memory budget fills)
        batches = (_btree.column_batches(view, path, fragments, row_ids=view.stable_row_ids,
                                         batch_rows=_inverted.TEXT_BATCH_ROWS) if fragments else iter(()))
        files = _inverted.build_partitions(
            view.uri.rstrip("/") + f"/_indices/{uid}/", params, batches, memory_limit, view.storage_options, written=names,
            progress=progress_callback,
        )
    except BaseException:
        _commit.delete_written(view.store, [f"_indices/{uid}/{n}" for n in names])
        raise
    written = [f"_indices/{uid}/{f['path']}" for f in files]
    entry = {
        "uuid": {"uuid": list(_uuid.UUID(uid).bytes)},
        "fields": [field_id],
        "name": name,
        "dataset_version": read_version,
        "fragment_bitmap": list(_lancepy.fragment_bitmap(fragments)),
        "index_details": {"type_url": _inverted.DETAILS_TYPE_URL, "value": _inverted.details_bytes(params)},
        "index_version": _inverted.INDEX_VERSION,
        "created_at": int(time.time() * 1000),
        "base_id": None,
        "files": files,
        "covering_fields": [],
    }
    removed = _removed_entries(view, name) if existing else []
    return commit_on(view, "CreateIndex", {"new_indices": [entry], "removed_indices": removed}, written=written,
                     read_version=read_version)
