"""Lance datasets: versioned tables made of fragments (the API is shaped like pylance's).

::

    ds = lancepy.write_dataset(table, "data.lance")               # version 1
    ds = lancepy.write_dataset(more, "data.lance", mode="append")  # version 2
    ds.delete("id < 10")                                           # version 3
    ds.to_table(columns=["id"], filter="score > 0.5", limit=10)
    ds.take([5, 1, 5])
    lancepy.dataset("data.lance", version=1).count_rows()          # time travel
    ds.tags.create("gold", 2); lancepy.dataset("data.lance", version="gold")
    ds.add_columns({"double_id": "id * 2"})                        # no rewrite of old files
    ds.optimize.compact_files(); ds.cleanup_old_versions(older_than=timedelta(0))

This module decides; the native module moves bytes. Reads of many fragments are one native
call (parallel, GIL released, zero-copy results); commits follow :mod:`lancepy._table.commit`.
"""

from __future__ import annotations

import copy
import datetime
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import pyarrow as pa

from lancepy import _lancepy
from lancepy import blob as _blob
from lancepy._core.args import (
    DEFAULT_CONFLICT_RETRIES,
    DEFAULT_RETRY_TIMEOUT,
    _args,
    _refuse,
    _timeout_seconds,
)
from lancepy._core.iostats import IoStatsMembers, dataset_tracker, track_io
from lancepy._core.paths import PathLike, _uri
from lancepy._core.storage import StorageOptions, normalize_storage_options
from lancepy._ops import config as _config
from lancepy._ops import evolution as _evolution
from lancepy._ops import indices as _index_ops
from lancepy._ops import mutations as _mutations
from lancepy._ops import scalar_index as _scalar_index
from lancepy._ops.scalar_index import DocumentGranularity
from lancepy._ops import take as _take
from lancepy._ops import write as _write
from lancepy._ops.write import LANCE_COMMIT_MESSAGE_KEY
from lancepy._table import bases as _bases
from lancepy._table import cleanup as _cleanup
from lancepy._table import commit as _commit
from lancepy._table.commit import AutoCleanupConfig
from lancepy._table.bases import DatasetBasePath
from lancepy._table.cleanup import CleanupStats
from lancepy._table.manifest import _summary_entry
from lancepy._table import operations as _operations
from lancepy._table import validate as _validate
from lancepy._table.operations import IndexDescription, LanceOperation, LanceSchema, Transaction
from lancepy._table.snapshot import DatasetView
from lancepy._table import tags as _tags
from lancepy._table.tags import Tags
from lancepy.arrow_dataset import ArrowDataset, DatasetArrowMembers
from lancepy.exceptions import UnsupportedError
from lancepy.fragment import DEFAULT_MAX_BYTES_PER_FILE, DEFAULT_MAX_ROWS_PER_FILE, FragmentMetadata, LanceFragment
from lancepy.merge_insert import MergeInsertBuilder
from lancepy.optimize import CompactionMetrics, DatasetOptimizer
from lancepy.scanner import ColumnOrdering, LanceScanner, slice_rows
from lancepy.stats import LanceStats
from lancepy.vector import VectorIndexReader  # noqa: F401  (pylance's lance.dataset.VectorIndexReader)
from lancepy import session as _session
from lancepy.session import DatasetSessionMembers

if TYPE_CHECKING:  # pragma: no cover
    from lancepy.sql import SqlQueryBuilder

__all__ = [
    "LanceDataset",
    "LanceScanner",
    "LanceOperation",
    "Tags",
    "CompactionMetrics",
    "CleanupStats",
    "MergeInsertBuilder",
    "DatasetBasePath",
    "LanceSchema",
    "ColumnOrdering",
    "dataset",
    "write_dataset",
    "LANCE_COMMIT_MESSAGE_KEY",
]

def _reopen(uri: str, version: int, storage_options: StorageOptions, base_store_params: Any) -> "LanceDataset":
    """A pickled :class:`LanceDataset` again (see ``LanceDataset.__reduce__``)."""
    return LanceDataset(uri, version, storage_options=storage_options, base_store_params=base_store_params)


@track_io(dataset_tracker)
class LanceDataset(DatasetSessionMembers, DatasetArrowMembers, IoStatsMembers, ArrowDataset):
    """One version of a Lance dataset, a ``pyarrow.dataset.Dataset``. Use :func:`dataset` or :func:`write_dataset`."""

    def __init__(
        self,
        uri: PathLike,
        version: Union[int, str, None] = None,
        *,
        storage_options: StorageOptions = None,
        base_store_params: Optional[Dict[str, Dict[str, str]]] = None,
        _loaded: Any = None,
        _io: Any = None,
    ) -> None:
        self._io = _io if _io is not None else _lancepy.IoTracker()  # (see io_stats_snapshot)
        uri, options = _uri(uri), normalize_storage_options(storage_options)
        # Storage options per base path URI (instead of the dataset's), for files under it.
        params = _bases.normalize_base_store_params(base_store_params)
        store = _lancepy.Store(uri, options)
        with self._io:
            loaded = _tags.load_version(store, version) if _loaded is None else _loaded
            _commit.check_feature_flags(loaded, write=False, uri=uri)
            # (its own session, unless dataset() / checkout_version share one: session.attach)
            self._view = DatasetView(uri, options, params, store, _session.Session(), None, self._io, loaded)

    def _set_loaded(self, loaded: _commit.LoadedManifest) -> None:
        """Moves this object to the version `loaded`: its one :class:`DatasetView` (the
        version's native snapshot and every per-version cache) is replaced, never mutated,
        so that nothing of the previous version survives a move (a delete, an append, a
        compaction, a restore, ...), and so that :meth:`_pinned` views keep theirs."""
        _commit.check_feature_flags(loaded, write=False, uri=self._view.uri)
        self._view = self._view.at(loaded)

    def _pinned(self) -> "LanceDataset":
        """This version as an object of its own that never moves (fragments, scanners and
        SQL queries read the version they were made from, as pylance's do, even after this
        object moves on). It shares this version's caches until this object moves."""
        if getattr(self, "_is_pinned_view", False):
            return self
        view = copy.copy(self)  # (the same snapshot and caches: see DatasetArrowMembers.__copy__)
        view._is_pinned_view = True
        return view

    # -- description ---------------------------------------------------------------------

    @property
    def uri(self) -> str:
        """Where the dataset is."""
        return self._view.uri

    @property
    def storage_options(self) -> Optional[Dict[str, str]]:
        """The storage options the dataset was opened with (credentials, endpoint, ...)."""
        return None if self._view.storage_options is None else dict(self._view.storage_options)

    @property
    def version(self) -> int:
        """The version this object reads."""
        return self._view.loaded.version

    @property
    def latest_version(self) -> int:
        """The newest committed version (found by listing ``_versions/``)."""
        return _commit.latest_version(self._view.store)[0]

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of this version (that of its scans with `default_scan_options`, as pylance)."""
        return _session.view_schema(self) if self._default_scan_options else self._schema

    @property
    def _schema(self) -> pa.Schema:
        return self._view.state.schema()

    @property
    def data_storage_version(self) -> str:
        """The data file version new files are written with (``"2.0"``, ``"2.1"``, ``"2.2"``)."""
        return self._view.loaded.data_storage_version

    @property
    def max_field_id(self) -> int:
        """Largest field id used by the schema or any data file."""
        return self._view.loaded.max_field_id

    @property
    def manifest_naming(self) -> str:
        """``"v1"`` or ``"v2"``."""
        return self._view.loaded.naming

    def config(self) -> Dict[str, str]:
        """The table config (a method, as in pylance)."""
        return self._view.loaded.config

    @property
    def has_stable_row_ids(self) -> bool:
        """Whether row ids survive compaction and updates (``enable_stable_row_ids``)."""
        return self._view.loaded.stable_row_ids

    @property
    def stats(self) -> "LanceStats":
        """Statistics about this version (``ds.stats.dataset_stats()``)."""
        return LanceStats(self)

    @property
    def metadata(self) -> Dict[str, str]:
        """The table metadata (``Manifest.table_metadata``)."""
        return self._view.loaded.table_metadata

    @property
    def schema_metadata(self) -> Dict[str, str]:
        """The schema metadata, decoded as text."""
        return self._view.loaded.schema_metadata_text

    @property
    def lance_schema(self) -> "LanceSchema":
        """The schema with its Lance field ids (for :class:`LanceOperation.Project` /
        :class:`LanceOperation.Merge`)."""
        loaded = self._view.loaded
        return LanceSchema(loaded.field_entries, loaded.schema_metadata)

    def update_config(self, values: Dict[str, Optional[str]], *, replace: bool = False) -> Dict[str, str]:
        """Sets config keys (a ``None`` value deletes the key; `replace` drops every key not
        given) as a new version; returns the new config."""
        return self._installed(_config.update_config(self._view, values, replace=replace))

    def delete_config_keys(self, keys: List[str]) -> None:
        """Deletes config keys (missing ones are ignored) as a new version."""
        self._install(_config.delete_config_keys(self._view, keys))

    def update_metadata(self, values: Dict[str, Optional[str]], *, replace: bool = False) -> Dict[str, str]:
        """Updates the table metadata like :meth:`update_config`; returns the new metadata."""
        return self._installed(_config.update_metadata(self._view, values, replace=replace))

    def update_schema_metadata(self, values: Dict[str, Optional[str]], *, replace: bool = False) -> Dict[str, str]:
        """Updates the schema metadata like :meth:`update_config`; returns the new schema
        metadata."""
        return self._installed(_config.update_schema_metadata(self._view, values, replace=replace))

    def replace_schema_metadata(self, new_metadata: Dict[str, str]) -> None:
        """Replaces the whole schema metadata."""
        self._install(_config.replace_schema_metadata(self._view, new_metadata))

    def update_field_metadata(self, field_updates: Dict[str, Dict[str, Optional[str]]], *, replace: bool = False) -> None:
        """Updates the metadata of fields, named by path (``"a"``, ``"s.x"`` for a struct
        child), like :meth:`update_config`."""
        self._install(_config.update_field_metadata(self._view, field_updates, replace=replace))

    def replace_field_metadata(self, field_name: str, new_metadata: Dict[str, str]) -> None:
        """Replaces the whole metadata of one field (named by path)."""
        self._install(_config.replace_field_metadata(self._view, field_name, new_metadata))

    def _field_ids_by_path(self) -> Dict[str, int]:
        return self._view.loaded.field_ids_by_path

    @property
    def tags(self) -> "Tags":
        """The dataset's tags."""
        return Tags(self._view.store, self.version)

    @property
    def optimize(self) -> "DatasetOptimizer":
        """Compaction."""
        return DatasetOptimizer(self)

    @property
    def has_index(self) -> bool:
        """Whether this version carries indices (created by another tool)."""
        return self._view.loaded.index_section is not None and bool(_lancepy.describe_index_section(self._view.loaded.index_section))

    def list_indices(self) -> List[Dict[str, Any]]:
        """The indices of this version, one dict per index segment as pylance lists them:
        ``name``, ``type`` (``"IVF_PQ"``, ``"IVF_FLAT"``, ``"BTree"``, ...), ``uuid``,
        ``fields`` (column names), ``version`` (the dataset version it was built on),
        ``fragment_ids`` (the fragments it covers, a set) and ``base_id``."""
        return _index_ops.list_indices(self._view)

    def _index_entries(self) -> List[Dict[str, Any]]:
        """The index section's entries (uuid, fields, fragment ids, ...), decoded."""
        return self._view.index_entries()

    def describe_indices(self) -> List["IndexDescription"]:
        """One :class:`IndexDescription` per index name (its segments together), as pylance:
        type URL, rows indexed (live rows of the fragments it covers), field ids and names,
        segments, and the bytes of its files."""
        return _index_ops.describe_indices(self._view)

    def index_statistics(self, index_name: str) -> Dict[str, Any]:
        """Statistics of the index `index_name` (pylance's keys): type, segments, indexed and
        unindexed fragments and rows; for IVF indices also each segment's metric, partitions
        (sizes) and sub-index, for BTREE ones each segment's min, max and pages, BITMAP /
        LABEL_LIST ones ``num_bitmaps``; other scalar indices' hold the uuid and type only."""
        return _index_ops.index_statistics(self._view, index_name)

    def drop_index(self, name: str) -> None:
        """Removes the index `name` (every segment of it) from the dataset: a new version
        whose manifest no longer lists it, committed as pylance does (a ``CreateIndex``
        transaction with the index among its removed ones). The index files stay until
        :meth:`cleanup_old_versions` removes them with the versions that use them. An unknown
        name raises :class:`~lancepy.exceptions.IndexNotFoundError`."""
        self._install(_index_ops.drop_index(self._view, name))

    def create_index(
        self,
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
    ) -> "LanceDataset":
        """Builds a vector index on `column` (``"data.embedding"``: a vector in a struct) and commits
        it as a new version (pylance's signature; returns this dataset, now at that version).

        ``index_type`` is ``"IVF_FLAT"``, ``"IVF_PQ"`` or ``"IVF_SQ"`` (8-bit codes over the
        sample's value range; l2 and cosine), written in pylance 14's on-disk format (pylance
        uses it, lancepy uses pylance's). IVF centroids are trained by k-means on
        ``num_partitions × sample_rate`` random rows (default partitions: one per 4,096 rows
        for IVF_FLAT, else 8,192, at most 4,096), PQ codebooks (8-bit codes, or 4-bit with ``num_bits=4``;
        ``num_sub_vectors`` required) on ``2^num_bits × sample_rate`` rows, ``max_iters`` Lloyd
        iterations at most. ``metric``: ``"l2"``, ``"cosine"``, ``"dot"``; ``"hamming"`` (IVF_FLAT of uint8 vectors). Rows
        whose vector is null (or, with ``filter_nan``, holds NaN/inf) are left out of the
        index. ``ivf_centroids`` / ``ivf_centroids_file`` (a ``.npy``) and ``pq_codebook``
        skip the training. ``fragment_ids`` indexes only those fragments (the others are
        searched exactly). An index of the same name is an error unless ``replace=True``.
        ``progress_callback`` receives :class:`~lancepy._ops.ivf_build.IndexBuildProgress`
        updates; ``seed`` (lancepy's) makes the training reproducible.

        ``accelerator`` may be ``"cpu"``, where lancepy trains; ``one_pass_ivfpq`` is how it
        always builds. Not supported (:class:`~lancepy.exceptions.NotSupportedError`): other
        index types, GPUs, ``shuffle_partition_*``, ``precomputed_partition_dataset``,
        ``streaming_*``, ``train=False``, ``num_bits`` other than 8, multi-column indices,
        vectors that are not float32, ``index_file_version="Legacy"`` but for IVF_PQ of float32.
        """
        self._install(_index_ops.create_index(self._view, **_args(locals())))
        return self

    def create_scalar_index(
        self, column: Union[str, List[str]], index_type: Any, name: Optional[str] = None, *, replace: bool = True,
        train: bool = True, fragment_ids: Optional[List[int]] = None, index_uuid: Optional[str] = None,
        progress_callback: Optional[Callable[[Any], None]] = None, format_version: Optional[Union[int, str]] = None,
        document_granularity: DocumentGranularity = DocumentGranularity.ROW, with_position: Optional[bool] = None,
        block_size: Optional[int] = None, memory_limit: Optional[int] = None, num_workers: Optional[int] = None,
        base_tokenizer: Optional[str] = None, language: Optional[str] = None, max_token_length: Optional[int] = 40,
        lower_case: Optional[bool] = None, stem: Optional[bool] = None, remove_stop_words: Optional[bool] = None,
        custom_stop_words: Optional[List[str]] = None, ascii_folding: Optional[bool] = None,
        min_ngram_length: Optional[int] = None, max_ngram_length: Optional[int] = None, prefix_only: Optional[bool] = None,
        analyzer: Optional[str] = None, split_identifiers: Optional[bool] = None, split_on_numerics: Optional[bool] = None,
        preserve_original: Optional[bool] = None, index_operators: Optional[bool] = None,
    ) -> None:
        """Builds a scalar index on `column` and commits it as a new version (pylance 14's
        signature). ``"BTREE"``, ``"BITMAP"``, ``"LABEL_LIST"`` and ``"INVERTED"`` / ``"FTS"``
        (tokenizers ``simple``, ``whitespace``, ``raw``, ``icu``, ``icu/split``, ``code``, ``ngram``,
        ``jieba/<model>`` and ``lindera/<model>`` with the model under ``LANCE_LANGUAGE_MODEL_HOME``;
        :func:`lancepy.indices.build_lindera_dictionary` compiles a lindera dictionary) are built, in pylance 14's
        on-disk formats; other types raise :class:`~lancepy.exceptions.NotSupportedError`.
        Default name ``<column>_idx``, replaced unless ``replace=False`` (then
        :class:`IndexAlreadyExistsError`); ``train=False`` commits an empty index. ``memory_limit``
        (MiB): INVERTED's build budget; BTREE/BITMAP/LABEL_LIST's sort budget (default 1 GiB; a
        larger column is sorted in runs spilled to a temporary directory). ``progress_callback``
        gets :class:`~lancepy.progress.IndexProgress` events. INVERTED ``max_token_length``:
        longer tokens are dropped (default 40; ``None``: none is); ``language``: any of pylance's
        18 (stemmers and stop-word lists as pylance 14's; default ``"English"``);
        ``analyzer="code"`` (or ``base_tokenizer="code"``): identifiers and, with
        ``index_operators``, operators as tokens, ``split_identifiers`` into their words
        (``split_on_numerics``, ``preserve_original``), no stemming or stop words unless asked,
        as pylance 14's code analyzer. Not supported: ``fragment_ids``
        (``ValueError``, as pylance), ``num_workers`` > 1, ``document_granularity="list_element"``.
        ``index_type=IndexConfig("json", {"target_index_type": "btree" | "bitmap", "path": p})``
        (:class:`lancepy.indices.IndexConfig`): an index over the value at JSON path ``p``."""
        self._install(_scalar_index.create_scalar_index(self._view, **_args(locals())))

    def base_paths(self) -> Dict[int, DatasetBasePath]:
        """The base paths this version registers, by id: other roots holding some of its
        files (the source of a shallow clone, other buckets). The dataset's own root is not
        included unless registered."""
        return _bases.base_paths_of(self._view.loaded.base_paths)

    def shallow_clone(
        self,
        target_path: PathLike,
        reference: _bases.Reference,
        storage_options: StorageOptions = None,
    ) -> "LanceDataset":
        """Creates a new dataset at `target_path` from version `reference` of this one
        without copying data: its manifest refers to this dataset's files through a base path.

        `reference` is a version number, a tag name, or ``(branch, version)`` (only the
        default branch, ``None`` or ``"main"``; version ``None`` = latest). The clone has
        that version's number, schema, rows and indices, and no tags. Writes to the clone
        (appends, deletes, compaction, new columns) go under `target_path` only; cleaning up
        the clone never deletes this dataset's files. Deleting or cleaning up *this* dataset
        may remove files the clone still reads. `storage_options` default to this
        dataset's. Raises :class:`DatasetAlreadyExistsError` if a dataset exists at
        `target_path`; a failed clone leaves no version behind.
        """
        options = self._view.storage_options if storage_options is None else normalize_storage_options(storage_options)
        target = _uri(target_path)
        _bases.shallow_clone(self._view.store, target, reference, options)
        return LanceDataset(target, storage_options=options)

    def add_bases(
        self, new_bases: List[DatasetBasePath], transaction_properties: Optional[Dict[str, str]] = None
    ) -> "LanceDataset":
        """Registers more base paths (an ``UpdateBases`` transaction), which later writes can
        name in ``target_bases``. Ids not given are assigned (largest so far + 1); a name or
        path that is already registered is an :class:`InvalidArgumentError`. Returns self,
        now at the new version."""
        self._install(_config.add_bases(self._view, new_bases, transaction_properties))
        return self

    def versions(self) -> List[Dict[str, Any]]:
        """Every committed version: ``{"version", "timestamp", "metadata"}``, oldest first."""
        # One native call: every manifest read in parallel, only the summary fields decoded.
        return [_summary_entry(row) for row in _lancepy.version_summaries(self._view.store)]

    def get_version(self) -> Dict[str, Any]:
        """This version: ``{"version", "timestamp", "metadata"}`` as in :meth:`versions`."""
        return self._view.loaded.version_entry()

    def _snapshot_rows(self) -> Dict[int, Any]:
        return self._view.state.fragment_rows()

    def get_fragments(self, filter: Any = None) -> List[LanceFragment]:
        """The fragments of this version. `filter` (pylance's partition pruning) is not
        supported: giving one raises :class:`~lancepy.exceptions.NotSupportedError`."""
        _refuse(filter=filter)
        return LanceFragment._of_version(LanceFragment._version_of(self), self._view.loaded.fragment_ids)

    def _fragment_id_set(self) -> frozenset:
        """The ids of this version's fragments (per-version cache)."""
        return self._view.state.fragment_ids()

    def _fragment_metadata(self, fragment_id: int) -> FragmentMetadata:
        """The manifest entry of fragment `fragment_id` of this version."""
        return self._view.state.fragment_metadata(fragment_id)

    def get_fragment(self, fragment_id: int) -> Optional[LanceFragment]:
        """The fragment with id `fragment_id`, or ``None``."""
        if not self._view.loaded.has_fragment(fragment_id):
            return None
        return LanceFragment._of_version(LanceFragment._version_of(self), [fragment_id])[0]

    def __len__(self) -> int:
        return self.count_rows()

    def __repr__(self) -> str:
        return f"LanceDataset({self._view.uri!r}, version={self.version})"

    def __reduce__(self) -> Any:
        # Pickled as where and which version it is (it reopens that version, e.g. in a worker).
        return _reopen, (self._view.uri, self.version, self._view.storage_options, self._view.base_store_params)

    # -- reading -------------------------------------------------------------------------

    def scanner(
        self,
        columns: Union[List[str], Dict[str, str], None] = None,
        filter: Any = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        nearest: Optional[Dict[str, Any]] = None,
        batch_size: Optional[int] = None,
        batch_size_bytes: Optional[int] = None,
        batch_readahead: Optional[int] = None,
        fragment_readahead: Optional[int] = None,
        scan_in_order: Optional[bool] = None,
        fragments: Optional[Sequence[Any]] = None,
        index_segments: Optional[Sequence[Any]] = None,
        full_text_query: Any = None,
        *,
        prefilter: Optional[bool] = None,
        with_row_id: Optional[bool] = None,
        with_row_address: Optional[bool] = None,
        use_stats: Optional[bool] = None,
        fast_search: Optional[bool] = None,
        io_buffer_size: Optional[int] = None,
        late_materialization: Union[bool, List[str], None] = None,
        blob_handling: Optional[str] = None,
        use_scalar_index: Optional[bool] = None,
        include_deleted_rows: Optional[bool] = None,
        scan_stats_callback: Optional[Callable[[Any], None]] = None,
        strict_batch_size: Optional[bool] = None,
        order_by: Optional[List[Any]] = None,
        disable_scoring_autoprojection: Optional[bool] = None,
        row_addr_allowlist: Optional[bytes] = None,
        row_addr_blocklist: Optional[bytes] = None,
        rrf_k: Optional[float] = None,
    ) -> "LanceScanner":
        """A scan of this version (see :class:`LanceScanner`).

        `columns` (names, or ``{name: sql expression}``), `filter` (SQL text or a pyarrow
        expression), `limit`, `offset`, `batch_size`, `fragments`, `with_row_id`,
        `with_row_address` and `order_by` (column names or :class:`ColumnOrdering`; an
        ordered scan is read whole, then sorted) work as in pylance. `late_materialization`
        names the projected columns a filtered scan reads only for the rows that pass the
        filter (``None`` or ``True``: every column the filter does not use; ``False``: none; a
        list: those). `batch_readahead` is how many batches
        (scan tasks of `batch_size` rows) a stream reads ahead of the one it hands out (by
        default a core's worth on object storage, none locally; ``to_table`` reads every
        batch at once). `fast_search` (with `nearest`) searches only the rows the column's
        vector index covers, as pylance does. Hints that cannot change the result
        (`fragment_readahead`, `scan_in_order`, `use_stats`, `io_buffer_size`) are accepted and
        have no effect: lancepy always scans in order (pylance reads `fragment_readahead` only
        out of order). A filter's `=`, `!=`, `IN`, range, `IS NULL`, `NOT` parts on a column with a
        BTREE/BITMAP index (`array_has_any`/`_all` with LABEL_LIST) pick the rows of the fragments it covers (:mod:`lancepy._ops.scalar_query`)
        unless `use_scalar_index` is false. `nearest` runs a
        nearest-neighbour search, with the column's IVF index if it has one (see :mod:`lancepy.vector`), with the filter applied
        before it when `prefilter` is true and after it otherwise. `blob_handling`
        ``"all_binary"`` returns blob columns' values instead of their descriptions;
        `include_deleted_rows` (with `with_row_id`) returns deleted rows too, with a null row
        id; `strict_batch_size` makes every batch but the last exactly `batch_size` rows;
        `batch_size_bytes` cuts batches of about that many bytes; `index_segments` (segment
        uuids) restricts a vector search to those segments of the index. `full_text_query`: see
        :mod:`lancepy._ops.fts_search`; with `nearest` too, a hybrid search fused by reciprocal rank
        (`rrf_k`, default 60: :mod:`lancepy._ops.hybrid`). Row-address allow/block lists and scan statistics raise
        :class:`~lancepy.exceptions.NotSupportedError`.
        """
        o = _session.scan_options(self, _args(locals()))  # (with this object's default_scan_options)
        return LanceScanner._from_options(self._pinned(), o)

    def to_table(
        self,
        columns: Union[List[str], Dict[str, str], None] = None,
        filter: Any = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        nearest: Optional[Dict[str, Any]] = None,
        batch_size: Optional[int] = None,
        batch_size_bytes: Optional[int] = None,
        batch_readahead: Optional[int] = None,
        fragment_readahead: Optional[int] = None,
        scan_in_order: Optional[bool] = None,
        *,
        prefilter: Optional[bool] = None,
        with_row_id: Optional[bool] = None,
        with_row_address: Optional[bool] = None,
        use_stats: Optional[bool] = None,
        fast_search: Optional[bool] = None,
        full_text_query: Any = None,
        io_buffer_size: Optional[int] = None,
        late_materialization: Union[bool, List[str], None] = None,
        blob_handling: Optional[str] = None,
        use_scalar_index: Optional[bool] = None,
        include_deleted_rows: Optional[bool] = None,
        order_by: Optional[List[Any]] = None,
        disable_scoring_autoprojection: Optional[bool] = None,
        rrf_k: Optional[float] = None,
    ) -> pa.Table:
        """Reads rows (all of them by default) into a ``pyarrow.Table``; the parameters are
        :meth:`scanner`'s."""
        return self.scanner(**_args(locals())).to_table()

    def to_batches(
        self,
        columns: Union[List[str], Dict[str, str], None] = None,
        filter: Any = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        nearest: Optional[Dict[str, Any]] = None,
        batch_size: Optional[int] = None,
        batch_size_bytes: Optional[int] = None,
        batch_readahead: Optional[int] = None,
        fragment_readahead: Optional[int] = None,
        scan_in_order: Optional[bool] = None,
        *,
        prefilter: Optional[bool] = None,
        with_row_id: Optional[bool] = None,
        with_row_address: Optional[bool] = None,
        use_stats: Optional[bool] = None,
        full_text_query: Any = None,
        io_buffer_size: Optional[int] = None,
        late_materialization: Union[bool, List[str], None] = None,
        blob_handling: Optional[str] = None,
        use_scalar_index: Optional[bool] = None,
        strict_batch_size: Optional[bool] = None,
        order_by: Optional[List[Any]] = None,
        disable_scoring_autoprojection: Optional[bool] = None,
    ) -> Iterator[pa.RecordBatch]:
        """Streams rows as record batches, decoded as the iterator advances; the parameters
        are :meth:`scanner`'s."""
        return self.scanner(**_args(locals())).to_batches()

    def to_pandas(
        self,
        columns: Union[List[str], Dict[str, str], None] = None,
        filter: Any = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        nearest: Optional[Dict[str, Any]] = None,
        batch_size: Optional[int] = None,
        batch_readahead: Optional[int] = None,
        fragment_readahead: Optional[int] = None,
        scan_in_order: Optional[bool] = None,
        *,
        prefilter: Optional[bool] = None,
        with_row_id: Optional[bool] = None,
        with_row_address: Optional[bool] = None,
        use_stats: Optional[bool] = None,
        fast_search: Optional[bool] = None,
        full_text_query: Any = None,
        io_buffer_size: Optional[int] = None,
        late_materialization: Union[bool, List[str], None] = None,
        blob_mode: str = "lazy",
        use_scalar_index: Optional[bool] = None,
        include_deleted_rows: Optional[bool] = None,
        order_by: Optional[List[Any]] = None,
        disable_scoring_autoprojection: Optional[bool] = None,
        **kwargs: Any,
    ) -> Any:
        """The rows as a ``pandas.DataFrame`` (needs pandas); the parameters are
        :meth:`scanner`'s, `blob_mode` and `kwargs` :meth:`LanceScanner.to_pandas`'s."""
        args = _args(locals())
        args.pop("blob_mode")
        pandas_args = args.pop("kwargs", None) or {}
        return self.scanner(**args).to_pandas(blob_mode=blob_mode, **pandas_args)

    def count_rows(
        self,
        filter: Any = None,
        *,
        fragments: Optional[Sequence[Any]] = None,
        nearest: Optional[Dict[str, Any]] = None,
        full_text_query: Any = None,
        prefilter: Optional[bool] = None,
        use_stats: Optional[bool] = None,
        fast_search: Optional[bool] = None,
        io_buffer_size: Optional[int] = None,
        use_scalar_index: Optional[bool] = None,
        include_deleted_rows: Optional[bool] = None,
    ) -> int:
        """Live rows (matching `filter`); the keyword parameters are :meth:`scanner`'s."""
        args = _args(locals())
        if all(v is None for v in args.values()):
            return self._view.state.count_rows()  # (the manifest's row counts less deletions)
        return self.scanner(**args).count_rows()

    def head(
        self,
        num_rows: int,
        *,
        columns: Union[List[str], Dict[str, str], None] = None,
        filter: Any = None,
        offset: Optional[int] = None,
        nearest: Optional[Dict[str, Any]] = None,
        batch_size: Optional[int] = None,
        fragments: Optional[Sequence[Any]] = None,
        full_text_query: Any = None,
        prefilter: Optional[bool] = None,
        with_row_id: Optional[bool] = None,
        with_row_address: Optional[bool] = None,
        use_stats: Optional[bool] = None,
        io_buffer_size: Optional[int] = None,
        late_materialization: Union[bool, List[str], None] = None,
        blob_handling: Optional[str] = None,
        use_scalar_index: Optional[bool] = None,
        include_deleted_rows: Optional[bool] = None,
        order_by: Optional[List[Any]] = None,
    ) -> pa.Table:
        """The first `num_rows` rows; the keyword parameters are :meth:`scanner`'s."""
        args = _args(locals())
        args["limit"] = args.pop("num_rows")
        return self.scanner(**args).to_table()

    def sample(
        self,
        num_rows: int,
        columns: Union[List[str], Dict[str, str], None] = None,
        randomize_order: bool = True,
    ) -> pa.Table:
        """`num_rows` live rows picked uniformly at random without replacement (in random
        order, or in scan order when `randomize_order` is false)."""
        return _take.sample(self._view, num_rows, columns, randomize_order)

    def slice(self, start: int, end: int, columns: Union[List[str], Dict[str, str], None] = None) -> pa.Table:
        """Rows ``start`` (inclusive) to ``end`` (exclusive) by position in scan order (deleted
        rows not counted), as one offset/limit scan; `end` past the last row stops there.
        `columns` is a list of names or a dict of output names to SQL expressions."""
        return slice_rows(self, start, end, columns)

    @staticmethod
    def drop(
        base_uri: PathLike, storage_options: Optional[Dict[str, str]] = None, ignore_not_found: Optional[bool] = None
    ) -> None:
        """Deletes the dataset at `base_uri` and everything under it (files next to the dataset
        too). To guard against a mistyped path, `base_uri` must be a dataset root: it must hold
        a manifest that can be read, else :class:`~lancepy.exceptions.InvalidArgumentError`
        (a ``ValueError``). A path that does not exist raises
        :class:`~lancepy.exceptions.DatasetNotFoundError` unless `ignore_not_found` is true.
        The manifests go first, so an interrupted drop leaves no dataset behind, only files."""
        _cleanup.drop_dataset(_uri(base_uri), normalize_storage_options(storage_options), ignore_not_found)

    def read_transaction(self, version: int) -> Optional["Transaction"]:
        """The transaction that created version `version`: a :class:`Transaction` whose
        `operation` is the :class:`LanceOperation` committed, or ``None`` when the version
        carries no readable transaction. A version that does not exist raises
        :class:`~lancepy.exceptions.VersionNotFoundError`. An operation lancepy has no class
        for (``ReserveFragments``, ``CreateIndex``, ...) is a bare
        :class:`LanceOperation.BaseOperation`, as in pylance."""
        return _operations.read_transaction(self._view.store, version)

    def get_transactions(self, recent_transactions: int = 10) -> List[Optional["Transaction"]]:
        """The transactions of the `recent_transactions` versions up to this one, newest
        first (``None`` for a version without a readable transaction)."""
        return _operations.recent_transactions(self._view.store, self.version, recent_transactions)

    def replace_schema(self, schema: Any) -> None:
        """Not built, as in pylance: use :meth:`replace_schema_metadata` or
        :meth:`replace_field_metadata`, or ``alter_columns`` for types and names."""
        raise UnsupportedError(
            "cannot replace the schema of a dataset: use replace_schema_metadata, replace_field_metadata or alter_columns"
        )

    def take(self, indices: Any, columns: Any = None, *, with_row_id: bool = False, with_row_address: bool = False) -> pa.Table:
        """Rows at `indices` (positions in scan order, deleted rows not counted), in that order
        (repeats allowed), read by one native call over the fragments in parallel. `columns`:
        names (``_rowid`` / ``_rowaddr`` / ``_rowoffset`` and nested paths too) or SQL expressions."""
        return _take.take(self._view, indices, columns, with_row_id, with_row_address)

    def _take_rows(self, row_ids: Any, columns: Any = None, with_row_id: bool = False, with_row_address: bool = False) -> pa.Table:
        """Rows by row id: row addresses (``fragment_id << 32 | offset``), or, on a dataset
        with stable row ids, those ids (as pylance's ``take_rows``). Deleted and unknown rows
        are skipped."""
        return _take._take_rows(self._view, row_ids, columns, with_row_id, with_row_address)

    take_rows = _take_rows

    def sql(self, sql: str) -> "SqlQueryBuilder":
        """A SQL ``SELECT`` over this dataset (pylance's API): ``ds.sql("SELECT a, count(*)
        FROM dataset GROUP BY a").build().to_batch_records()``. See :mod:`lancepy.sql` for
        what is supported."""
        from lancepy.sql import SqlQueryBuilder

        return SqlQueryBuilder(self._pinned(), sql)

    def take_blobs(
        self,
        blob_column: str,
        ids: Optional[Union[List[int], pa.Array]] = None,
        addresses: Optional[Union[List[int], pa.Array]] = None,
        indices: Optional[Union[List[int], pa.Array]] = None,
        *,
        buffer_size: int = _blob.DEFAULT_BLOB_BUFFER_SIZE,
    ) -> List[Optional[_blob.BlobFile]]:
        """The values of blob column `blob_column` at the selected rows as lazily read
        :class:`~lancepy.blob.BlobFile` objects (``None`` for a null value; a valid empty
        blob is a ``BlobFile`` of size 0). Select with exactly one of `ids` (row ids),
        `addresses` (row addresses) or `indices` (positions in scan order). `buffer_size` is
        the sequential read-ahead in bytes (0 disables it).

        Blob-v2 columns (file version 2.2, external blobs at absolute URIs included) and the
        blob columns of 2.0 / 2.1 files are supported; a column that is not a blob column
        raises :class:`~lancepy.exceptions.InvalidArgumentError`.
        """
        return _take.take_blobs(self._view, blob_column, ids, addresses, indices, buffer_size=buffer_size)

    # -- versions --------------------------------------------------------------------------

    def checkout_version(self, version: Union[int, str]) -> "LanceDataset":
        """Another version (number or tag) of the same dataset."""
        return _session.checkout(self, version)

    def validate(self) -> None:
        """Checks this version's files: every data file's footer and metadata can be read,
        with the fragment's row count, the recorded size and the mapped columns; every
        deletion file can be read and matches its record. Raises
        :class:`~lancepy.exceptions.CorruptFileError` listing every problem found (the
        ``lancepy validate`` command also checks every manifest)."""
        _validate.validate_version(self._view.store, self._view.loaded, self._view.storage_options)

    def checkout_latest(self) -> None:
        """Moves this object to the latest version (in place, as pylance does)."""
        self._refresh_latest()

    def restore(self) -> None:
        """Makes this (older) version the latest, as a new version; this object moves to it
        (and, as in pylance, nothing is returned)."""
        body = {"version": self.version}
        self._set_loaded(_commit.commit_body(self._view.store, self.latest_version, "Restore", body, naming=self._view.loaded.naming,
                                             commit_lock=self._view.commit_lock))

    def _refresh_latest(self) -> None:
        self._set_loaded(_commit.load_manifest(self._view.store))

    # -- modifications ---------------------------------------------------------------------

    def delete(
        self,
        predicate: Any,
        *,
        conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
        retry_timeout: datetime.timedelta = DEFAULT_RETRY_TIMEOUT,
    ) -> Dict[str, int]:
        """Deletes the rows matching `predicate` (SQL text or a pyarrow expression).

        Writes deletion files (Arrow for a few rows, roaring bitmaps for many); fragments whose
        every row is deleted leave the manifest. Commits a new version; if a concurrent commit
        conflicts, re-applies the delete to the latest version (`conflict_retries` times within
        `retry_timeout`). Returns ``{"num_deleted_rows": n}`` as pylance does.
        """
        return self._installed(_mutations.delete(
            self._view,
            predicate,
            conflict_retries=conflict_retries,
            retry_timeout=retry_timeout,
        ))

    def truncate_table(self) -> None:
        """Removes every row (a ``Delete`` of every fragment, as pylance commits it); the
        schema, config and older versions stay."""
        self._install(_mutations.truncate_table(self._view))

    def update(
        self,
        updates: Dict[str, Any],
        where: Any = None,
        conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
        retry_timeout: datetime.timedelta = DEFAULT_RETRY_TIMEOUT,
        data_storage_version: Optional[str] = None,
    ) -> Dict[str, int]:
        """Sets columns to SQL expressions (or values) for the rows matching `where`.

        The rows are rewritten into new fragments and deleted from their old ones (an
        ``Update`` transaction, like pylance's default). A conflicting concurrent commit makes
        it re-apply itself to the latest version (`conflict_retries`, `retry_timeout`).
        Returns ``{"num_rows_updated": n}``.
        """
        return self._installed(_mutations.update(self._view, updates, where, conflict_retries, retry_timeout, data_storage_version))

    def merge(self, data_obj: Any, left_on: str, right_on: Optional[str] = None, schema: Optional[pa.Schema] = None) -> None:
        """Adds the columns of `data_obj` by a left join of this dataset's column `left_on`
        with its column `right_on` (default: the same name). Rows without a match get
        nulls; where `data_obj` repeats a key, its last row is used (as in pylance). Existing
        data files are not rewritten (a ``Merge`` transaction)."""
        self._install(_mutations.merge(self._view, data_obj, left_on, right_on, schema))

    def merge_insert(self, on: Union[str, List[str], None] = None) -> "MergeInsertBuilder":
        """Upserts keyed on column(s) `on`; configure with the ``when_*`` methods.

        Without `on`, the keys are the schema's unenforced primary key: the fields whose
        metadata has ``lance-schema:unenforced-primary-key`` = ``"true"`` (as pylance); with
        neither, :class:`InvalidArgumentError` (a ``ValueError``)."""
        return MergeInsertBuilder._keyed(self, on)

    def insert(
        self,
        data: Any,
        *,
        mode: str = "append",
        schema: Optional[pa.Schema] = None,
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
        enable_stable_row_ids: bool = False,
        auto_cleanup_options: Optional[AutoCleanupConfig] = None,
        commit_message: Optional[str] = None,
        transaction_properties: Optional[Dict[str, str]] = None,
        target_bases: Optional[List[str]] = None,
    ) -> None:
        """Appends (or overwrites with) `data` and moves this object to the new version.

        The keyword parameters are :func:`write_dataset`'s (pylance forwards them there too);
        `storage_options` default to the ones this dataset was opened with.
        """
        args = _args(locals())
        args.pop("data")
        args["storage_options"] = self._view.storage_options if storage_options is None else storage_options
        ds = write_dataset(data, self._view.uri, **args)
        self._set_loaded(ds._view.loaded)

    # -- schema evolution ------------------------------------------------------------------

    def add_columns(
        self,
        transforms: Any,
        read_columns: Optional[List[str]] = None,
        reader_schema: Optional[pa.Schema] = None,
        batch_size: Optional[int] = None,
    ) -> None:
        """Adds columns without rewriting existing data files.

        `transforms` is one of:

        * ``{"name": "sql expression"}`` — computed from existing columns;
        * a function ``batch -> batch/table/dict`` of the columns in `read_columns` (all by
          default), called per fragment;
        * a ``pyarrow.Field``, list of fields or ``pyarrow.Schema`` — all-NULL columns, a
          metadata-only change;
        * a ``pyarrow.Table`` / ``RecordBatchReader`` of precomputed values, one row per live
          row in scan order.

        Each fragment gets one new data file holding the new columns for all its physical rows
        (deleted rows hold NULLs); a ``Merge`` transaction commits the result.
        `reader_schema` is the schema of a reader given as `transforms` (checked, then
        used). A function (or SQL expressions) is called as pylance calls it: per
        fragment, on runs of `batch_size` physical rows (default 1024) with the deleted
        ones left out; `read_columns` may name ``_rowid`` and ``_rowaddr``.
        """
        self._install(_evolution.add_columns(self._view, transforms, read_columns, reader_schema, batch_size))

    def drop_columns(self, columns: List[str]) -> None:
        """Removes columns (metadata only: their field ids are tombstoned in data files)."""
        self._install(_evolution.drop_columns(self._view, columns))

    def alter_columns(self, *alterations: Dict[str, Any]) -> None:
        """Renames columns, changes their nullability or their data type.

        Each alteration is ``{"path": name, "name": new_name, "nullable": bool,
        "data_type": pa.DataType}``. Renames and nullability are metadata only (a ``Project``
        transaction). A new data type rewrites that column only: every fragment gets a new
        data file with the cast values under the same field id, the old file's entry for it is
        tombstoned (a ``Merge`` transaction); other columns are not touched.
        """
        self._install(_evolution.alter_columns(self._view, *alterations))

    # -- maintenance -----------------------------------------------------------------------

    def cleanup_old_versions(
        self,
        older_than: Optional[datetime.timedelta] = None,
        retain_versions: Optional[int] = None,
        *,
        delete_unverified: bool = False,
        error_if_tagged_old_versions: bool = True,
        delete_rate_limit: Optional[int] = None,
        versions: Optional[List[int]] = None,
        delete_concurrency: Optional[int] = None,
    ) -> "CleanupStats":
        """Deletes old manifests and every file only they reference.

        A version is old when it is older than `older_than` and, if `retain_versions` is
        given, not among the `retain_versions` newest; with neither, the cutoff is two weeks
        (pylance's default). The latest version and tagged versions are always kept; files
        that no manifest references and that are younger than a week are kept unless
        `delete_unverified` (they may belong to a commit in progress). Deleting only chosen
        `versions`, rate limits and concurrency settings are not supported.
        """
        _refuse(delete_rate_limit=delete_rate_limit, versions=versions, delete_concurrency=delete_concurrency)
        return _cleanup.cleanup_old_versions(
            self._view.store,
            self._view.uri,
            older_than=older_than,
            retain_versions=retain_versions,
            delete_unverified=delete_unverified,
            error_if_tagged_old_versions=error_if_tagged_old_versions,
        )

    # -- commit API ------------------------------------------------------------------------

    @staticmethod
    def commit(
        base_uri: Union[PathLike, "LanceDataset"],
        operation: Union["LanceOperation.BaseOperation", "Transaction"],
        read_version: Optional[int] = None,
        commit_lock: Any = None,
        storage_options: StorageOptions = None,
        enable_v2_manifest_paths: Optional[bool] = None,
        detached: Optional[bool] = False,
        max_retries: int = 20,
        *,
        commit_message: Optional[str] = None,
        enable_stable_row_ids: Optional[bool] = None,
        namespace_client: Any = None,
        table_id: Optional[List[str]] = None,
        namespace_client_managed_versioning: bool = False,
        base_store_params: Optional[Dict[str, Dict[str, str]]] = None,
        commit_timeout: Optional[datetime.timedelta] = datetime.timedelta(seconds=1800),
    ) -> "LanceDataset":
        """Commits an operation built from fragments written elsewhere (e.g. by
        :func:`lancepy.fragment.write_fragments` in worker tasks), or a :class:`Transaction`
        (its own `read_version`, uuid and properties are used).

        `storage_options` reach a dataset on object storage (commits there use a conditional
        PUT). `commit_message` is stored with the transaction (as pylance); `enable_stable_row_ids`
        gives a dataset this commit creates stable row ids; `base_store_params` go to the
        returned dataset (see :func:`dataset`). `commit_lock` is held around the commit;
        `detached` makes a detached version (see :mod:`lancepy._table.commit`). Namespaces
        raise :class:`~lancepy.exceptions.NotSupportedError`. A commit that
        loses races for the next version is retried up to `max_retries` times, and not
        after `commit_timeout` (a ``timedelta`` or seconds; ``None``: no time limit).
        """
        _refuse(
            namespace_client=namespace_client,
            table_id=table_id,
            namespace_client_managed_versioning=namespace_client_managed_versioning or None,
        )
        if isinstance(base_uri, LanceDataset):
            storage_options = base_uri._view.storage_options if storage_options is None else storage_options
            if base_store_params is None:
                base_store_params = base_uri._view.base_store_params
            base_uri = base_uri.uri
        uri = _uri(base_uri)
        options = normalize_storage_options(storage_options)
        loaded = _write.commit_operation(
            _lancepy.Store(uri, options),
            operation,
            read_version,
            naming="v1" if enable_v2_manifest_paths is False else "v2",
            max_retries=max_retries,
            commit_message=commit_message,
            enable_stable_row_ids=bool(enable_stable_row_ids),
            timeout_s=_timeout_seconds(commit_timeout), commit_lock=commit_lock, detached=bool(detached),
        )
        return _session.attach(LanceDataset(uri, storage_options=options, base_store_params=base_store_params, _loaded=loaded), None, commit_lock)

    @staticmethod
    def commit_batch(dest: Union[PathLike, "LanceDataset"], transactions: Sequence["Transaction"], commit_lock: Any = None,
                     storage_options: StorageOptions = None, enable_v2_manifest_paths: Optional[bool] = None,
                     detached: Optional[bool] = False, max_retries: int = 20, base_store_params: Optional[Dict[str, Dict[str, str]]] = None,
                     commit_timeout: Optional[datetime.timedelta] = datetime.timedelta(seconds=1800)) -> Dict[str, Any]:
        """Commits several ``Append`` transactions as one version (arguments as :meth:`commit`): ``{"dataset", "merged"}``."""
        merged = _write.merge_transactions(transactions)
        ds = LanceDataset.commit(dest, merged, None, commit_lock, storage_options, enable_v2_manifest_paths, detached, max_retries,
                                 base_store_params=base_store_params, commit_timeout=commit_timeout)
        return {"dataset": ds, "merged": merged}


def dataset(
    uri: Optional[PathLike] = None,
    version: Union[int, str, None] = None,
    asof: Any = None,
    block_size: Optional[int] = None,
    commit_lock: Any = None,
    index_cache_size: Optional[int] = None,
    storage_options: StorageOptions = None,
    default_scan_options: Optional[Dict[str, Any]] = None,
    metadata_cache_size_bytes: Optional[int] = None,
    index_cache_size_bytes: Optional[int] = None,
    read_params: Optional[Dict[str, Any]] = None,
    session: Any = None,
    namespace_client: Any = None,
    table_id: Optional[List[str]] = None,
    base_store_params: Optional[Dict[str, Dict[str, str]]] = None,
) -> LanceDataset:
    """Opens a dataset at `version` (a number or a tag name; default: the latest).

    `uri` is a local path, ``file://``, ``memory://``, ``s3://``, ``gs://`` or ``az://`` /
    ``abfss://`` URI; `storage_options` configure the object store (pylance's keys, e.g.
    ``aws_access_key_id``, ``aws_endpoint``, ``allow_http``; see :mod:`lancepy._core.storage`).
    `asof` (a ``datetime``, naive = local time, or an ISO-8601 string) opens the newest
    version committed at or before that time. Opening lists ``_versions/`` once and reads
    one manifest. `base_store_params` (storage options per base path URI, used instead of
    `storage_options` for files under that base) reach a multi-base dataset's other roots.
    `session` (a :class:`lancepy.Session`; default: a new one sized by
    `index_cache_size_bytes` / `metadata_cache_size_bytes`, or the deprecated
    `index_cache_size` at 20 MiB an entry) holds the caches (see :mod:`lancepy.session`);
    `commit_lock` (``version -> context manager``) is held around every commit made through
    this object; `default_scan_options` (scanner arguments) apply to every scan that leaves
    them unset, and ``schema`` is that of such a scan. `block_size`, `read_params` and
    namespaces raise :class:`~lancepy.exceptions.NotSupportedError`.
    """
    return _session.open_dataset(LanceDataset, **_args(locals()))


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
    auto_cleanup_options: Optional[AutoCleanupConfig] = None,
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
) -> LanceDataset:
    """Writes `data_obj` as a new version of the dataset at `uri`.

    Multi-base datasets: `initial_bases` (mode ``"create"`` only) registers other roots
    (:class:`DatasetBasePath`; ids 1, 2, ... unless given); `target_bases` (names or paths
    of registered bases) puts the new data files there instead of under `uri`, in turn, one
    file each (their deletion files still go under `uri`); `target_all_bases` rotates over
    every registered base, after the dataset root when true. `base_store_params` (storage
    options per base path URI) are used instead of `storage_options` for files under those
    bases, and kept by the returned dataset.

    `mode`: ``"create"`` (the dataset must not exist), ``"append"`` (creates it if needed)
    or ``"overwrite"`` (replaces data and schema; earlier versions stay readable).
    ``~`` in a local path is the home directory. ``memory://`` datasets live in one
    process-wide memory store (they can be reopened by name, unlike pylance's, whose every
    call opens a new empty store); ``memory://`` with no name is a new dataset on each call,
    and ``mode="create"`` at a ``memory://`` URI replaces the dataset there, as pylance's
    fresh store does. A declared `schema` is applied to every kind of input: batches are
    cast to it with Arrow's safe cast, and a lossy or impossible cast raises
    :class:`~lancepy.exceptions.SchemaMismatchError` (see :mod:`lancepy._core.conform`).
    `storage_options` configure an object store (see :func:`dataset`). New datasets are
    written with ``data_storage_version`` 2.2 (pylance 14's default) unless told otherwise.
    `max_rows_per_group`: rows per batch of legacy (``"legacy"`` = ``"0.1"``) files (2.x files
    have no row groups). `use_legacy_format` is deprecated. `enable_stable_row_ids` makes a new dataset keep each row's id
    through compaction and updates (it has no effect on an existing dataset, as in pylance).
    `progress` (pylance's ``FragmentWriteProgress``: ``begin(fragment)`` before a fragment's
    rows are written, ``complete(fragment)`` after) hears about every fragment. Blob
    columns (``lance-encoding:blob`` binary, or pylance's ``blob_field`` / ``blob_array``)
    are written as pylance writes them; values given as URIs are copied in with
    `external_blob_mode` ``"ingest"``, stored as absolute URIs with
    `allow_external_blob_outside_bases`, and refused otherwise;
    `blob_pack_file_size_threshold` caps the shared blob pack files (default 1 GiB).
    `commit_message` and `transaction_properties` are stored in the transaction;
    `auto_cleanup_options` configures automatic cleanup of a new dataset; `max_page_bytes`
    and `data_cache_bytes` set the page size; `commit_lock` is held around the commit.
    Options lancepy does not build (namespaces, sessions) raise
    :class:`~lancepy.exceptions.NotSupportedError` when given.
    """
    if isinstance(uri, LanceDataset):
        uri = uri.uri
    args = _args(locals())
    io = _lancepy.IoTracker()  # (the write counts for the dataset returned, as in pylance)
    with io:
        u, options, store_params, loaded = _write.write_dataset(**args)
    return _session.attach(LanceDataset(u, storage_options=options, base_store_params=store_params, _loaded=loaded, _io=io),
                           None, commit_lock)
