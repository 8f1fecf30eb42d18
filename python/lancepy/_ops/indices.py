"""Indices of a dataset version: listing, describing and statistics of index entries,
dropping, and building (IVF vector indices; other kinds raise NotSupportedError). The
functions behind :class:`LanceDataset`'s index methods."""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Union

import pyarrow as pa

from lancepy import _lancepy
from lancepy._core.storage import normalize_storage_options
from lancepy._ops import vector_columns as _vc
from lancepy._table.operations import IndexDescription, IndexSegmentDescription
from lancepy._table.commit import commit_on
from lancepy.exceptions import InvalidArgumentError, LanceError, NotSupportedError

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.snapshot import DatasetView


def list_indices(view: "DatasetView") -> List[Dict[str, Any]]:
    """See :meth:`LanceDataset.list_indices`."""
    if view.loaded.index_section is None:
        return []
    names = view.loaded.field_paths
    out = []
    for e in _lancepy.index_section_entries(view.loaded.index_section):
        out.append(
            {
                "name": e["name"],
                "type": _index_type(view, e),
                "uuid": e["uuid"],
                "fields": [names.get(f, str(f)) for f in e["fields"]],
                "version": e["dataset_version"],
                "fragment_ids": set(e["fragment_ids"]),
                "base_id": e["base_id"],
            }
        )
    return sorted(out, key=lambda d: d["name"])  # (by name, as pylance lists them; segments in manifest order)


def _index_type(view: "DatasetView", entry: Dict[str, Any]) -> str:
    """An index's type name as pylance reports it: vector indices name theirs in their
    file (schema metadata ``lance:index``); the others by their details message."""
    details = str(entry.get("details_type") or "").rsplit(".", 1)[-1]
    if details == "VectorIndexDetails":
        from lancepy.file import LanceFileReader

        path = f"{view.uri}/_indices/{entry['uuid']}/index.idx"
        try:
            from lancepy._ops import ivf_legacy as _ivf_legacy

            if _ivf_legacy.is_legacy(path, view.storage_options):
                return "IVF_PQ"  # (the only type of pylance's legacy vector index layout)
            md = LanceFileReader(path, view.storage_options).metadata().schema.metadata or {}
            return str(json.loads(md[b"lance:index"])["type"]).upper()
        except (LanceError, KeyError, ValueError, TypeError):
            return "Vector"
    known = {
        "BTreeIndexDetails": "BTree",
        "BitmapIndexDetails": "Bitmap",
        "LabelListIndexDetails": "LabelList",
        "InvertedIndexDetails": "Inverted",
        "NGramIndexDetails": "NGram",
        "ZoneMapIndexDetails": "ZoneMap",
        "BloomFilterIndexDetails": "BloomFilter",
        "JsonIndexDetails": "Json",
    }
    return known.get(details, details.removesuffix("IndexDetails") or "Unknown")


def describe_indices(view: "DatasetView") -> List["IndexDescription"]:
    """See :meth:`LanceDataset.describe_indices`."""
    if view.loaded.index_section is None:
        return []
    names = view.loaded.field_paths
    rows = view.fragment_rows()
    by_name: Dict[str, List[Dict[str, Any]]] = {}
    for e in _lancepy.index_section_entries(view.loaded.index_section):
        by_name.setdefault(e["name"], []).append(e)
    out = []
    for name, entries in sorted(by_name.items()):  # (by name, as pylance lists them)
        segments = []
        for e in entries:
            size = e["files_size"]
            if size is None:  # (an entry that lists no files: the files under its directory)
                size = sum(n for _, n, _ in view.store.list(f"_indices/{e['uuid']}"))
            created = e["created_at"]
            segments.append(
                IndexSegmentDescription(
                    uuid=e["uuid"],
                    dataset_version_at_last_update=e["dataset_version"],
                    fragment_ids=set(e["fragment_ids"]),
                    index_version=int(e["index_version"] or 0),
                    created_at=None if created is None else _dt.datetime.fromtimestamp(created / 1000, _dt.timezone.utc),
                    size_bytes=size,
                    base_id=e["base_id"],
                    covering_fields=list(e["covering_fields"]),
                )
            )
        covered = set().union(*(seg.fragment_ids for seg in segments))
        first = entries[0]
        out.append(
            IndexDescription(
                name=name,
                type_url="/" + str(first["details_type"]).lstrip("/"),
                num_rows_indexed=sum(rows[f][1] for f in covered if f in rows),
                fields=list(first["fields"]),
                field_names=[names.get(f, str(f)) for f in first["fields"]],
                total_size_bytes=sum(seg.size_bytes or 0 for seg in segments),
                index_type=_index_type(view, first),
                segments=segments,
                details=_details_of(name, first),
            )
        )
    return out


def _details_of(name: str, entry: Dict[str, Any]) -> Dict[str, Any]:
    try:
        return index_details(entry["details_type"], entry["details_value"])
    except NotSupportedError as e:
        raise NotSupportedError(f"describe_indices: index {name!r}: {e}") from None


#: The InvertedIndexDetails fields pylance reports as they are stored, in its order (between
#: them: ``lance_tokenizer``, ``custom_stop_words``, the code analyzer's flags).
_INVERTED_KEYS = (
    "lance_tokenizer", "base_tokenizer", "language", "with_position", "max_token_length", "lower_case", "stem",
    "remove_stop_words", "custom_stop_words", "ascii_folding", "min_ngram_length", "max_ngram_length", "prefix_only",
    "block_size", "split_identifiers", "split_on_numerics", "preserve_original", "index_operators",
    "document_granularity",
)
_CODE_FLAGS = ("split_identifiers", "split_on_numerics", "preserve_original", "index_operators")


def index_details(type_url: str, value: bytes) -> Dict[str, Any]:
    """An index entry's ``index_details`` (decoded natively) in the shape pylance 14's
    ``IndexDescription.details`` has: ``{}`` for the messages without fields; an INVERTED
    index's analyzer settings (pylance's keys; ``lance_tokenizer`` and ``custom_stop_words``
    are not stored, so None; no ``format_version``); a JSON-path index's ``path`` and ``target_details``; a vector index's ``metric_type`` (upper
    case), ``target_partition_size`` / ``target_num_partitions`` when set, ``hnsw`` when it has
    a graph, ``compression`` unless its vectors are stored flat, and ``runtime_hints``. A type
    lancepy does not read raises NotSupportedError."""
    d = _lancepy.decode_index_details("/" + str(type_url).lstrip("/"), bytes(value))
    if not d:
        return {}
    if "target_type_url" in d:  # (a JSON-path index: its path and its target index's details)
        return {"path": d["path"], "target_details": index_details(d["target_type_url"], d["target_value"])}
    if "metric_type" in d:
        out: Dict[str, Any] = {"metric_type": str(d["metric_type"]).upper()}
        for k in ("target_partition_size", "target_num_partitions"):
            if d.get(k):
                out[k] = d[k]
        if d.get("hnsw") is not None:
            out["hnsw"] = dict(d["hnsw"])
        kind = d.get("compression")
        if kind == "pq":
            out["compression"] = {"type": "pq", "num_bits": d["num_bits"], "num_sub_vectors": d["num_sub_vectors"]}
        elif kind == "sq":
            out["compression"] = {"type": "sq", "num_bits": d["num_bits"]}
        elif kind == "rq":
            out["compression"] = {"type": "rq", "num_bits": d["num_bits"], "rotation_type": d["rotation_type"]}
        out["runtime_hints"] = dict(d["runtime_hints"])
        return out
    code = d.get("code_analyzer") or {}
    values = dict(d, lance_tokenizer=None, custom_stop_words=None, **{k: bool(code.get(k, False)) for k in _CODE_FLAGS})
    if values.get("base_tokenizer") is None:  # (not recorded by old writers: the default)
        values["base_tokenizer"] = "simple"
    return {k: values[k] for k in _INVERTED_KEYS}


def index_statistics(view: "DatasetView", index_name: str) -> Dict[str, Any]:
    """See :meth:`LanceDataset.index_statistics`."""
    from lancepy.exceptions import IndexNotFoundError

    found = [d for d in describe_indices(view) if d.name == index_name]
    if not found:
        raise IndexNotFoundError(f'Index "{index_name}" not found: no such index in version {view.version} of {view.uri}')
    desc = found[0]
    kind = reported = desc.index_type
    if kind == "Json":  # (pylance: its target index's statistics, typed "BTree" whatever the target)
        from lancepy._ops import json_index as _json_index

        first = next(e for e in _lancepy.index_section_entries(view.loaded.index_section) if e["name"] == index_name)
        kind = getattr(_json_index.details_of(first), "target_kind", None) or kind
        reported = "BTree"
    rows = view.fragment_rows()
    covered = set().union(*(seg.fragment_ids for seg in desc.segments))
    live = [f for f in rows if rows[f][1] > 0 or f in covered]
    segments = []
    for seg in desc.segments:
        info: Dict[str, Any] = {"index_type": reported, "uuid": seg.uuid}
        if kind == "BTree":
            from lancepy._ops import btree as _btree

            info = _btree.segment_statistics(view.uri, seg.uuid, view.storage_options)
        if kind == "Inverted":
            from lancepy._ops import inverted as _inverted

            seg_ = _inverted.open_segment(view.uri, seg.uuid, view.storage_options)
            info = {"params": seg_.params, "num_tokens": sum(len(p.token_ids) for p in seg_.partitions),
                    "num_docs": seg_.num_docs}
        if kind in ("Bitmap", "LabelList"):
            from lancepy._ops import bitmap as _bitmap

            info = _bitmap.segment_statistics(view.uri, seg.uuid, view.storage_options)
        if kind in ("IVF_FLAT", "IVF_PQ", "IVF_SQ"):
            from lancepy._ops import ivf as _ivf

            idx = _ivf.load_index(view.uri, seg.uuid, view.storage_options)
            info.update(
                {
                    "uri": f"{view.uri}/_indices/{seg.uuid}/index.idx",
                    "metric_type": idx.metric,
                    "num_partitions": idx.num_partitions,
                    "partitions": [{"size": int(n)} for n in idx.lengths],
                    "index_file_version": "V3" if idx.legacy is None else "Legacy",
                    "centroids": idx.centroids.tolist(),
                    "loss": idx.loss,
                }
            )
            dim = int(idx.centroids.shape[1])
            info["sub_index"] = (
                {"index_type": "FLAT", "dim": dim, "metric_type": idx.metric}
                if idx.kind == "IVF_FLAT"
                else {
                    "dim": dim,
                    "num_bits": 8,
                    "bounds": {"start": idx.sq_bounds[0], "end": idx.sq_bounds[1]},
                    "index_type": "SQ",
                    "metric_type": idx.metric,
                }
                if idx.kind == "IVF_SQ" and idx.sq_bounds is not None
                else {"index_type": "PQ", "nbits": 8, "num_sub_vectors": idx.num_sub_vectors, "dimension": dim,
                      "metric_type": idx.metric}
                if idx.legacy is not None  # (pylance's legacy PQ sub-index reports these)
                else {
                    "index_type": "PQ",
                    "dimension": dim,
                    # (cosine codes normalized vectors' residuals: the codebook's own metric is l2)
                    "metric_type": "l2" if idx.metric == "cosine" else idx.metric,
                    "nbits": idx.nbits,
                    "num_sub_vectors": idx.num_sub_vectors,
                    "transposed": True,
                }
            )
        segments.append(info)
    empty_btree = kind == "BTree" and not any(segments)
    return {
        "index_type": "N/A" if empty_btree else reported,
        "name": index_name,
        "num_indices": desc.num_segments,
        "num_segments": desc.num_segments,
        "indices": segments,
        "segments": segments,
        "num_indexed_fragments": len([f for f in covered if f in rows]),
        "num_indexed_rows": desc.num_rows_indexed,
        "num_unindexed_fragments": len([f for f in live if f not in covered]),
        "num_unindexed_rows": sum(rows[f][1] for f in live if f not in covered),
        "num_indexed_rows_per_delta": [
            sum(rows[f][1] for f in seg.fragment_ids if f in rows) for seg in desc.segments
        ],
        "updated_at_timestamp_ms": max(int(e.get("created_at") or 0) for e in _raw_entries(view, index_name)),
    }


def _raw_entries(view: "DatasetView", name: str) -> List[Dict[str, Any]]:
    """The segments named `name`, as the index section's JSON holds them (all fields)."""
    section = view.loaded.index_section
    entries = json.loads(_lancepy.index_section_to_json(section))["indices"] if section is not None else []
    return [e for e in entries if e.get("name") == name]


def drop_index(view: "DatasetView", name: str) -> "DatasetView":
    """See :meth:`LanceDataset.drop_index`."""
    from lancepy.exceptions import IndexNotFoundError

    section = view.loaded.index_section
    entries = json.loads(_lancepy.index_section_to_json(section))["indices"] if section is not None else []
    removed = [e for e in entries if e.get("name") == name]
    if not removed:
        raise IndexNotFoundError(f"index {name!r} does not exist in version {view.version} of {view.uri}")
    return commit_on(view, "CreateIndex", {"new_indices": [], "removed_indices": removed})


def _check_accelerator(accelerator: Any) -> None:
    """``None`` or the CPU (a string or a ``torch.device``) is fine: lancepy trains there.
    A malformed device name is an InvalidArgumentError; a GPU is not supported."""
    import re

    if accelerator is None:
        return
    text = str(getattr(accelerator, "type", accelerator)) if not isinstance(accelerator, str) else accelerator
    if hasattr(accelerator, "type") and getattr(accelerator, "index", None) is not None:
        text = f"{accelerator.type}:{accelerator.index}"
    if not re.fullmatch(r"cpu|cuda(:\d+)?|mps", text):
        raise InvalidArgumentError(f"create_index(accelerator={accelerator!r}): not a device name ('cpu', 'cuda', 'cuda:N', 'mps')")
    if text != "cpu":
        raise NotSupportedError(f"create_index(accelerator={accelerator!r}): lancepy trains on the CPU (accelerator='cpu')")


def prepare_vector_index(
    view: "DatasetView",
    column: Union[str, List[str]],
    index_type: str,
    name: Optional[str] = None,
    metric: str = "L2",
    replace: bool = False,
    num_partitions: Optional[int] = None,
    ivf_centroids: Any = None,
    pq_codebook: Any = None,
    num_sub_vectors: Optional[int] = None,
    accelerator: Any = None,
    index_cache_size: Optional[int] = None,
    shuffle_partition_batches: Optional[int] = None,
    shuffle_partition_concurrency: Optional[int] = None,
    ivf_centroids_file: Optional[str] = None,
    precomputed_partition_dataset: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
    filter_nan: bool = True,
    train: bool = True,
    fragment_ids: Optional[List[int]] = None,
    index_uuid: Optional[str] = None,
    *,
    target_partition_size: Optional[int] = None,
    streaming_sample_rate: Optional[int] = None,
    streaming_coreset_rate: Optional[int] = None,
    streaming_refine_passes: Optional[int] = None,
    skip_transpose: bool = False,
    progress_callback: Optional[Callable[[Any], None]] = None,
    sample_rate: int = 256,
    max_iters: int = 50,
    num_bits: int = 8,
    seed: Optional[int] = None,
    index_file_version: Optional[str] = None,
    one_pass_ivfpq: bool = False,
) -> "VectorIndexPlan":
    """:func:`create_index`'s checks and choices, before anything is read (a distributed
    build, :func:`lancepy.spark.create_index`, makes them on its driver)."""
    import warnings

    from lancepy._ops import ivf_build as _ivf_build
    from lancepy.exceptions import IndexAlreadyExistsError

    version = getattr(index_file_version, "value", index_file_version)
    version = "V3" if version is None else str(version)
    if version.upper() not in ("V3", "LEGACY"):
        raise InvalidArgumentError(f"create_index: index_file_version must be 'Legacy' or 'V3', got {index_file_version!r}")
    legacy = version.upper() == "LEGACY"
    kind = str(index_type).upper()
    if legacy and kind != "IVF_PQ":
        raise NotSupportedError(
            f"create_index(index_type={index_type!r}, index_file_version={index_file_version!r}): lancepy writes the "
            "legacy index layout for IVF_PQ only"
        )
    if kind not in ("IVF_FLAT", "IVF_PQ", "IVF_SQ"):
        raise NotSupportedError(
            f"create_index(index_type={index_type!r}): lancepy builds IVF_FLAT, IVF_PQ and IVF_SQ vector indices only"
        )
    if not isinstance(one_pass_ivfpq, bool):
        raise InvalidArgumentError(f"one_pass_ivfpq must be a bool, got {one_pass_ivfpq!r}")
    _check_accelerator(accelerator)
    for arg, value in (
        ("shuffle_partition_batches", shuffle_partition_batches),
        ("shuffle_partition_concurrency", shuffle_partition_concurrency),
        ("precomputed_partition_dataset", precomputed_partition_dataset),
        ("streaming_sample_rate", streaming_sample_rate),
        ("streaming_coreset_rate", streaming_coreset_rate),
        ("streaming_refine_passes", streaming_refine_passes),
    ):
        if value is not None:
            raise NotSupportedError(f"create_index({arg}=...): lancepy trains on the CPU, in memory, in one pass")
    if not train:
        raise NotSupportedError("create_index(train=False): lancepy always trains the index it builds")
    if num_bits not in (4, 8) or (num_bits == 4 and kind != "IVF_PQ"):
        raise NotSupportedError(
            f"create_index(num_bits={num_bits}): lancepy writes 8-bit PQ and SQ codes and 4-bit PQ codes only")
    if index_cache_size is not None:
        warnings.warn(
            "create_index(index_cache_size=) has no effect (as in pylance 14)", DeprecationWarning, stacklevel=3
        )
    if isinstance(column, (list, tuple)):
        if len(column) != 1:
            raise NotSupportedError(f"create_index: a vector index covers one column, got {list(column)}")
        column = column[0]
    metric_name = str(metric).lower()
    if metric_name == "euclidean":
        metric_name = "l2"
    if metric_name not in ("l2", "cosine", "dot", "hamming"):
        raise InvalidArgumentError(f"Metric {metric} not supported.")
    if metric_name == "hamming" and kind != "IVF_FLAT":
        raise NotSupportedError(f"create_index(index_type={index_type!r}, metric='hamming'): lancepy builds IVF_FLAT "
                                "indices of binary vectors only")
    for arg, value in (
        ("sample_rate", sample_rate),
        ("max_iters", max_iters),
        ("num_partitions", num_partitions),
        ("target_partition_size", target_partition_size),
    ):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise InvalidArgumentError(f"create_index: {arg} must be a positive integer, got {value!r}")
    ids = view.loaded.field_ids_by_path
    field = _vc.field_of(view.schema, column)  # (a top-level column or a path into structs: "data.embedding")
    if not pa.types.is_fixed_size_list(field.type):
        raise TypeError(f"Vector column {column} must be FixedSizeListArray, got {field.type}")
    binary = pa.types.is_uint8(field.type.value_type)
    if binary != (metric_name == "hamming"):
        if binary:
            raise TypeError(f"Vector column {column} holds uint8 (binary) vectors: index them with metric='hamming'")
        raise TypeError(f"metric='hamming' is for uint8 (binary) vectors; column {column} holds {field.type.value_type}")
    if not binary and not pa.types.is_floating(field.type.value_type):
        raise TypeError(f"Vector column {column} must have floating value type, got {field.type.value_type}")
    # pylance types an index's centroids, PQ codebook and IVF_FLAT vectors like the vectors.
    value_type = {pa.float16(): "float16", pa.float32(): "float32", pa.float64(): "float64", pa.uint8(): "uint8"}.get(
        field.type.value_type)
    if value_type is None:
        raise NotSupportedError(
            f"create_index on {field.type.value_type} vectors: lancepy builds indices of float16, float32 and float64 vectors"
        )
    dim = field.type.list_size
    if legacy and value_type != "float32":
        raise NotSupportedError(
            f"create_index(index_file_version={index_file_version!r}): lancepy writes legacy IVF_PQ indices of float32 "
            f"vectors (not {value_type})"
        )
    if legacy and num_bits not in (None, 8):
        raise NotSupportedError(
            f"create_index(num_bits={num_bits!r}, index_file_version={index_file_version!r}): the legacy index layout "
            "holds 8-bit PQ codes only"
        )
    if kind == "IVF_PQ":
        if num_sub_vectors is None:
            raise InvalidArgumentError("num_partitions and num_sub_vectors are required for IVF_PQ")
        if num_sub_vectors < 1 or dim % num_sub_vectors:
            raise InvalidArgumentError(f"dimension ({dim}) must be divisible by num_sub_vectors ({num_sub_vectors})")
        if num_bits == 4 and num_sub_vectors % 2:
            raise InvalidArgumentError(f"num_sub_vectors must be even for num_bits=4 (two codes a byte), got {num_sub_vectors}")
    elif pq_codebook is not None:
        raise InvalidArgumentError("pq_codebook is for IVF_PQ indices")
    if kind == "IVF_SQ":
        if num_sub_vectors is not None:
            raise InvalidArgumentError("num_sub_vectors is for IVF_PQ indices (IVF_SQ codes every value)")
        if metric_name == "dot":
            raise NotSupportedError("create_index(index_type='IVF_SQ', metric='dot'): lancepy builds IVF_SQ for l2 and cosine")
    if ivf_centroids is not None and ivf_centroids_file is not None:
        raise InvalidArgumentError("ivf_centroids and ivf_centroids_file cannot be provided at the same time")
    if ivf_centroids_file is not None:
        import numpy as np

        with open(ivf_centroids_file, "rb") as f:
            ivf_centroids = np.load(f)
    name = name if name is not None else f"{column}_idx"
    section = view.loaded.index_section
    entries = json.loads(_lancepy.index_section_to_json(section))["indices"] if section is not None else []
    existing = [e for e in entries if e.get("name") == name]
    if existing and not replace:
        raise IndexAlreadyExistsError(f"Index name '{name}' already exists, use replace=True to overwrite it")
    if num_partitions is None and target_partition_size is not None and ivf_centroids is None:
        rows = (
            view.count_rows()
            if fragment_ids is None
            else sum(live for fid, (_, live) in view.fragment_rows().items() if fid in set(fragment_ids))
        )
        num_partitions = min(max(1, rows // target_partition_size), _ivf_build.MAX_PARTITIONS)
    files_options = view.storage_options if storage_options is None else normalize_storage_options(storage_options)
    params = _ivf_build.IvfParams(
        kind=kind,
        metric=metric_name,
        num_partitions=num_partitions,
        num_sub_vectors=num_sub_vectors,
        sample_rate=sample_rate,
        max_iters=max_iters,
        ivf_centroids=ivf_centroids,
        pq_codebook=pq_codebook,
        filter_nan=filter_nan,
        seed=seed,
        transposed=not skip_transpose,
        value_type=value_type,
        num_bits=num_bits,
        file_version="Legacy" if legacy else "V3",
        target_partition_size=target_partition_size,
    )
    return VectorIndexPlan(column, ids[column], dim, params, name, existing, files_options)


@dataclass
class VectorIndexPlan:
    """What :func:`prepare_vector_index` found: the column (its field id and dimension), the
    build's parameters, the index's name, the segments it replaces, the files' storage options."""

    column: str
    field_id: int
    dim: int
    params: Any  # ivf_build.IvfParams
    name: str
    existing: List[Dict[str, Any]]
    storage_options: Any


def create_index(
    view: "DatasetView",
    column: Union[str, List[str]],
    index_type: str,
    name: Optional[str] = None,
    metric: str = "L2",
    replace: bool = False,
    num_partitions: Optional[int] = None,
    ivf_centroids: Any = None,
    pq_codebook: Any = None,
    num_sub_vectors: Optional[int] = None,
    accelerator: Any = None,
    index_cache_size: Optional[int] = None,
    shuffle_partition_batches: Optional[int] = None,
    shuffle_partition_concurrency: Optional[int] = None,
    ivf_centroids_file: Optional[str] = None,
    precomputed_partition_dataset: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
    filter_nan: bool = True,
    train: bool = True,
    fragment_ids: Optional[List[int]] = None,
    index_uuid: Optional[str] = None,
    *,
    target_partition_size: Optional[int] = None,
    streaming_sample_rate: Optional[int] = None,
    streaming_coreset_rate: Optional[int] = None,
    streaming_refine_passes: Optional[int] = None,
    skip_transpose: bool = False,
    progress_callback: Optional[Callable[[Any], None]] = None,
    sample_rate: int = 256,
    max_iters: int = 50,
    num_bits: int = 8,
    seed: Optional[int] = None,
    index_file_version: Optional[str] = None,
    one_pass_ivfpq: bool = False,
) -> "DatasetView":
    """See :meth:`LanceDataset.create_index`."""
    from lancepy._ops import ivf_build as _ivf_build

    plan = prepare_vector_index(
        view, column, index_type, name, metric, replace, num_partitions, ivf_centroids, pq_codebook, num_sub_vectors,
        accelerator, index_cache_size, shuffle_partition_batches, shuffle_partition_concurrency, ivf_centroids_file,
        precomputed_partition_dataset, storage_options, filter_nan, train, fragment_ids, index_uuid,
        target_partition_size=target_partition_size, streaming_sample_rate=streaming_sample_rate,
        streaming_coreset_rate=streaming_coreset_rate, streaming_refine_passes=streaming_refine_passes,
        skip_transpose=skip_transpose, progress_callback=progress_callback, sample_rate=sample_rate,
        max_iters=max_iters, num_bits=num_bits, seed=seed, index_file_version=index_file_version,
        one_pass_ivfpq=one_pass_ivfpq,
    )
    entry = _ivf_build.build(
        view, plan.column, plan.field_id, plan.dim, plan.params, fragment_ids, index_uuid, plan.name, progress_callback,
        plan.storage_options,
    )
    view = commit_on(view, "CreateIndex", {"new_indices": [entry], "removed_indices": plan.existing})
    if progress_callback is not None:
        progress_callback(_ivf_build.IndexBuildProgress("commit", 1, 1))
    return view
