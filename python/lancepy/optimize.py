"""Optimization: :class:`DatasetOptimizer` (``ds.optimize``): compaction of small fragments
(planning, rewriting, index remapping) and index optimization, with their metrics; pylance's
``lance.optimize`` names for compaction in steps (:class:`Compaction`: a plan of
:class:`CompactionTask` s run anywhere, their :class:`RewriteResult` s committed together)."""

from __future__ import annotations

import base64
import itertools
import json
import time
import uuid as _uuid
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple, TypedDict

import pyarrow as pa
import pyarrow.compute as pc

from lancepy import _lancepy
from lancepy._core.args import _refuse
from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy._ops import extsort as _extsort
from lancepy._ops import indices as _index_ops
from lancepy._ops import json_index as _json_index
from lancepy._table import commit as _commit
from lancepy._table import lineage
from lancepy._table.commit import AutoCleanupConfig, _auto_cleanup_config, commit_on
from lancepy._table.fragments import FragmentMetadata
from lancepy.exceptions import (
    CommitConflictError,
    InternalError,
    InvalidArgumentError,
    NotSupportedError,
    UnsupportedError,
)
from lancepy.fragment import DEFAULT_MAX_BYTES_PER_FILE, _write, normalize_storage_version

if TYPE_CHECKING:  # pragma: no cover
    from lancepy.dataset import LanceDataset


@dataclass
class CompactionMetrics:
    """What :meth:`DatasetOptimizer.compact_files` did."""

    fragments_removed: int = 0
    fragments_added: int = 0
    files_removed: int = 0
    files_added: int = 0


def _capped_groups(groups: List[List[FragmentMetadata]], rows: Dict[int, Any], max_fragments: Optional[int],
                   max_rows: Optional[int], max_bytes: Optional[int]) -> List[List[FragmentMetadata]]:
    """The first groups (in fragment order) that stay within the caps on source fragments,
    live rows and data file bytes of one compaction run (pylance's rule: a group is taken
    until the next would pass a cap)."""
    out: List[List[FragmentMetadata]] = []
    used = [0, 0, 0]
    for g in groups:
        cost = [
            len(g),
            sum(rows[f.id][1] for f in g),
            sum(d.file_size_bytes or 0 for f in g for d in f.files),
        ]
        if any(cap is not None and u + c > cap for cap, u, c in zip((max_fragments, max_rows, max_bytes), used, cost)):
            break
        out.append(g)
        used = [u + c for u, c in zip(used, cost)]
    return out


class _RewriteSource:
    """The live rows of some fragments, streamed for rewriting (compaction): batches of at
    most `batch_rows` rows and, for blob columns, about `blob_bytes` bytes of values (read
    from their descriptions batch by batch), so memory stays bounded by a batch. Row ids
    (`stable`) and row addresses (`addresses`) are collected on the side, not written."""

    def __init__(self, ds: LanceDataset, fragment_ids: List[int], stable: bool, with_addresses: bool,
                 row_ids: List[int], addresses: List[Any], batch_rows: int = 65536, blob_bytes: int = 64 << 20) -> None:
        self._ds, self._ids, self._stable = ds, fragment_ids, stable
        self._blobs = ds._view.loaded.blob_columns(ds._schema.names)
        self._with_addresses = with_addresses or bool(self._blobs)
        self._keep_addresses = with_addresses
        self._row_ids, self._addresses = row_ids, addresses
        self._batch_rows, self._blob_bytes = batch_rows, blob_bytes

    def _batches(self) -> Iterator[pa.RecordBatch]:
        s = self._ds._view.snapshot
        stream = s.scan_stream(
            None,
            fragment_ids=self._ids,
            batch_rows=self._batch_rows,
            with_row_id=self._stable,
            with_row_address=self._with_addresses,
        )
        while True:
            b = stream.next_batch()
            if b is None:
                return
            t = pa.table(b)
            if self._stable:
                self._row_ids.extend(t.column(ROW_ID).to_pylist())
                t = t.drop_columns([ROW_ID])
            if not self._with_addresses:
                yield from t.to_batches()
                continue
            if self._keep_addresses:
                self._addresses.append(t.column(ROW_ADDRESS).combine_chunks())
            yield from self._with_blob_values(t)

    def _with_blob_values(self, t: pa.Table) -> Iterator[pa.RecordBatch]:
        """`t`'s rows with blob descriptions replaced by values, in slices of about
        `blob_bytes` bytes of values; the row address column dropped."""
        sizes = [0] * t.num_rows
        for name in self._blobs:
            for i, n in enumerate(pc.struct_field(t.column(name), "size").to_pylist()):
                sizes[i] += n or 0
        start = 0
        s = self._ds._view.snapshot
        while start < t.num_rows:
            stop, total = start + 1, sizes[start]
            while stop < t.num_rows and total + sizes[stop] <= self._blob_bytes:
                total += sizes[stop]
                stop += 1
            piece = t.slice(start, stop - start)
            addresses = piece.column(ROW_ADDRESS).combine_chunks()
            for name in self._blobs:
                i = piece.schema.get_field_index(name)
                values = pa.table(s.blob_values(name, addresses, piece.column(i).combine_chunks())).column(0)
                piece = piece.set_column(i, pa.field(name, pa.large_binary(), piece.schema.field(i).nullable), values)
            yield from piece.drop_columns([ROW_ADDRESS]).to_batches()
            start = stop

    def reader(self) -> pa.RecordBatchReader:
        batches = self._batches()
        first = next(batches, None)
        if first is None:
            empty = pa.table(self._ds._view.snapshot.scan(None, fragment_ids=self._ids, limit=0, batch_rows=1))
            for name in self._blobs:
                i = empty.schema.get_field_index(name)
                empty = empty.set_column(i, pa.field(name, pa.large_binary()), pa.array([], pa.large_binary()))
            return empty.to_reader()
        return pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], batches))


def _segments_to_merge(
    ds: LanceDataset, segs: List[Dict[str, Any]], num_indices_to_merge: Optional[int], vector: bool
) -> Tuple[List[Dict[str, Any]], int]:
    """The segments of one index (manifest order) that ``optimize_indices`` merges with the
    new rows, as pylance 14 picks them: the last ``num_indices_to_merge`` (default: all of a
    vector index's, the last one of a scalar index's; ``0``: none, a delta segment). On a
    dataset with stable row ids a scalar index's older segments covering a fragment with
    deleted rows are merged too (their postings of rows an update moved go stale). Returns
    those segments and how many of them are the trailing ones (with no new rows, pylance
    merges only when that is more than one)."""
    count = (len(segs) if vector else 1) if num_indices_to_merge is None else min(num_indices_to_merge, len(segs))
    tail = len(segs) - count
    if count == 0 or vector or not ds._view.loaded.stable_row_ids:
        return segs[tail:], count
    deleted = {f.fragment_id for f in ds.get_fragments() if f.deletion_file() is not None}
    return [e for i, e in enumerate(segs) if i >= tail or deleted & set(e["fragment_ids"])], count


class DatasetOptimizer:
    """``ds.optimize``: compaction."""

    def __init__(self, ds: LanceDataset) -> None:
        self._ds = ds

    def optimize_indices(
        self,
        *,
        num_indices_to_merge: Optional[int] = None,
        index_names: Optional[List[str]] = None,
        retrain: bool = False,
    ) -> None:
        """Adds the rows of fragments an index does not cover yet (appended since it was
        built) to the index, without retraining: each row joins its nearest partition
        (and is PQ-encoded with the index's codebook). Commits one ``CreateIndex`` for all
        indices changed; nothing if every index is up to date.

        ``num_indices_to_merge``: ``0`` writes the new rows as a delta segment beside the
        index; ``k`` merges the index's last ``k`` segments and the new rows into one segment
        (the others stay as they are). The default is pylance's: all of a vector index's
        segments, the last one of a scalar index's (on a dataset with stable row ids, also an
        older one covering a fragment with deleted rows). With no new rows, nothing is
        rewritten unless two or more trailing segments are merged. ``index_names`` limits the
        work to those indices (default: all). ``retrain=True`` rebuilds each index from the current data with its type,
        metric, partition and sub-vector counts. IVF_FLAT, IVF_PQ, BTREE, BITMAP and INVERTED indices (a
        BTREE segment's pages / a BITMAP segment's bitmaps are rebuilt from its rows and the new ones; ``retrain`` rebuilds it
        from every row): others raise :class:`~lancepy.exceptions.NotSupportedError`.
        """
        from lancepy._ops import btree as _btree
        from lancepy._ops import ivf_build as _ivf_build
        from lancepy.exceptions import IndexNotFoundError

        ds = self._ds
        if num_indices_to_merge is not None and (not isinstance(num_indices_to_merge, int) or num_indices_to_merge < 0):
            raise InvalidArgumentError(f"num_indices_to_merge must be a non-negative integer, got {num_indices_to_merge!r}")
        entries = ds._index_entries()
        by_name: Dict[str, List[Dict[str, Any]]] = {}
        for e in entries:
            by_name.setdefault(e["name"], []).append(e)
        names = list(by_name) if index_names is None else list(index_names)
        for n in names:
            if n not in by_name:
                raise IndexNotFoundError(f"index {n!r} does not exist in version {ds.version} of {ds._view.uri}")
            kind = _scalar_kind(ds._view, by_name[n][0])
            if kind not in ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "BTree", "Bitmap", "LabelList", "Inverted"):
                raise NotSupportedError(f"optimize_indices: lancepy cannot add rows to the {kind} index {n!r} (index_names= picks others)")
        paths = {v: k for k, v in ds._field_ids_by_path().items()}
        raw = {_commit.uuid_text(e["uuid"]): e for e in json.loads(_lancepy.index_section_to_json(ds._view.loaded.index_section))["indices"]} if entries else {}
        live = ds.get_fragments()
        new_entries: List[Dict[str, Any]] = []
        removed: List[Dict[str, Any]] = []
        written: List[str] = []
        try:
            for n in names:
                segs = by_name[n]
                column: Any = paths[segs[0]["fields"][0]]
                kind = _scalar_kind(ds._view, segs[0])
                if _json_index.details_of(segs[0]) is not None:  # (its keys: the values at its path)
                    column = _json_index.key_of(ds._view, column, segs)
                covered = set().union(*(set(e["fragment_ids"]) for e in segs))
                fresh = [f for f in live if f.fragment_id not in covered]
                btree = kind in ("BTree", "Bitmap", "LabelList", "Inverted")  # (scalar: rows, no model)
                if retrain and btree:
                    fresh, covered = live, set()  # (a BTREE index has no model: rebuilt from all rows)
                elif retrain:
                    from lancepy._ops import ivf as _ivf

                    idx = _ivf.load_index(ds._view.uri, segs[0]["uuid"], ds._view.storage_options, ds.session()._index)
                    dim = idx.centroids.shape[1]
                    params = _ivf_build.IvfParams(
                        kind=idx.kind, metric=idx.metric, num_partitions=idx.num_partitions,
                        num_sub_vectors=idx.num_sub_vectors or None, sample_rate=_ivf_build.DEFAULT_SAMPLE_RATE,
                        max_iters=_ivf_build.DEFAULT_MAX_ITERS, ivf_centroids=None, pq_codebook=None, filter_nan=True, seed=None,
                        value_type=_ivf_build._writable_type(idx.value_type), num_bits=idx.nbits,
                    )
                    entry = _ivf_build.build(ds._view, column, segs[0]["fields"][0], dim, params, None, None, n, None, ds._view.storage_options)
                    written += [f"_indices/{_commit.uuid_text(entry['uuid'])}/{f['path']}" for f in entry["files"]]
                    new_entries.append(entry)
                    removed += [raw[e["uuid"]] for e in segs]
                    continue
                merging, trailing = ([], 0) if retrain and btree else _segments_to_merge(ds, segs, num_indices_to_merge, vector=not btree)
                if not fresh and (trailing <= 1 or retrain or (not btree and num_indices_to_merge is None)):
                    # (pylance rewrites no lone segment; a vector index's default pass with nothing
                    # new may rebalance its partitions in pylance, which lancepy does not do)
                    continue
                merge = bool(merging)
                if merge:
                    covered = set().union(*(set(e["fragment_ids"]) for e in merging))
                    segs = merging
                if btree:
                    if kind == "Inverted":
                        from lancepy._ops import inverted as _inverted

                        uid, files = _inverted.extend(ds._view, column, segs, [f.fragment_id for f in fresh], merge, bool(retrain))
                    elif kind in ("Bitmap", "LabelList"):
                        from lancepy._ops import bitmap as _bitmap

                        _bitmap.check_addresses(ds._view)
                        # (merged key by key; in memory when a segment's keys are in another order)
                        done = _extsort.merge_bitmap(ds._view, column, segs, [f.fragment_id for f in fresh]) if merge else None
                        uid, files = done or _bitmap.extend(ds._view, column, segs, [f.fragment_id for f in fresh], merge)
                    elif merge and not all(_btree.holds_addresses(ds._view, e) for e in by_name[n]):  # (any segment: a merged one would mix domains)
                        raise NotSupportedError(
                            f"optimize_indices: the BTREE index {n!r} holds stable row ids (an older pylance's); "
                            "retrain=True rebuilds it"
                        )
                    else:
                        # (merged a few pages at a time; in memory when a segment cannot be streamed)
                        done = _extsort.merge_btree(ds._view, column, segs, [f.fragment_id for f in fresh]) if merge else None
                        uid, files = done or _btree.extend(ds._view, column, segs, [f.fragment_id for f in fresh], merge)
                else:
                    uid, files = _ivf_build.extend(ds._view, column, segs, [f.fragment_id for f in fresh], merge)
                written += [f"_indices/{uid}/{f['path']}" for f in files]
                base = dict(raw[segs[-1]["uuid"]])
                ids = sorted(({f.fragment_id for f in live} & covered if merge else set()) | {f.fragment_id for f in fresh})
                if _index_ops._index_type(ds._view, segs[0]) == "BTree":  # (a JSON index's stays 0)
                    base["index_version"] = _btree.index_version(ds._view)
                base.update({
                    "uuid": {"uuid": list(_uuid.UUID(uid).bytes)},
                    "fragment_bitmap": list(_lancepy.fragment_bitmap(ids)),
                    # (a merged segment keeps the oldest version its segments indexed, as pylance's)
                    "dataset_version": min(e["dataset_version"] for e in segs) if merge else ds.version,
                    "files": files,
                    "created_at": int(time.time() * 1000),
                })
                new_entries.append(base)
                if merge or retrain:
                    removed += [raw[e["uuid"]] for e in segs]
        except BaseException:
            ds._view.store.delete(written)
            raise
        if new_entries:
            ds._install(commit_on(ds._view, "CreateIndex", {"new_indices": new_entries, "removed_indices": removed}, written))

    def enable_auto_cleanup(self, auto_cleanup_config: AutoCleanupConfig) -> None:
        """Turns on automatic cleanup (pylance's table config): from now on every
        ``auto_cleanup_config["interval"]``-th version's commit removes versions older than
        ``auto_cleanup_config["older_than_seconds"]`` (the two newest and tagged versions
        stay), whichever library commits."""
        self._ds.update_config(_auto_cleanup_config(auto_cleanup_config))

    def disable_auto_cleanup(self) -> None:
        """Turns automatic cleanup off (removes its config keys)."""
        self._ds.delete_config_keys([_commit.AUTO_CLEANUP_INTERVAL, _commit.AUTO_CLEANUP_OLDER_THAN])

    def compact_files(
        self,
        *,
        target_rows_per_fragment: Optional[int] = None,
        max_rows_per_group: Optional[int] = None,
        max_bytes_per_file: Optional[int] = None,
        materialize_deletions: Optional[bool] = None,
        materialize_deletions_threshold: Optional[float] = None,
        defer_index_remap: Optional[bool] = None,
        num_threads: Optional[int] = None,
        batch_size: Optional[int] = None,
        compaction_mode: Optional[str] = None,
        binary_copy_read_batch_bytes: Optional[int] = None,
        max_source_fragments: Optional[int] = None,
        max_source_rows: Optional[int] = None,
        max_source_bytes: Optional[int] = None,
        excluded_fragment_ids: Optional[List[int]] = None,
        data_storage_version: Optional[str] = None,
    ) -> CompactionMetrics:
        """Rewrites runs of small fragments (and fragments with many deletions) into
        fragments of up to `target_rows_per_fragment` live rows (default 1 Mi), dropping
        deleted rows when more than `materialize_deletions_threshold` (default 0.1) of a
        fragment is deleted. Commits a ``ReserveFragments`` (ids for the new fragments) and
        a ``Rewrite``, as pylance does; row addresses change, data does not.

        As in pylance: `max_bytes_per_file` is a soft cap on the new files' size (checked at
        each batch of `batch_size` rows against the bytes written out); `excluded_fragment_ids`
        stay as they are and split runs; `max_source_fragments` / `max_source_rows` (live) /
        `max_source_bytes` (data files) cap one run: groups are taken in fragment order
        until the next would pass a cap; `data_storage_version` sets the new files' version
        (of the same family: 2.x). `max_rows_per_group`, `num_threads` and
        `binary_copy_read_batch_bytes` are tuning knobs and ignored; `compaction_mode`
        ``"reencode"`` is what lancepy does. Deferred index remapping and binary copies are
        not supported. :class:`Compaction` splits the same work into a plan, tasks that run
        anywhere, and a commit.
        """
        options = {k: v for k, v in locals().items() if k != "self" and v is not None}
        return Compaction.execute(self._ds, options)


#: pylance's compaction options (:class:`CompactionOptions`), each ``None`` when not given.
_OPTION_NAMES = (
    "target_rows_per_fragment", "max_rows_per_group", "max_bytes_per_file", "materialize_deletions",
    "materialize_deletions_threshold", "num_threads", "batch_size", "io_buffer_size", "compaction_mode",
    "binary_copy_read_batch_bytes", "defer_index_remap", "max_source_fragments", "max_source_rows",
    "max_source_bytes", "excluded_fragment_ids", "data_storage_version",
)


class CompactionOptions(TypedDict, total=False):
    """The options of a compaction (pylance's ``lance.optimize.CompactionOptions``): the
    keyword arguments of :meth:`DatasetOptimizer.compact_files`, which documents them, plus
    ``io_buffer_size`` (a tuning knob, ignored)."""

    target_rows_per_fragment: Optional[int]
    max_rows_per_group: Optional[int]
    max_bytes_per_file: Optional[int]
    materialize_deletions: Optional[bool]
    materialize_deletions_threshold: Optional[float]
    num_threads: Optional[int]
    batch_size: Optional[int]
    io_buffer_size: Optional[int]
    compaction_mode: Optional[str]
    binary_copy_read_batch_bytes: Optional[int]
    defer_index_remap: Optional[bool]
    max_source_fragments: Optional[int]
    max_source_rows: Optional[int]
    max_source_bytes: Optional[int]
    excluded_fragment_ids: Optional[List[int]]
    data_storage_version: Optional[str]


def _resolve_options(ds: LanceDataset, options: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """`options` checked, with every default filled in and the output file version fixed
    (a JSON-able dict: it travels inside a :class:`CompactionTask`)."""
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(f"compaction options must be a dict, got {type(options).__name__}")
    for key in options:
        if key not in _OPTION_NAMES:
            raise InvalidArgumentError(f"Invalid compaction option: {key}")
    o: Dict[str, Any] = {name: options.get(name) for name in _OPTION_NAMES}
    _refuse(
        defer_index_remap=o["defer_index_remap"] or None,
        compaction_mode=None if o["compaction_mode"] in (None, "reencode") else o["compaction_mode"],
    )
    for name in ("target_rows_per_fragment", "max_bytes_per_file", "max_source_fragments", "max_source_rows",
                 "max_source_bytes"):
        cap = o[name]
        if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap <= 0):
            raise InvalidArgumentError(f"{name} must be a positive int, got {cap!r}")
    out_version = ds.data_storage_version
    if o["data_storage_version"] is not None:
        out_version = normalize_storage_version(o["data_storage_version"])
        blobs = ds._view.loaded.blob_columns(ds._schema.names)

        def v2_2(v: str) -> bool:
            return tuple(int(x) for x in v.split(".")[:2]) >= (2, 2)

        if blobs and v2_2(out_version) != v2_2(ds.data_storage_version):
            raise UnsupportedError(
                f"compacting blob column(s) {blobs} of {ds.data_storage_version} files into {out_version} files "
                "(blob columns are stored differently before and from 2.2)"
            )
    o["data_storage_version"] = out_version
    o["excluded_fragment_ids"] = sorted({int(i) for i in o["excluded_fragment_ids"] or []})
    if o["target_rows_per_fragment"] is None:
        o["target_rows_per_fragment"] = 1024 * 1024
    if o["materialize_deletions"] is None:
        o["materialize_deletions"] = True
    if o["materialize_deletions_threshold"] is None:
        o["materialize_deletions_threshold"] = 0.1
    return o


def _plan_groups(ds: LanceDataset, o: Dict[str, Any]) -> List[List[FragmentMetadata]]:
    """The fragments (of `ds`'s version) to rewrite together, one list per new run."""
    target, materialize = o["target_rows_per_fragment"], o["materialize_deletions"]
    excluded = set(o["excluded_fragment_ids"])
    rows = ds._snapshot_rows()
    frags = ds._view.loaded.fragments

    def too_many_deletions(f: FragmentMetadata) -> bool:
        phys, live = rows[f.id]
        return materialize and phys > 0 and (phys - live) / phys > o["materialize_deletions_threshold"]

    def candidate(f: FragmentMetadata) -> bool:
        return rows[f.id][0] < target or too_many_deletions(f)

    # Fragments covered by different indices are never merged (as in pylance): a run
    # ends where the set of index segments covering its fragments changes.
    covering: Dict[int, List[str]] = {}
    for e in ds._index_entries():
        for fid in e["fragment_ids"]:
            covering.setdefault(fid, []).append(str(e["uuid"]))

    def indices_of(f: FragmentMetadata) -> List[str]:
        return sorted(covering.get(f.id, []))

    groups: List[List[FragmentMetadata]] = []
    run: List[FragmentMetadata] = []
    for f in [*frags, None]:
        if f is not None and f.id not in excluded and candidate(f):
            if not run or indices_of(run[0]) == indices_of(f):
                run.append(f)
                continue
            pending = [f]
        else:
            pending = []
        # A run is worth rewriting if it merges fragments or drops enough deleted rows.
        if len(run) > 1 or (run and too_many_deletions(run[0])):
            groups += _split_run(run, [rows[g.id][1] for g in run], target)
        run = pending
    groups = [g for g in groups if len(g) > 1 or too_many_deletions(g[0])]
    return _capped_groups(groups, rows, o["max_source_fragments"], o["max_source_rows"], o["max_source_bytes"])


def _split_run(run: List[FragmentMetadata], live: List[int], target: int) -> List[List[FragmentMetadata]]:
    """A run of fragments split as pylance splits it: each group takes fragments until it
    holds at least `target` live rows, and is kept only if the fragments after it hold at
    least `target` too; otherwise it extends to the end of the run."""
    groups = []
    start = 0
    while True:
        stop, size = start, 0
        while size < target and stop < len(run):
            size += live[stop]
            stop += 1
        if sum(live[stop:]) >= target:
            groups.append(run[start:stop])
            start = stop
        else:
            groups.append(run[start:])
            return groups


def _remappable_indices(ds: LanceDataset, fragment_ids: Any) -> List[Dict[str, Any]]:
    """The indices whose row addresses a rewrite of `fragment_ids` moves: IVF and scalar
    indices covering one of them (with stable row ids IVF indices hold row ids, which do
    not move: they just stop covering the rewritten fragments; BTREE ones hold addresses,
    as pylance 14's; JSON-path ones are not remapped there)."""
    from lancepy._ops import btree as _btree

    stable = ds._view.loaded.stable_row_ids
    ids = set(fragment_ids)
    return [
        e for e in ds._index_entries()
        if set(e["fragment_ids"]) & ids
        and (_btree.holds_addresses(ds._view, e) if _index_ops._index_type(ds._view, e) == "BTree"
             else _scalar_kind(ds._view, e) in ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "BTree", "Bitmap", "LabelList", "Inverted")
             and not stable)
    ]


def _rewrite(
    ds: LanceDataset, fragments: List[FragmentMetadata], o: Dict[str, Any], file_tag: Optional[str] = None
) -> RewriteResult:
    """Writes the live rows of `fragments` (of `ds`'s version) into new fragments, without
    committing them; their ids are 0 until :func:`_commit_rewrites` reserves some."""
    import numpy as np

    stable = ds._view.loaded.stable_row_ids
    ids = [f.id for f in fragments]
    remap = bool(_remappable_indices(ds, ids))
    row_ids: List[int] = []
    addresses: List[Any] = []
    data = _RewriteSource(ds, ids, stable, remap, row_ids, addresses, batch_rows=o.get("batch_size") or 65536).reader()
    # As pylance: as many new fragments as whole targets fit in the live rows (at least
    # one), of equal size.
    live = sum(ds._snapshot_rows()[i][1] for i in ids)
    per_file = max(1, -(-live // max(1, live // o["target_rows_per_fragment"])))
    made = _write(ds._view.uri, data, ds._view.loaded.field_entries, ds._view.loaded.schema_metadata,
                  per_file, o["data_storage_version"],
                  o["max_bytes_per_file"] or DEFAULT_MAX_BYTES_PER_FILE, storage_options=ds._view.storage_options,
                  **({} if file_tag is None else {"file_tag": file_tag}))
    new = [m._manifest_json() for m in made]
    start = 0
    if stable:
        # (the rows keep their created / last-updated versions, in their new order)
        versions = {key: lineage.live_versions(ds._view, fragments, key) for key in lineage.COLUMNS.values()}
    for nf in new:
        nf["id"] = 0
        if stable:
            n = nf["physical_rows"]
            nf["row_id_sequence"] = {"InlineRowIds": lineage.inline_text(_lancepy.encode_row_ids(row_ids[start : start + n]))}
            for key, v in versions.items():
                lineage.set_versions(nf, key, v[start : start + n])
            start += n
    old_addresses = None
    if remap:
        old_addresses = (pa.concat_arrays(addresses) if addresses else pa.array([], pa.uint64())).to_numpy()
        old_addresses = np.asarray(old_addresses, dtype=np.uint64)
    metrics = CompactionMetrics(
        fragments_removed=len(fragments),
        fragments_added=len(new),
        # (deletion files count, as in pylance)
        files_removed=sum(len(f.files) + (f.deletion_file is not None) for f in fragments),
        files_added=sum(len(nf["files"]) for nf in new),
    )
    return RewriteResult(
        ds.version, metrics, [FragmentMetadata._from_dict(f._manifest_json()) for f in fragments],
        [FragmentMetadata._from_dict(nf) for nf in new], old_addresses,
    )


def _written(result: RewriteResult) -> List[str]:
    return [f"data/{d['path']}" for nf in result.new_fragments for d in nf._manifest_json()["files"]]


def _commit_rewrites(ds: LanceDataset, results: List[RewriteResult]) -> CompactionMetrics:
    """Commits rewrites made from one version: a ``ReserveFragments`` giving the new
    fragments their ids, then one ``Rewrite`` (with the remapped indices) checked against
    what was committed since that version. The rewrites' files are deleted if it fails."""
    metrics = CompactionMetrics()
    if not results:
        return metrics
    for r in results:
        if not isinstance(r, RewriteResult):
            raise InvalidArgumentError(f"Compaction.commit takes RewriteResults, got {type(r).__name__}")
    read_version = results[0].read_version
    if any(r.read_version != read_version for r in results):
        raise InvalidArgumentError(
            f"the rewrites were made from different versions {sorted({r.read_version for r in results})}"
        )
    groups = [
        {"old_fragments": [f._manifest_json() for f in r.original_fragments],
         "new_fragments": [f._manifest_json() for f in r.new_fragments]}
        for r in results
    ]
    written = [p for r in results for p in _written(r)]
    try:
        compacted = {f.get("id", 0) for g in groups for f in g["old_fragments"]}
        remap = _remappable_indices(ds, compacted)
        # (the indices as the compaction read them: the reservation below may land on top of
        # concurrent commits that replaced them, which the Rewrite's commit then reports)
        section = ds._view.loaded.index_section
        covered = {fid for e in remap for fid in e["fragment_ids"]}
        for r in results:
            if r._old_addresses is None and {f.id for f in r.original_fragments} & covered:
                raise CommitConflictError(
                    "an index was built on the compacted fragments after the compaction tasks ran: run them again",
                    retryable=False,
                )
        n_new = sum(len(g["new_fragments"]) for g in groups)
        if n_new:
            ds._install(commit_on(ds._view, "ReserveFragments", {"num_fragments": n_new}))
            next_id = int(ds._view.loaded.max_fragment_id or 0) - n_new + 1
            for g in groups:
                for nf in g["new_fragments"]:
                    nf["id"] = next_id
                    next_id += 1
        body: Dict[str, Any] = {
            "old_fragments": [f for g in groups for f in g["old_fragments"]],
            "new_fragments": [f for g in groups for f in g["new_fragments"]],
            "groups": groups,
        }
        if remap:
            # Only the groups with indexed rows move rows of an index.
            moved = [(g, r._old_addresses) for g, r in zip(groups, results) if r._old_addresses is not None]
            body["rewritten_indices"] = _remap_indices(ds, section, remap, groups, moved, written)
    except BaseException:
        ds._view.store.delete(written)
        raise
    ds._install(commit_on(ds._view, "Rewrite", body, written, read_version=read_version))
    for r in results:
        for name in ("fragments_removed", "fragments_added", "files_removed", "files_added"):
            setattr(metrics, name, getattr(metrics, name) + getattr(r.metrics, name))
    return metrics


def _remap_indices(
    ds: LanceDataset, section: bytes, entries: List[Dict[str, Any]], groups: List[Dict[str, Any]], moved: List[Any],
    written: List[str],
) -> List[Dict[str, Any]]:
    """Writes a remapped copy of each index in `entries` (entries of the index section
    `section`; the new fragments have their ids); returns the Rewrite's ``rewritten_indices``. `moved` pairs each group holding
    indexed rows with the old addresses of the rows it wrote, in order. Index files written
    are added to `written` (deleted if the compaction fails)."""
    import numpy as np

    from lancepy._ops import btree as _btree
    from lancepy._ops import ivf_build as _ivf_build

    details = {_commit.uuid_text(e["uuid"]): e for e in json.loads(_lancepy.index_section_to_json(section))["indices"]}
    new_addresses = [
        (np.uint64(nf["id"]) << np.uint64(32)) + np.arange(nf["physical_rows"], dtype=np.uint64)
        for g, _ in moved for nf in g["new_fragments"]
    ]
    old = np.concatenate([a for _, a in moved] or [np.empty(0, np.uint64)]).astype(np.uint64)
    new = np.concatenate(new_addresses) if new_addresses else np.empty(0, np.uint64)
    if len(old) != len(new):
        raise InternalError(f"compaction moved {len(old)} rows into fragments of {len(new)} rows")
    order = np.argsort(old, kind="stable")
    old, new = old[order], new[order]
    out = []
    for e in entries:
        covered = set(e["fragment_ids"])
        # Groups mixing covered and uncovered fragments: their rows leave the index (the new
        # fragment is not covered, so it is searched exactly).
        dropped = [
            f.get("id", 0) for g in groups for f in g["old_fragments"]
            if f.get("id", 0) in covered and not {o.get("id", 0) for o in g["old_fragments"]} <= covered
        ]
        compacted = [f.get("id", 0) for g in groups for f in g["old_fragments"]]
        from lancepy._ops import bitmap as _bitmap
        from lancepy._ops import inverted as _inverted

        remap_segment = {"BTree": _btree.remap, "Bitmap": _bitmap.remap, "LabelList": _bitmap.remap,
                         "Inverted": _inverted.remap}.get(_scalar_kind(ds._view, e), _ivf_build.remap)
        uid, files = remap_segment(ds._view.uri, ds._view.storage_options, e, old, new, compacted, dropped)
        written += [f"_indices/{uid}/{f['path']}" for f in files]
        raw = details[e["uuid"]]
        out.append({
            "old_id": raw["uuid"],
            "new_id": {"uuid": list(_uuid.UUID(uid).bytes)},
            "new_index_details": raw.get("index_details"),
            "new_index_version": raw.get("index_version") or 0,
        })
    return out


def _scalar_kind(view: Any, entry: Dict[str, Any]) -> str:
    """An index's type as :func:`lancepy._ops.indices._index_type` names it, but a JSON-path
    index's target type (``BTree``, ``Bitmap``) for it: what its segments are built, merged
    and remapped as."""
    details = _json_index.details_of(entry)
    if details is not None:
        return details.target_kind or "Json"
    return _index_ops._index_type(view, entry)


def _fragments_repr(fragments: List[FragmentMetadata]) -> str:
    return "[" + ", ".join(repr(f) for f in fragments) + "]"


class _JsonForm:
    """A value with a JSON form (``json()`` / ``from_json``): pickled as that JSON, equal to
    another of its class with the same JSON, not hashable (it is mutable)."""

    def json(self) -> str:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def __reduce__(self) -> Any:
        return (type(self).from_json, (self.json(),))  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.json() == other.json()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]


class RewriteResult(_JsonForm):
    """What one :class:`CompactionTask` wrote (pylance's ``lance.optimize.RewriteResult``):
    the new fragments (ids assigned at commit) replacing `original_fragments` of version
    `read_version`, and the metrics. Picklable and JSON-able (:meth:`json` /
    :meth:`from_json`), so it travels from the worker that ran the task to the process that
    commits with :meth:`Compaction.commit`. With an index to remap it also carries the old
    row addresses of the rows written (lancepy's layout, not pylance's)."""

    def __init__(self, read_version: int, metrics: CompactionMetrics, original_fragments: List[FragmentMetadata],
                 new_fragments: List[FragmentMetadata], old_addresses: Any = None) -> None:
        self.read_version = int(read_version)
        self.metrics = metrics
        self.original_fragments = list(original_fragments)
        self.new_fragments = list(new_fragments)
        self._old_addresses = old_addresses

    @property
    def old_fragments(self) -> List[FragmentMetadata]:
        """The fragments replaced (:attr:`original_fragments`)."""
        return self.original_fragments

    def json(self) -> str:
        addresses = None
        if self._old_addresses is not None:
            addresses = base64.b64encode(self._old_addresses.astype("<u8").tobytes()).decode()
        return json.dumps({
            "metrics": asdict(self.metrics),
            "new_fragments": [f._manifest_json() for f in self.new_fragments],
            "read_version": self.read_version,
            "original_fragments": [f._manifest_json() for f in self.original_fragments],
            "row_addrs": addresses,
        })

    @staticmethod
    def from_json(text: str) -> RewriteResult:
        import numpy as np

        try:
            d = json.loads(text)
            addresses = d.get("row_addrs")
            if addresses is not None and not isinstance(addresses, str):
                raise InvalidArgumentError("row_addrs of another library's RewriteResult cannot be read by lancepy")
            return RewriteResult(
                d["read_version"], CompactionMetrics(**d["metrics"]),
                [FragmentMetadata._from_dict(f) for f in d["original_fragments"]],
                [FragmentMetadata._from_dict(f) for f in d["new_fragments"]],
                None if addresses is None else np.frombuffer(base64.b64decode(addresses), dtype="<u8").astype(np.uint64),
            )
        except (ValueError, KeyError, TypeError) as e:
            if isinstance(e, InvalidArgumentError):
                raise
            raise InvalidArgumentError(f"not the JSON of a RewriteResult: {e}") from None

    def __repr__(self) -> str:
        return (f"RewriteResult(read_version={self.read_version}, new_fragments={_fragments_repr(self.new_fragments)}, "
                f"old_fragments={_fragments_repr(self.original_fragments)})")


class CompactionTask(_JsonForm):
    """One group of fragments to rewrite (pylance's ``lance.optimize.CompactionTask``):
    :meth:`execute` writes them anew, on any machine, and returns a :class:`RewriteResult`.
    Picklable and JSON-able."""

    def __init__(self, read_version: int, fragments: List[FragmentMetadata], options: Dict[str, Any]) -> None:
        self.read_version = int(read_version)
        self.fragments = list(fragments)
        self._options = options

    def execute(self, dataset: LanceDataset) -> RewriteResult:
        """Rewrites the task's fragments as they are in version `read_version` of `dataset`
        (another version of it is fine: that one is read); nothing is committed."""
        return _execute(self, dataset)

    def json(self) -> str:
        return json.dumps({
            "task": {"fragments": [f._manifest_json() for f in self.fragments]},
            "read_version": self.read_version,
            "options": self._options,
        })

    @staticmethod
    def from_json(text: str) -> CompactionTask:
        try:
            d = json.loads(text)
            return CompactionTask(
                d["read_version"], [FragmentMetadata._from_dict(f) for f in d["task"]["fragments"]], d["options"]
            )
        except (ValueError, KeyError, TypeError) as e:
            raise InvalidArgumentError(f"not the JSON of a CompactionTask: {e}") from None

    def __repr__(self) -> str:
        return f"CompactionTask(read_version={self.read_version}, fragments={_fragments_repr(self.fragments)})"


def _execute(task: CompactionTask, dataset: LanceDataset, file_tag: Optional[str] = None) -> RewriteResult:
    """:meth:`CompactionTask.execute`; `file_tag` goes into the new data files' names (so
    that a distributed job finds the files of its failed attempts: lancepy.spark)."""
    ds = dataset if dataset.version == task.read_version else dataset.checkout_version(task.read_version)
    live = {f.id: f for f in ds._view.loaded.fragments}
    missing = [f.id for f in task.fragments if f.id not in live]
    if missing:
        raise InvalidArgumentError(f"fragments {missing} are not in version {task.read_version} of {ds.uri}")
    return _rewrite(ds, [live[f.id] for f in task.fragments], task._options, file_tag)


class CompactionPlan(_JsonForm):
    """The tasks of a compaction (pylance's ``lance.optimize.CompactionPlan``), all made
    from version `read_version`. Picklable and JSON-able."""

    def __init__(self, read_version: int, tasks: List[CompactionTask], options: Dict[str, Any]) -> None:
        self.read_version = int(read_version)
        self.tasks = list(tasks)
        self._options = options

    def num_tasks(self) -> int:
        return len(self.tasks)

    def json(self) -> str:
        return json.dumps({
            "tasks": [{"fragments": [f._manifest_json() for f in t.fragments]} for t in self.tasks],
            "read_version": self.read_version,
            "options": self._options,
        })

    @staticmethod
    def from_json(text: str) -> CompactionPlan:
        try:
            d = json.loads(text)
            tasks = [
                CompactionTask(d["read_version"], [FragmentMetadata._from_dict(f) for f in t["fragments"]], d["options"])
                for t in d["tasks"]
            ]
            return CompactionPlan(d["read_version"], tasks, d["options"])
        except (ValueError, KeyError, TypeError) as e:
            raise InvalidArgumentError(f"not the JSON of a CompactionPlan: {e}") from None

    def __repr__(self) -> str:
        return f"CompactionPlan(read_version={self.read_version}, tasks=<{len(self.tasks)} compaction tasks>)"


class Compaction:
    """Compaction in steps (pylance's ``lance.optimize.Compaction``): :meth:`plan` picks
    the groups of fragments to rewrite, each :class:`CompactionTask` is executed wherever
    (``task.execute(dataset)``), and :meth:`commit` commits their results together.
    :meth:`execute` does all three (``ds.optimize.compact_files``)."""

    @staticmethod
    def execute(dataset: LanceDataset, options: Optional[CompactionOptions]) -> CompactionMetrics:
        """Plans, rewrites and commits (see :meth:`DatasetOptimizer.compact_files` for the
        options)."""
        plan = Compaction.plan(dataset, options)
        results: List[RewriteResult] = []
        try:
            for task in plan.tasks:
                results.append(task.execute(dataset))
        except BaseException:
            dataset._view.store.delete([p for r in results for p in _written(r)])
            raise
        return _commit_rewrites(dataset, results)

    @staticmethod
    def plan(dataset: LanceDataset, options: Optional[CompactionOptions]) -> CompactionPlan:
        """The tasks of a compaction of `dataset`'s version with `options`."""
        o = _resolve_options(dataset, options)
        version = dataset.version
        tasks = [
            CompactionTask(version, [FragmentMetadata._from_dict(f._manifest_json()) for f in g], o)
            for g in _plan_groups(dataset, o)
        ]
        return CompactionPlan(version, tasks, o)

    @staticmethod
    def commit(
        dataset: LanceDataset, rewrites: List[RewriteResult], options: Optional[CompactionOptions] = None
    ) -> CompactionMetrics:
        """Commits the results of tasks of one plan (all of them or some) to `dataset`,
        which moves to the new version; returns their metrics summed. `options` are checked
        as :meth:`plan` checks them (the rewrites were made with the plan's)."""
        _resolve_options(dataset, options)
        return _commit_rewrites(dataset, list(rewrites))
