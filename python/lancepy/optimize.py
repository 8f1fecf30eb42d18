"""Optimization: :class:`DatasetOptimizer` (``ds.optimize``): compaction of small fragments
(planning, rewriting, index remapping) and index optimization, with their metrics."""

from __future__ import annotations

import itertools
import json
import time
import uuid as _uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional

import pyarrow as pa
import pyarrow.compute as pc

from lancepy import _lancepy
from lancepy import blob as _blob
from lancepy._core.args import _refuse
from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy._table import commit as _commit
from lancepy._table.commit import AutoCleanupConfig, _auto_cleanup_config
from lancepy.exceptions import InternalError, InvalidArgumentError, NotSupportedError, UnsupportedError
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


def _capped_groups(groups: List[List[Dict[str, Any]]], rows: Dict[int, Any], max_fragments: Optional[int],
                   max_rows: Optional[int], max_bytes: Optional[int]) -> List[List[Dict[str, Any]]]:
    """The first groups (in fragment order) that stay within the caps on source fragments,
    live rows and data file bytes of one compaction run (pylance's rule: a group is taken
    until the next would pass a cap)."""
    out: List[List[Dict[str, Any]]] = []
    used = [0, 0, 0]
    for g in groups:
        cost = [
            len(g),
            sum(rows[f.get("id", 0)][1] for f in g),
            sum(int(d.get("file_size_bytes", 0) or 0) for f in g for d in f.get("files", [])),
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

    def __init__(self, ds: "LanceDataset", fragment_ids: List[int], stable: bool, with_addresses: bool,
                 row_ids: List[int], addresses: List[Any], batch_rows: int = 65536, blob_bytes: int = 64 << 20) -> None:
        manifest = ds._loaded.manifest
        self._ds, self._ids, self._stable = ds, fragment_ids, stable
        self._blobs = [n for n in ds.schema.names if _blob.blob_field_kind(manifest, n) is not None]
        self._with_addresses = with_addresses or bool(self._blobs)
        self._keep_addresses = with_addresses
        self._row_ids, self._addresses = row_ids, addresses
        self._batch_rows, self._blob_bytes = batch_rows, blob_bytes

    def _batches(self) -> Iterator[pa.RecordBatch]:
        s = self._ds._snapshot
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
        s = self._ds._snapshot
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
            empty = pa.table(self._ds._snapshot.scan(None, fragment_ids=self._ids, limit=0, batch_rows=1))
            for name in self._blobs:
                i = empty.schema.get_field_index(name)
                empty = empty.set_column(i, pa.field(name, pa.large_binary()), pa.array([], pa.large_binary()))
            return empty.to_reader()
        return pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], batches))


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
        index; otherwise (the default, as pylance's) the index's segments and the new rows are
        merged into one segment. ``index_names`` limits the work to those indices (default:
        all). ``retrain=True`` rebuilds each index from the current data with its type,
        metric, partition and sub-vector counts. IVF_FLAT, IVF_PQ and BTREE indices (a BTREE
        segment's pages are rebuilt from its rows and the new ones; ``retrain`` rebuilds it
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
                raise IndexNotFoundError(f"index {n!r} does not exist in version {ds.version} of {ds._uri}")
            kind = ds._index_type(by_name[n][0])
            if kind not in ("IVF_FLAT", "IVF_PQ", "BTree"):
                raise NotSupportedError(f"optimize_indices: lancepy cannot add rows to the {kind} index {n!r} (index_names= picks others)")
        paths = {v: k for k, v in ds._field_ids_by_path().items()}
        raw = {_commit._uuid_str(e["uuid"]): e for e in json.loads(_lancepy.index_section_to_json(ds._loaded.index_section))["indices"]} if entries else {}
        live = ds.get_fragments()
        new_entries: List[Dict[str, Any]] = []
        removed: List[Dict[str, Any]] = []
        written: List[str] = []
        try:
            for n in names:
                segs = by_name[n]
                column = paths[segs[0]["fields"][0]]
                covered = set().union(*(set(e["fragment_ids"]) for e in segs))
                fresh = [f for f in live if f.fragment_id not in covered]
                btree = ds._index_type(segs[0]) == "BTree"
                if retrain and btree:
                    fresh, covered = live, set()  # (a BTREE index has no model: rebuilt from all rows)
                elif retrain:
                    from lancepy._ops import ivf as _ivf

                    idx = _ivf.load_index(ds._uri, segs[0]["uuid"], ds._storage_options)
                    dim = idx.centroids.shape[1]
                    params = _ivf_build.IvfParams(
                        kind=idx.kind, metric=idx.metric, num_partitions=idx.num_partitions,
                        num_sub_vectors=idx.num_sub_vectors or None, sample_rate=_ivf_build.DEFAULT_SAMPLE_RATE,
                        max_iters=_ivf_build.DEFAULT_MAX_ITERS, ivf_centroids=None, pq_codebook=None, filter_nan=True, seed=None,
                    )
                    entry = _ivf_build.build(ds, column, segs[0]["fields"][0], dim, params, None, None, n, None, ds._storage_options)
                    written += [f"_indices/{_commit._uuid_str(entry['uuid'])}/{f['path']}" for f in entry["files"]]
                    new_entries.append(entry)
                    removed += [raw[e["uuid"]] for e in segs]
                    continue
                if not fresh:
                    continue
                merge = num_indices_to_merge != 0 and not (retrain and btree)
                if btree:
                    if merge and not all(_btree.holds_addresses(ds, e) for e in segs):
                        raise NotSupportedError(
                            f"optimize_indices: the BTREE index {n!r} holds stable row ids (an older pylance's); "
                            "retrain=True rebuilds it"
                        )
                    uid, files = _btree.extend(ds, column, segs, [f.fragment_id for f in fresh], merge)
                else:
                    uid, files = _ivf_build.extend(ds, column, segs, fresh, merge)
                written += [f"_indices/{uid}/{f['path']}" for f in files]
                base = dict(raw[segs[0]["uuid"]])
                ids = sorted(({f.fragment_id for f in live} & covered if merge else set()) | {f.fragment_id for f in fresh})
                if btree:
                    base["index_version"] = _btree.index_version(ds)
                base.update({
                    "uuid": {"uuid": list(_uuid.UUID(uid).bytes)},
                    "fragment_bitmap": list(_lancepy.fragment_bitmap(ids)),
                    "dataset_version": ds.version,
                    "files": files,
                    "created_at": int(time.time() * 1000),
                })
                new_entries.append(base)
                if merge or retrain:
                    removed += [raw[e["uuid"]] for e in segs]
        except BaseException:
            ds._store.delete(written)
            raise
        if new_entries:
            ds._commit("CreateIndex", {"new_indices": new_entries, "removed_indices": removed}, written)

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
        fragment is deleted. Commits a ``Rewrite``; row addresses change, data does not.

        As in pylance: `max_bytes_per_file` caps the new files' size; `excluded_fragment_ids`
        stay as they are and split runs; `max_source_fragments` / `max_source_rows` (live) /
        `max_source_bytes` (data files) cap one run: groups are taken in fragment order
        until the next would pass a cap; `data_storage_version` sets the new files' version
        (of the same family: 2.x). `max_rows_per_group`, `num_threads`, `batch_size` and
        `binary_copy_read_batch_bytes` are tuning knobs and ignored; `compaction_mode`
        ``"reencode"`` is what lancepy does. Deferred index remapping and binary copies are
        not supported.
        """
        _refuse(
            defer_index_remap=defer_index_remap or None,
            compaction_mode=None if compaction_mode in (None, "reencode") else compaction_mode,
        )
        for name, cap in (("max_bytes_per_file", max_bytes_per_file), ("max_source_fragments", max_source_fragments),
                          ("max_source_rows", max_source_rows), ("max_source_bytes", max_source_bytes)):
            if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap <= 0):
                raise InvalidArgumentError(f"{name} must be a positive int, got {cap!r}")
        excluded = {int(i) for i in excluded_fragment_ids or []}
        out_version = self._ds.data_storage_version
        if data_storage_version is not None:
            out_version = normalize_storage_version(data_storage_version)
            blobs = [n for n in self._ds.schema.names if _blob.blob_field_kind(self._ds._loaded.manifest, n)]
            def v2_2(v: str) -> bool:
                return tuple(int(x) for x in v.split(".")[:2]) >= (2, 2)

            if blobs and v2_2(out_version) != v2_2(self._ds.data_storage_version):
                raise UnsupportedError(
                    f"compacting blob column(s) {blobs} of {self._ds.data_storage_version} files into {out_version} files "
                    "(blob columns are stored differently before and from 2.2)"
                )
        if target_rows_per_fragment is None:
            target_rows_per_fragment = 1024 * 1024
        if target_rows_per_fragment <= 0:
            raise InvalidArgumentError(f"target_rows_per_fragment must be positive, got {target_rows_per_fragment}")
        if materialize_deletions is None:
            materialize_deletions = True
        if materialize_deletions_threshold is None:
            materialize_deletions_threshold = 0.1
        ds = self._ds
        rows = ds._snapshot_rows()
        frags = ds._loaded.manifest.get("fragments", [])

        def candidate(f: Dict[str, Any]) -> bool:
            phys, live = rows[f.get("id", 0)]
            if phys < target_rows_per_fragment:
                return True
            return materialize_deletions and phys > 0 and (phys - live) / phys > materialize_deletions_threshold

        groups: List[List[Dict[str, Any]]] = []
        run: List[Dict[str, Any]] = []
        for f in frags + [None]:  # type: ignore[list-item]
            if f is not None and f.get("id", 0) not in excluded and candidate(f):
                run.append(f)
                continue
            # A run is worth rewriting if it merges fragments or drops deleted rows.
            if len(run) > 1 or (run and rows[run[0].get("id", 0)][0] != rows[run[0].get("id", 0)][1] and materialize_deletions):
                # Split long runs into groups of about the target size.
                group: List[Dict[str, Any]] = []
                size = 0
                for g in run:
                    live = rows[g.get("id", 0)][1]
                    if group and size + live > target_rows_per_fragment:
                        groups.append(group)
                        group, size = [], 0
                    group.append(g)
                    size += live
                if group:
                    groups.append(group)
            run = []
        groups = [g for g in groups if len(g) > 1 or rows[g[0].get("id", 0)][0] != rows[g[0].get("id", 0)][1]]
        groups = _capped_groups(groups, rows, max_source_fragments, max_source_rows, max_source_bytes)
        metrics = CompactionMetrics()
        if not groups:
            return metrics
        from lancepy._ops import btree as _btree

        stable = bool(ds._loaded.manifest.get("reader_feature_flags", 0) & _commit.FLAG_STABLE_ROW_IDS)
        # IVF and BTREE indices covering compacted fragments are remapped to the new row addresses
        # (with stable row ids IVF indices hold row ids, which do not move: they just stop
        # covering the rewritten fragments; BTREE ones hold addresses, as pylance 14's).
        compacted = {f.get("id", 0) for g in groups for f in g}
        remap = [
            e for e in ds._index_entries()
            if set(e["fragment_ids"]) & compacted
            and (_btree.holds_addresses(ds, e) if ds._index_type(e) == "BTree" else ds._index_type(e) in ("IVF_FLAT", "IVF_PQ") and not stable)
        ]
        old_addresses: List[Any] = []
        out_groups, written = [], []
        read_version = ds.version
        try:
            for g in groups:
                ids = [f.get("id", 0) for f in g]
                row_ids: List[int] = []
                addresses: List[Any] = []
                data = _RewriteSource(ds, ids, stable, bool(remap), row_ids, addresses).reader()
                made = _write(ds._uri, data, ds._loaded.manifest.get("fields", []),
                              ds._loaded.manifest.get("schema_metadata", {}), target_rows_per_fragment, out_version,
                              max_bytes_per_file or DEFAULT_MAX_BYTES_PER_FILE, storage_options=ds._storage_options)
                if remap:
                    old_addresses.append(pa.concat_arrays(addresses).to_numpy() if addresses else
                                         pa.array([], pa.uint64()).to_numpy())
                new = [m._manifest_json() for m in made]
                if stable:
                    start = 0
                    for nf in new:
                        n = nf["physical_rows"]
                        nf["row_id_sequence"] = {"InlineRowIds": list(_lancepy.encode_row_ids(row_ids[start : start + n]))}
                        start += n
                written += [f"data/{d['path']}" for nf in new for d in nf["files"]]
                out_groups.append({"old_fragments": g, "new_fragments": new})
                metrics.fragments_removed += len(g)
                metrics.fragments_added += len(new)
                metrics.files_removed += sum(len(f.get("files", [])) for f in g)
                metrics.files_added += sum(len(nf["files"]) for nf in new)
            body = {
                "old_fragments": [f for g in out_groups for f in g["old_fragments"]],
                "new_fragments": [f for g in out_groups for f in g["new_fragments"]],
                "groups": out_groups,
            }
            if remap:
                body["rewritten_indices"] = self._remap_indices(remap, out_groups, old_addresses, written)
        except BaseException:
            ds._store.delete(written)
            raise
        ds._commit("Rewrite", body, written, read_version=read_version)
        return metrics

    def _remap_indices(
        self, entries: List[Dict[str, Any]], groups: List[Dict[str, Any]], old_addresses: List[Any], written: List[str]
    ) -> List[Dict[str, Any]]:
        """Reserves fragment ids for the new fragments (a ``ReserveFragments`` commit, as
        pylance does), assigns them, and writes a remapped copy of each index in `entries`;
        returns the Rewrite's ``rewritten_indices``. Index files written are added to
        `written` (deleted if the compaction fails)."""
        import numpy as np

        from lancepy._ops import btree as _btree
        from lancepy._ops import ivf_build as _ivf_build

        ds = self._ds
        n_new = sum(len(g["new_fragments"]) for g in groups)
        details = {_commit._uuid_str(e["uuid"]): e for e in json.loads(_lancepy.index_section_to_json(ds._loaded.index_section))["indices"]}
        ds._commit("ReserveFragments", {"num_fragments": n_new})
        next_id = int(ds._loaded.manifest["max_fragment_id"]) - n_new + 1
        new_addresses = []
        for g in groups:
            for nf in g["new_fragments"]:
                nf["id"] = next_id
                new_addresses.append((np.uint64(next_id) << np.uint64(32)) + np.arange(nf["physical_rows"], dtype=np.uint64))
                next_id += 1
        old = np.concatenate(old_addresses).astype(np.uint64)
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
            remap_segment = _btree.remap if ds._index_type(e) == "BTree" else _ivf_build.remap
            uid, files = remap_segment(ds._uri, ds._storage_options, e, old, new, compacted, dropped)
            written += [f"_indices/{uid}/{f['path']}" for f in files]
            raw = details[e["uuid"]]
            out.append({
                "old_id": raw["uuid"],
                "new_id": {"uuid": list(_uuid.UUID(uid).bytes)},
                "new_index_details": raw.get("index_details"),
                "new_index_version": raw.get("index_version") or 0,
            })
        return out
